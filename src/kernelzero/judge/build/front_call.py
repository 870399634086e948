"""Reading a candidate's `load_inline` call without running it, and the nvcc command its build would run: what the
front check (front.py) compiles, and whether it may (`plan`)."""

from __future__ import annotations

import ast
import inspect
import re
import shlex
import tempfile
from pathlib import Path

from kernelzero.judge.build.split import split

# Flags the check passes on (they change no file but the output, load no code); any other flag: `skipped`.
_SAFE_FLAG = re.compile(r"-O[0-3s]?|-[DU]\w+(=[\w.]*)?|--?use_fast_math|-lineinfo|-std=c\+\+\d\w|-g|"
                        r"--expt-relaxed-constexpr|--expt-extended-lambda|-Xptxas=?-O[0-3]|-w|-Wall")  # fmt: skip
# Module-level statements allowed before the call: they cannot fail or change what load_inline is.
_SAFE_IMPORTS = {"torch", "torch.nn", "torch.nn.functional", "math", "torch.utils.cpp_extension"}
_DIRECTIVE = re.compile(r"^\s*#\s*(?!(include|define|undef|pragma)\b)", re.M)
_SHADOWS = {"load_inline", "torch"}  # names a statement before the call must not rebind


def read_call(source: str) -> dict | None:
    """The keyword arguments of the candidate's first `load_inline` call, read without running anything; None unless
    that call is a top-level statement whose arguments are literals or names bound once to literals, and every
    statement before it is a safe import, a literal assignment or an undecorated function definition (so importing
    the module reaches the call and makes it exactly as read)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    stores: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            stores[node.id] = stores.get(node.id, 0) + 1
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            return None
    consts: dict[str, object] = {}
    imported: set[str] = set()
    for stmt in tree.body:
        value = stmt.value if isinstance(stmt, (ast.Assign, ast.Expr)) else None
        if isinstance(value, ast.Call) and _is_load_inline(value.func, imported):
            return _arguments(value, consts, stores)
        bound = {a.asname or a.name for a in getattr(stmt, "names", [])} if isinstance(stmt, ast.ImportFrom) else set()
        bound |= {a.asname for a in stmt.names if a.asname} if isinstance(stmt, ast.Import) else set()
        bound |= {stmt.name} if isinstance(stmt, ast.FunctionDef) else set()
        bound |= {t.id for t in getattr(stmt, "targets", []) if isinstance(t, ast.Name)}
        if bound & _SHADOWS and not (isinstance(stmt, ast.ImportFrom) and stmt.module == "torch.utils.cpp_extension"):
            return None
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            try:
                consts[stmt.targets[0].id] = ast.literal_eval(stmt.value)
            except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
                return None
        elif isinstance(stmt, ast.Import) and all(a.name in _SAFE_IMPORTS for a in stmt.names):
            continue
        elif isinstance(stmt, ast.ImportFrom) and stmt.module in _SAFE_IMPORTS and stmt.level == 0:
            for a in stmt.names:  # only load_inline itself may be taken from cpp_extension, under its own name
                if stmt.module == "torch.utils.cpp_extension" and (a.name, a.asname) != ("load_inline", None):
                    return None
                imported.add(a.asname or a.name)
        elif isinstance(stmt, ast.FunctionDef) and not stmt.decorator_list and not stmt.args.defaults:
            continue
        elif not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)):  # a docstring
            return None
    return None


def _is_load_inline(func: ast.expr, imported: set[str]) -> bool:
    if isinstance(func, ast.Name):
        return func.id == "load_inline" and "load_inline" in imported
    return ast.unparse(func) == "torch.utils.cpp_extension.load_inline"


def _arguments(call: ast.Call, consts: dict, stores: dict[str, int]) -> dict | None:
    import torch.utils.cpp_extension as cpp

    def value(node: ast.expr) -> object:
        if isinstance(node, ast.Name):
            if stores.get(node.id) != 1 or node.id not in consts:
                raise ValueError(node.id)
            return consts[node.id]
        if isinstance(node, (ast.List, ast.Tuple)):
            return [value(e) for e in node.elts]
        return ast.literal_eval(node)

    try:
        args = [value(a) for a in call.args]
        kwargs = {k.arg: value(k.value) for k in call.keywords if k.arg is not None}
        if len(kwargs) != len(call.keywords) or any(isinstance(a, ast.Starred) for a in call.args):
            return None
        bound = inspect.signature(cpp.load_inline).bind(*args, **kwargs)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        return None
    bound.apply_defaults()
    return dict(bound.arguments)


def _as_list(sources: object) -> list[str] | None:
    items = [sources] if isinstance(sources, str) else list(sources or []) if isinstance(sources, list) else None
    return items if items is not None and all(isinstance(s, str) for s in items) else None


def nvcc_command(extra_cflags: list[str], extra_cuda_cflags: list[str], arch: str) -> tuple[str, list[str]]:
    """(nvcc, its flags) as torch's ninja file names them for a load_inline `.cu` built for `arch` (the farm's
    TORCH_CUDA_ARCH_LIST: a single `-gencode` for it, as torch writes it), without `-DTORCH_EXTENSION_NAME`."""
    import torch.utils.cpp_extension as cpp

    sm = arch.replace(".", "")
    writer = cpp._write_ninja_file_to_build_library
    with tempfile.TemporaryDirectory() as d:
        kwargs = {"path": f"{d}/build.ninja", "name": "kz_front", "sources": [f"{d}/cuda.cu"],
                  "extra_cflags": extra_cflags, "extra_sycl_cflags": [], "extra_ldflags": [],
                  "extra_cuda_cflags": [*extra_cuda_cflags, f"-gencode=arch=compute_{sm},code=sm_{sm}"],
                  "extra_include_paths": [], "with_cuda": True, "with_sycl": False, "is_standalone": False}  # fmt: skip
        params = inspect.signature(writer).parameters
        writer(**{k: v for k, v in kwargs.items() if k in params})
        lines = Path(d, "build.ninja").read_text().splitlines()

    def var(name: str) -> list[str]:
        found = next((line for line in lines if line.startswith(f"{name} = ")), f"{name} = ")
        return shlex.split(found[len(name) + 3 :])

    flags = [f for f in var("cuda_cflags") + var("cuda_post_cflags") if not f.startswith("-DTORCH_EXTENSION_NAME=")]
    return " ".join(var("nvcc")), flags


def plan(a: dict) -> tuple[str, str, list[str]] | str:
    """(the split's device TU, the `.cu` the plain build writes, extra nvcc flags) for load_inline arguments `a`, or
    why the check does not apply."""
    cpp_sources, cuda_sources = _as_list(a["cpp_sources"]), _as_list(a["cuda_sources"])
    if not cuda_sources or cpp_sources is None:
        return "no cuda_sources"
    if a["with_cuda"] is False:
        return "cuda_sources built without CUDA"
    if a["no_implicit_headers"] or a["use_pch"] or a["sycl_sources"] or a["extra_include_paths"]:
        return "headers or include paths of its own"
    flags = [*(a["extra_cflags"] or []), *(a["extra_cuda_cflags"] or [])]
    if not all(isinstance(f, str) and _SAFE_FLAG.fullmatch(f) for f in flags):
        return "a flag the check does not pass on"
    if any("__CUDA_ARCH__" in s for s in cuda_sources):
        return "code that differs between nvcc's passes"
    if any(_DIRECTIVE.search(s) for s in cuda_sources):  # #if, #line...: lines that differ between the two TUs
        return "a preprocessor directive other than include, define, undef or pragma"
    parts = split(cpp_sources, cuda_sources)
    if parts is None:
        return "the split does not apply"
    plain = "\n".join(["#include <torch/types.h>", "#include <cuda.h>", "#include <cuda_runtime.h>", *cuda_sources])
    return parts[1][0], plain, list(a["extra_cuda_cflags"] or [])
