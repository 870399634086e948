"""Name resolution for the extractor: imports, canonical API names, and which expressions are Python scalars.

The extractor (`extract.py`) asks two questions of an expression without running it: which torch API does this
name spell (`F.gelu` -> `torch.nn.functional.gelu` -> `F.gelu`), and could this value be a tensor at all
(`x.shape[0] * 2` cannot; `x * 2` can). Both are answered here, from the file's imports and assignments only.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

# `torch.nn` classes that hold or wrap others and compute nothing themselves.
NN_NOT_APIS = frozenset({"Module", "Sequential", "ModuleList", "ModuleDict", "Parameter", "ParameterList",
                         "ParameterDict", "Buffer", "Identity"})  # fmt: skip
# `torch.*` callables that configure, inspect or describe rather than compute.
TORCH_NOT_APIS = frozenset({
    "no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled", "is_tensor", "is_floating_point",
    "is_complex", "is_nonzero", "is_storage", "is_autocast_enabled", "is_inference_mode_enabled", "autocast",
    "manual_seed", "seed", "get_default_dtype", "set_default_dtype", "compile", "device", "dtype", "finfo", "iinfo",
    "numel", "typename", "set_printoptions", "use_deterministic_algorithms", "broadcast_shapes", "result_type",
    "promote_types", "can_cast", "save", "load", "from_numpy", "get_autocast_gpu_dtype", "get_autocast_dtype",
    "empty_cache", "get_device", "is_same_size", "equal", "allclose", "isclose",
})  # fmt: skip

# Calls and attributes whose value is a Python scalar (or a shape), whatever they are applied to.
SCALAR_METHODS = frozenset({"size", "dim", "numel", "item", "element_size", "stride", "nelement", "ndimension",
                            "tolist", "get_device", "data_ptr", "is_contiguous", "storage_offset"})  # fmt: skip
SCALAR_ATTRS = frozenset({"shape", "ndim", "dtype", "device", "is_cuda", "training", "requires_grad", "config"})
SCALAR_BUILTINS = frozenset({"len", "int", "float", "bool", "str", "min", "max", "abs", "round", "range", "isinstance",
                             "hasattr", "divmod", "tuple", "list"})  # fmt: skip


def canonical(path: str) -> str | None:
    """The canonical API name of a dotted torch path (`torch.nn.functional.gelu` -> `F.gelu`); None if not an API."""
    parts = path.split(".")
    if parts[0] != "torch" or len(parts) < 2 or any(p.startswith("_") for p in parts[1:]):
        return None
    name = parts[-1]
    if name.endswith("_") and not name.endswith("__"):
        name = name[:-1]  # in-place spelling of the same op
    if parts[1] == "nn":
        if len(parts) == 4 and parts[2] == "functional":
            return f"F.{name}"
        cls = parts[-1]
        if (len(parts) == 3 or parts[2] == "modules") and cls[:1].isupper() and cls not in NN_NOT_APIS:
            return f"nn.{cls}"
        return None  # nn.init, nn.utils, nn.parameter...: setup, not computation
    if len(parts) == 3 and parts[1] in ("linalg", "special", "fft"):
        return f"torch.{parts[1]}.{name}"
    if len(parts) == 2 and not name[:1].isupper() and name not in TORCH_NOT_APIS:
        return f"torch.{name}"
    return None


def import_table(tree: ast.Module) -> dict[str, str]:
    """Local name -> dotted path it was imported as, for every import anywhere in the module."""
    table: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                table[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            for a in node.names:
                table[a.asname or a.name] = f"{base}.{a.name}"
    return table


@dataclass
class ModuleIndex:
    """What one parsed file defines at module level, shared by every class extracted from it."""

    tree: ast.Module
    imports: dict[str, str]
    functions: dict[str, ast.FunctionDef] = field(default_factory=dict)
    classes: dict[str, ast.ClassDef] = field(default_factory=dict)
    scalars: set[str] = field(default_factory=set)
    cache: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @classmethod
    def build(cls, tree: ast.Module) -> ModuleIndex:
        index = cls(tree, import_table(tree))
        bindings: dict[str, list[ast.expr | None]] = {}
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                index.functions[node.name] = node
            elif isinstance(node, ast.ClassDef):
                index.classes[node.name] = node
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                bind(node, bindings)
        index.scalars = scalar_names(bindings, set(), index, set())
        for node in ast.walk(tree):  # nested classes are modules too
            if isinstance(node, ast.ClassDef):
                index.classes.setdefault(node.name, node)
        return index

    def dotted(self, node: ast.expr) -> str | None:
        """`F.gelu` -> `torch.nn.functional.gelu` when the chain starts at an imported name."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name) and node.id in self.imports:
            return ".".join([self.imports[node.id], *reversed(parts)])
        return None


def bind(node: ast.stmt, bindings: dict[str, list[ast.expr | None]]) -> None:
    """Record what an assignment binds each plain name to (None: unknown)."""
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    value = node.value
    for t in targets:
        if isinstance(t, ast.Name):
            bindings.setdefault(t.id, []).append(value)
        elif isinstance(t, ast.Tuple | ast.List):
            for elt in t.elts:  # `B, C, H, W = x.shape`: each element is as scalar as the whole
                if isinstance(elt, ast.Name):
                    bindings.setdefault(elt.id, []).append(value)


def scalar_names(bindings: dict, seed: set[str], index: ModuleIndex, self_scalars: set[str]) -> set[str]:
    """Names bound only to scalar values, grown to a fixpoint (a scalar may be computed from other scalars)."""
    scalars = set(seed)
    changed = True
    while changed:
        changed = False
        for name, values in bindings.items():
            if name not in scalars and all(
                v is not None and is_scalar(v, scalars, index, self_scalars) for v in values
            ):
                scalars.add(name)
                changed = True
    return scalars


def is_scalar(node: ast.expr, scalars: set[str], index: ModuleIndex, self_scalars: set[str]) -> bool:
    """Whether an expression is provably a Python scalar or shape (never a tensor)."""

    def rec(n: ast.expr) -> bool:
        return is_scalar(n, scalars, index, self_scalars)

    match node:
        case ast.Constant() | ast.JoinedStr():
            return True
        case ast.Name(id=name):
            return name in scalars or name in index.scalars
        case ast.Attribute(value=ast.Name(id="self"), attr=attr):
            return attr in self_scalars or attr in SCALAR_ATTRS
        case ast.Attribute(attr=attr, value=value):
            return attr in SCALAR_ATTRS or index.dotted(value) is not None or rec(value)
        case ast.Subscript(value=value):
            return rec(value)
        case ast.Call(func=ast.Attribute(attr=attr)) if attr in SCALAR_METHODS:
            return True
        case ast.Call(func=func):
            path = index.dotted(func) or ""
            if isinstance(func, ast.Name) and func.id in SCALAR_BUILTINS and func.id not in index.imports:
                return True
            return path.startswith("math.")
        case ast.BinOp(left=left, right=right):
            return rec(left) and rec(right)
        case ast.UnaryOp(operand=operand):
            return rec(operand)
        case ast.BoolOp(values=values) | ast.Tuple(elts=values) | ast.List(elts=values):
            return all(rec(v) for v in values)
        case ast.Compare(left=left, comparators=rest):
            return all(rec(v) for v in (left, *rest))
        case ast.IfExp(body=body, orelse=orelse):
            return rec(body) and rec(orelse)
    return False


def is_str(operands: tuple[ast.expr, ...]) -> bool:
    """An operation with a string literal (`mode == "sum"`, `"%d" % n`) is never a tensor op."""
    return any(
        isinstance(o, ast.Constant) and isinstance(o.value, str) or isinstance(o, ast.JoinedStr) for o in operands
    )


def bind_loop(target: ast.expr, iterable: ast.expr, bindings: dict[str, list[ast.expr | None]]) -> None:
    """Bind a loop variable to "an element of" its iterable (a Subscript), so it is as scalar as the iterable.

    `range(...)` yields scalars; `enumerate(xs)` a scalar index and elements of xs; `zip(a, b)` elements of each.
    """

    def element(of: ast.expr) -> ast.expr:
        return ast.Subscript(value=of, slice=ast.Constant(0), ctx=ast.Load())

    match target, iterable:
        case ast.Name(id=name), ast.Call(func=ast.Name(id="range")):
            bindings.setdefault(name, []).append(ast.Constant(0))
        case ast.Name(id=name), _:
            bindings.setdefault(name, []).append(element(iterable))
        case ast.Tuple(elts=[first, second]), ast.Call(func=ast.Name(id="enumerate"), args=[inner, *_]):
            bind_loop(first, ast.Call(func=ast.Name(id="range"), args=[], keywords=[]), bindings)
            bind_loop(second, inner, bindings)
        case ast.Tuple(elts=elts), ast.Call(func=ast.Name(id="zip"), args=args) if len(elts) == len(args):
            for elt, arg in zip(elts, args):
                bind_loop(elt, arg, bindings)
        case ast.Tuple(elts=elts), _:
            for elt in elts:
                bind_loop(elt, iterable, bindings)
