"""`parse`: `ast.parse`, one thread at a time.

CPython 3.11's AST builder keeps its recursion depth in state shared by the interpreter's threads. When a thread
switch happens inside a parse (a garbage-collection finalizer running Python code is enough), a parse in another
thread corrupts it and fails with `SystemError: AST constructor recursion depth mismatch`. The judge's pools, the
validator and the trainers parse sources from many threads; every parse in the package goes through this lock.
"""

from __future__ import annotations

import ast
import threading

_LOCK = threading.Lock()


def parse(source: str | bytes, filename: str = "<unknown>") -> ast.Module:
    """`ast.parse`; a source nested deeper than the parser goes (a sum of 3,000 terms) raises SyntaxError like any
    other unparsable source, where CPython raises RecursionError, which the judge let out of `judge` itself."""
    with _LOCK:
        try:
            return ast.parse(source, filename=filename)
        except RecursionError:
            raise SyntaxError("too deeply nested for the parser", (filename, 1, 1, None)) from None
