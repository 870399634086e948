"""The Triton front check: errors Triton's code generator certainly raises, read from the candidate's source.

A Triton candidate's compile error otherwise shows only at its kernel's first launch: after the task's reference
(10-20 s cold on a GPU), a worker's start and the candidate's import. Early RL batches are full of them (a misspelt
`tl` function, an undefined name, a keyword `tl.load` does not take). This check answers those from the syntax tree
in milliseconds, in the judge's process: nothing of the candidate runs, and only the installed `triton.language`
(the worker's own) is looked at.

Contract: an answer only where the real launch would certainly fail, else None (the candidate is judged as before).
Certain means all of:
- nothing in the module could bind names unseen (`import *`, `globals`, `setattr`, `exec`, `eval`, `vars`,
  `builtins`);
- `ModelNew` is a plain `nn.Module` (no `__call__` of its own) and its one `forward` is never rebound;
- the kernel (a module-level `@triton.jit` function, defined once, its name never rebound) is launched
  (`kernel[grid](...)`) in a statement that every call of `ModelNew.forward` reaches: one of forward's own top-level
  statements, or of a module function such a statement calls, with no `return` or `raise` before it in that body and
  no conditional expression, `and`/`or` or lambda between the statement and the launch (a statement before it that
  raises fails the candidate anyway, as a runtime error where this says compile error);
- the faulty expression sits in a statement Triton's code generator always visits: the kernel's top-level
  statements before any `return`, and the bodies of its `for` loops over `range`/`tl.range` (generated whatever
  their trip count; `tl.static_range` and `if`, whose branches may be pruned as constants, are not looked into);
- the fault is one of: `tl.X` where `triton.language` has no `X`; a name bound nowhere in the module (no assignment,
  import, definition or parameter of that name anywhere, no builtin of that name); a keyword argument that a plain
  `triton.language` function's signature does not have (one taking `**kwargs`, a JIT helper or a type is skipped).
"""

from __future__ import annotations

import ast
import builtins
import inspect
from collections import Counter

DYNAMIC = {"globals", "setattr", "exec", "eval", "vars", "builtins", "__builtins__", "__dict__", "locals"}


def front_verdict(tree: ast.Module, backend: str) -> tuple[str, str, str] | None:
    """(status, guard, feedback) for a Triton candidate whose launch certainly fails to compile, else None."""
    try:
        why = triton_front_check(tree) if backend == "triton" else None
    except Exception:  # a shortcut only: whatever it cannot read, the worker judges as before
        return None
    return None if why is None else ("compile_error", "compile", why)


def triton_front_check(tree: ast.Module) -> str | None:
    """The compile error a launch of the candidate's kernel certainly raises (one line), or None."""
    try:
        import triton.language as language
    except ImportError:  # no Triton here: the worker reports what it finds
        return None
    bindings, dynamic = _bindings(tree)
    tl = _imported_once(tree, bindings, "language")
    if dynamic or not tl:  # `globals()["tl"] = ...` rebinds an alias as surely as a name the kernel reads
        return None
    names = set(bindings)  # the kernel's parameters and locals among them
    jit = _imported_once(tree, bindings, "jit")
    kernels = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef) and _is_jit(f, jit)}
    for name in _launched(tree, bindings, set(kernels)):
        for stmt in _visited(kernels[name].body):
            for node in _evaluated(stmt):
                why = _fault(node, tl, language, names)
                if why is not None:
                    return f"compile failed (front check, nothing run): {why} in `{name}` (line {node.lineno})"
    return None


def _fault(node: ast.AST, tl: set[str], language, names: set[str]) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in tl:
        if not hasattr(language, node.attr):
            return f"AttributeError: module 'triton.language' has no attribute '{node.attr}'"
    elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
        if node.id not in names and not hasattr(builtins, node.id):
            return f"NameError: name '{node.id}' is not defined"
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name):
        if node.func.value.id in tl and node.keywords:
            params = _parameters(getattr(language, node.func.attr, None))
            for kw in node.keywords:
                if params is not None and kw.arg is not None and kw.arg not in params:
                    return f"TypeError: {node.func.attr}() got an unexpected keyword argument '{kw.arg}'"
    return None


def _parameters(fn) -> set[str] | None:
    """A plain `triton.language` function's parameter names; None where any keyword could be accepted."""
    if not inspect.isfunction(fn):  # JIT helpers (tl.sum, tl.cdiv), types (tl.range), dtypes
        return None
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL) for p in params):
        return None
    return {p.name for p in params}


def _bindings(tree: ast.Module) -> tuple[Counter, bool]:
    """How many times the module binds each name, anywhere, in any scope (assignments, imports, definitions,
    parameters, `global`, `except ... as`, `match` captures); and whether something could bind names unseen."""
    count: Counter = Counter()
    dynamic = False
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            dynamic = True
        if isinstance(node, (ast.Name, ast.Attribute)) and (getattr(node, "id", None) or node.attr) in DYNAMIC:
            dynamic = True
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            count[node.id] += 1
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            count.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            count[node.name] += 1
        elif isinstance(node, ast.arg):
            count[node.arg] += 1
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            count.update(node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            count[node.name] += 1
        elif isinstance(node, ast.MatchAs | ast.MatchStar) and node.name:
            count[node.name] += 1
        elif isinstance(node, ast.MatchMapping) and node.rest:
            count[node.rest] += 1
    return count, dynamic


def _imported_once(tree: ast.Module, bindings: Counter, what: str) -> set[str]:
    """Names bound to `triton.<what>` (`import triton.language as tl`, `from triton import jit`) by that import
    alone, never bound again. (`triton.jit` itself is recognised as written: `_is_jit`.)"""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.asname for a in node.names if a.name == f"triton.{what}" and a.asname}
        elif isinstance(node, ast.ImportFrom) and node.module == "triton":
            names |= {a.asname or a.name for a in node.names if a.name == what}
    return {n for n in names if bindings[n] == 1}


def _is_jit(fn: ast.FunctionDef, jit: set[str]) -> bool:
    for d in fn.decorator_list:
        d = d.func if isinstance(d, ast.Call) else d
        if ast.unparse(d) == "triton.jit" or (isinstance(d, ast.Name) and d.id in jit):
            return True
    return False


def _launched(tree: ast.Module, bindings: Counter, kernels: set[str]) -> list[str]:
    """The kernels every forward certainly launches, in order (see the module's contract)."""
    kernels = {k for k in kernels if bindings[k] == 1}  # its definition, and nothing else of that name
    helpers = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef) and f.name not in kernels
               and bindings[f.name] == 1}  # fmt: skip
    model = [c for c in tree.body if isinstance(c, ast.ClassDef) and c.name == "ModelNew"]
    if len(model) != 1 or not _plain_module(model[0]) or any(
            isinstance(n, ast.Attribute) and n.attr in ("forward", "__call__") and not isinstance(n.ctx, ast.Load)
            for n in ast.walk(tree)):  # fmt: skip
        return []  # forward may not be what a call of the model runs
    forward = [f for f in model[0].body if isinstance(f, ast.FunctionDef) and f.name == "forward"]
    if len(forward) != 1:
        return []
    out: list[str] = []
    for call in _reached_calls(forward[0].body):
        target = call.func.value if isinstance(call.func, ast.Subscript) else call.func
        if not isinstance(target, ast.Name):
            continue
        if isinstance(call.func, ast.Subscript) and target.id in kernels:
            out.append(target.id)
        elif target.id in helpers:  # one level down: a module function forward calls
            out += [c.func.value.id for c in _reached_calls(helpers[target.id].body)
                    if isinstance(c.func, ast.Subscript) and isinstance(c.func.value, ast.Name)
                    and c.func.value.id in kernels]  # fmt: skip
    return list(dict.fromkeys(out))


def _plain_module(cls: ast.ClassDef) -> bool:
    """`class ModelNew(nn.Module)` (or `torch.nn.Module`), with no `__call__` or attribute hooks of its own: calling
    it runs its `forward`."""
    bases = [ast.unparse(b) for b in cls.bases]
    hooks = {"__call__", "_call_impl", "__getattr__", "__getattribute__", "__init_subclass__", "__new__"}
    own = {n.name for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    own |= {t.id for n in cls.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    return bases in (["nn.Module"], ["torch.nn.Module"]) and not cls.keywords and not cls.decorator_list and \
        not own & hooks


def _reached_calls(body: list[ast.stmt]) -> list[ast.Call]:
    """Calls in the top-level statements of `body` that every run of it evaluates (up to its first exit)."""
    calls: list[ast.Call] = []
    for stmt in body:
        if any(isinstance(n, (ast.Return, ast.Raise)) for n in ast.walk(stmt)) and not isinstance(stmt, ast.Return):
            break  # an exit somewhere inside: what follows may not run
        if isinstance(stmt, (ast.Expr, ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Return)):
            calls += [n for n in _evaluated(stmt) if isinstance(n, ast.Call)]
        if isinstance(stmt, ast.Return):
            break
    return calls


def _visited(body: list[ast.stmt]) -> list[ast.stmt]:
    """The statements of a kernel body Triton's code generator always visits (see the module's contract)."""
    out: list[ast.stmt] = []
    for stmt in body:
        if isinstance(stmt, ast.For):
            it = stmt.iter
            plain = isinstance(it, ast.Call) and (
                (isinstance(it.func, ast.Name) and it.func.id == "range")
                or (isinstance(it.func, ast.Attribute) and it.func.attr == "range"))  # fmt: skip
            out.append(ast.Expr(value=stmt.iter, lineno=stmt.lineno, col_offset=stmt.col_offset))
            if plain:
                out += _visited(stmt.body)
        elif isinstance(stmt, (ast.Expr, ast.Assign, ast.AnnAssign, ast.AugAssign)):
            out.append(stmt)
        if isinstance(stmt, (ast.Return, ast.If, ast.While, ast.With, ast.Try, ast.Break, ast.Continue)):
            if isinstance(stmt, ast.Return) or any(isinstance(n, ast.Return) for n in ast.walk(stmt)):
                break
    return out


def _evaluated(node: ast.AST) -> list[ast.AST]:
    """The nodes of `node` that are always evaluated with it: not past a conditional expression's test, an `and` /
    `or`'s first operand, into a lambda or a comprehension. Iterative: `1+1+...+1` parses into a tree deeper than
    Python's recursion limit."""
    out, stack = [], [node]
    while stack:
        n = stack.pop()
        out.append(n)
        if isinstance(n, ast.IfExp):
            stack.append(n.test)
        elif isinstance(n, ast.BoolOp):
            stack.append(n.values[0])
        elif not isinstance(n, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            stack.extend(reversed(list(ast.iter_child_nodes(n))))
    return out
