"""The package's shape, read with `ast` (nothing is imported): no import cycle, no hidden light imports, small files.

Edges are imports of the package's own modules. `import a.b` is an edge to `a.b`; `from a import b` an edge to
`a.b` when that is a module, else to `a`. An import is `top` (runs when the module is imported), `local` (inside a
function: runs on first call) or `typing` (under `if TYPE_CHECKING:`: never runs).

- No cycle over top and local edges. A function-local import hides a cycle from Python without removing it: the two
  modules still need each other, and which one may be imported first becomes an accident of call order. Typing-only
  imports are left out: they never run, so they cannot make an import order matter, and a signature naming a type
  of a module that imports this one is what `TYPE_CHECKING` is for. A package's `__init__` importing its own
  submodules is an edge like any other, so it is a cycle only when a submodule imports the package back.
- A function-local import is for heavy modules only (those that import torch, triton, transformers, trl, datasets,
  or a library that imports them, at import time, themselves or through own modules they import at top level, the
  packages above them included): it keeps `kernelzero --help` fast. A function-local import of a light module only
  hides a dependency, and usually a cycle.
- No module over 600 lines (a file past 600 lines holds two concepts).
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

SRC = Path(__file__).parents[2] / "src"
PACKAGE = "kernelzero"
HEAVY = frozenset({"torch", "triton", "transformers", "trl", "datasets", "accelerate", "vllm", "peft", "deepspeed"})
"""Libraries whose import costs seconds: torch, triton, and those that import torch themselves."""
MAX_LINES = 600


@dataclass(frozen=True)
class Import:
    source: str  # the importing module
    target: str  # an own module, or the top-level name of a library
    kind: str  # top | local | typing
    line: int

    @property
    def own(self) -> bool:
        return self.target == PACKAGE or self.target.startswith(PACKAGE + ".")

    def __str__(self) -> str:
        return f"{module_path(self.source)}:{self.line}: {self.kind} import of {self.target}"


@cache
def modules() -> dict[str, Path]:
    """Dotted name -> file, for every module of the package (a package is its `__init__.py`). Folders without an
    `__init__.py` hold data (task sources read as text, e.g. `data/seed_tasks/`), not modules."""
    out = {}
    for path in sorted((SRC / PACKAGE).rglob("*.py")):
        folders = path.relative_to(SRC).parents
        if not all((SRC / f / "__init__.py").is_file() for f in list(folders)[:-1]):
            continue
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def module_path(name: str) -> str:
    return str(modules()[name].relative_to(SRC.parent))


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _targets(name: str, node: ast.Import | ast.ImportFrom) -> list[str]:
    mods = modules()
    if isinstance(node, ast.Import):
        return [a.name if a.name.split(".")[0] == PACKAGE else a.name.split(".")[0] for a in node.names]
    base = node.module or ""
    if node.level:
        package = name.split(".") if modules()[name].name == "__init__.py" else name.split(".")[:-1]
        package = package[: len(package) - (node.level - 1)]
        base = ".".join(package + ([base] if base else []))
    if base.split(".")[0] != PACKAGE:
        return [base.split(".")[0]]
    return [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]


def _imports_of(name: str, tree: ast.Module) -> dict[Import, None]:
    found: dict[Import, None] = {}

    def visit(node: ast.AST, kind: str) -> None:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.update(dict.fromkeys(Import(name, t, kind, node.lineno) for t in _targets(name, node)))
            return
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            kind = "local" if kind == "top" else kind
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                visit(child, "typing")
            for child in node.orelse:
                visit(child, kind)
            return
        for child in ast.iter_child_nodes(node):
            visit(child, kind)

    visit(tree, "top")
    return found


@cache
def imports() -> tuple[Import, ...]:
    """Every import of an own module or a library, once per (module, line, target)."""
    found: dict[Import, None] = {}
    for name, path in modules().items():
        found.update(_imports_of(name, ast.parse(path.read_text(encoding="utf-8"), str(path))))
    return tuple(found)


def _with_packages(name: str) -> list[str]:
    """A module and the packages above it: importing it runs each of their `__init__`s."""
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


@cache
def heavy_modules() -> frozenset[str]:
    """Own modules whose import (at top level, through own modules, packages above them included) imports a heavy
    library."""
    top: dict[str, set[str]] = {m: set() for m in modules()}
    heavy = set()
    for imp in imports():
        if imp.kind != "top":
            continue
        if imp.own:
            top[imp.source].update(_with_packages(imp.target))
        elif imp.target in HEAVY:
            heavy.add(imp.source)
    for m in modules():  # a module's own packages run first
        top[m].update(p for p in _with_packages(m)[:-1])
    changed = True
    while changed:
        changed = False
        for m, deps in top.items():
            if m not in heavy and deps & heavy:
                heavy.add(m)
                changed = True
    return frozenset(heavy)


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The graph's strongly connected components of more than one module (each holds at least one cycle), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's algorithm
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while (top := stack.pop()) != node:
                component.append(top)
            if component:
                found.append(sorted([node, *component]))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return sorted(found)


def runtime_edges() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for imp in imports():
        if imp.own and imp.kind != "typing" and imp.target != imp.source:
            edges.setdefault(imp.source, set()).add(imp.target)
    return edges


def test_imports_are_read_with_their_kind_and_target():
    source = """
import torch.nn
from kernelzero.tasks import Task
from kernelzero import tasks
from . import options
if TYPE_CHECKING:
    from kernelzero.judge.verdict import Verdict
def f():
    from kernelzero.loop import config
    class C:
        import trl
"""
    found = {(i.target, i.kind) for i in _imports_of("kernelzero.judge.core", ast.parse(source))}
    assert found == {("torch", "top"), ("kernelzero.tasks", "top"), ("kernelzero.judge.options", "top"),
                     ("kernelzero.judge.verdict", "typing"), ("kernelzero.loop.config", "local"),
                     ("trl", "local")}  # fmt: skip


def test_heavy_modules_are_found_through_imports_and_packages():
    assert {"kernelzero.trainers.coder", "kernelzero.rewards.cagrpo", "kernelzero.judge.pool"} <= heavy_modules()
    light = {"kernelzero", "kernelzero.tasks", "kernelzero.cli", "kernelzero.loop.config", "kernelzero.trainers.config"}
    assert not light & heavy_modules()


def test_cycles():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": {"e"}, "e": {"d"}}) == [["a", "b", "c"], ["d", "e"]]
    assert cycles({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == []


def test_no_import_cycle():
    """Counting function-local imports. The message lists each set of modules that import each other, with the
    import lines between them."""
    report = []
    for component in cycles(runtime_edges()):
        inside = set(component)
        report.append(" <-> ".join(component))
        report += [f"  {i}" for i in imports() if i.kind != "typing" and i.source in inside and i.target in inside]
    assert not report, "import cycles:\n" + "\n".join(report)


def test_no_function_local_import_of_a_light_module():
    heavy = heavy_modules()
    hidden = "\n".join(str(i) for i in imports() if i.kind == "local" and i.own and i.target not in heavy)
    assert not hidden, f"function-local imports of light modules (import them at the top):\n{hidden}"


def test_no_module_over_600_lines():
    sizes = {name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in modules().items()}
    big = [f"{module_path(n)}: {s} lines" for n, s in sorted(sizes.items()) if s > MAX_LINES]
    assert not big, "\n".join(big)


def test_light_entry_points_do_not_import_torch():
    """`kernelzero --help` imports the CLI and every command module; the phase configs are read by `RunConfig`."""
    light = ["kernelzero.cli", "kernelzero.commands", "kernelzero.loop.config", "kernelzero.trainers.config",
             "kernelzero.trainers.presets", "kernelzero.tasks"]  # fmt: skip
    assert not set(light) & heavy_modules()
    code = f"import sys, {', '.join(light)}; print(sorted(set(sys.modules) & set({sorted(HEAVY)!r})))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(SRC)})  # fmt: skip
    assert out.stdout.strip() == "[]"
