"""The AST extractor: which torch APIs a module's class really uses, as canonical names. Never executes code.

Canonical names (what the vocabulary, the sampler and the usage check speak):

- `torch.matmul`, `torch.linalg.norm`: functions of `torch` and its `linalg`/`special`/`fft` namespaces;
- `nn.Conv2d`: `torch.nn` modules constructed in `__init__` (or inline in `forward`); containers (`Sequential`,
  `ModuleList`, `Parameter`...) are not APIs, their contents are;
- `F.gelu`: `torch.nn.functional` functions;
- `Tensor.sum`: tensor methods that compute (metadata, casts and device moves such as `.size()`, `.float()`,
  `.to()` are not listed);
- `op.add`, `op.matmul`, `op.neg`, `op.gt`: Python operators on tensors.

In-place spellings are the same op: `x.add_(y)` and `F.relu_(x)` list as `Tensor.add` and `F.relu`. Import
aliases are resolved (`import torch.nn as nn`, `from torch import nn`, `from torch.nn import functional as F`,
`from torch.nn import Conv2d`, `import torch as th`...).

What counts, for one class:
1. `nn` modules and classes of the same file constructed in `__init__` (class-level data only, no calls of
   `torch.randn` used to initialise parameters: that is setup, not the module's computation);
2. everything `forward` computes, and, followed once each, the helper methods it calls as `self.name(...)` and the
   module-level functions it calls by name;
3. with `follow_classes=True`, the APIs of classes of the same file that `__init__`/`forward` construct.

Operator rule: a binary operator, augmented assignment, comparison or unary minus in forward counts as
`op.<name>` unless an operand is a string literal or every operand is provably a Python scalar: a constant, a
shape or size query (`x.shape[0]`, `x.size(1)`, `x.dim()`, `len(...)`), a `math.*` call, a name bound only to
such values, or a `self.<attr>` that `__init__` binds only to such values or to its own arguments (KernelBench's
constructor arguments are sizes and hyper-parameters). `x / self.divisor` counts as `op.div`; `self.dim // 2`
does not. `is`/`in`/`not`/`and`/`or` never count.

Order: first use in forward's evaluation order (`self.relu(self.conv(x))` gives conv, then relu), then modules
built in `__init__` that forward does not call by attribute (a `ModuleList` looped over), in source order.
"""

from __future__ import annotations

import ast

from kernelzero.apis.names import ModuleIndex, bind, bind_loop, canonical, is_scalar, is_str, scalar_names
from kernelzero.apis.vocab import ALIASES
from kernelzero.syntax import parse

BINOPS = {ast.Add: "op.add", ast.Sub: "op.sub", ast.Mult: "op.mul", ast.Div: "op.div", ast.FloorDiv: "op.floordiv",
          ast.Mod: "op.mod", ast.Pow: "op.pow", ast.MatMult: "op.matmul", ast.BitAnd: "op.and", ast.BitOr: "op.or",
          ast.BitXor: "op.xor", ast.LShift: "op.lshift", ast.RShift: "op.rshift"}  # fmt: skip
COMPARES = {ast.Lt: "op.lt", ast.LtE: "op.le", ast.Gt: "op.gt", ast.GtE: "op.ge", ast.Eq: "op.eq", ast.NotEq: "op.ne"}
UNARIES = {ast.USub: "op.neg", ast.Invert: "op.invert"}

# Tensor methods that compute, beyond the spellings the vocabulary lists (added below).
_EXTRA_TENSOR_METHODS = {
    "clone", "fill", "zero", "masked_scatter", "masked_select", "index_fill", "index_copy", "logical_and", "logical_or",
    "logical_not", "isnan", "isinf", "nan_to_num", "sinh", "cosh", "tan", "atan", "asin", "acos", "atan2", "trunc",
    "frac", "logaddexp", "hypot", "erfinv", "bitwise_and", "bitwise_or", "cummax", "cummin", "nansum", "nanmean",
    "mode", "kthvalue", "narrow", "select", "unfold", "movedim", "moveaxis", "swapaxes", "swapdims", "unflatten",
    "nonzero", "float_power", "log2", "log10", "exp2", "dot", "det", "inverse", "addcdiv", "addbmm", "addmv",
}  # fmt: skip
TENSOR_METHODS = frozenset({a.split(".", 1)[1] for a in ALIASES if a.startswith("Tensor.")} | _EXTRA_TENSOR_METHODS)
TENSOR_PROPERTIES = frozenset({"T", "mT"})  # attributes that compute a transpose


def _method(cls: ast.ClassDef, name: str) -> ast.FunctionDef | None:
    for node in cls.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name:
            return node
    return None


def _params(fn: ast.FunctionDef) -> list[ast.arg]:
    a = fn.args
    return [*a.posonlyargs, *a.args, *a.kwonlyargs] + [x for x in (a.vararg, a.kwarg) if x is not None]


class _ClassExtractor:
    """Walks one class: `__init__` for modules, then forward and what it calls, in evaluation order."""

    def __init__(self, index: ModuleIndex, cls: ast.ClassDef, follow_classes: bool, stack: tuple[str, ...]):
        self.index, self.cls, self.follow, self.stack = index, cls, follow_classes, stack
        self.out: dict[str, None] = {}
        self.modules: dict[str, list[str]] = {}  # self.<attr> -> APIs of what __init__ assigned to it
        self.leftover: list[str] = []  # APIs built in __init__ outside a `self.<attr> = ...`
        self.self_scalars: set[str] = set()
        self.visited: set[str] = set()

    def run(self) -> tuple[str, ...]:
        self._scan_class_body()
        init = _method(self.cls, "__init__")
        if init is not None:
            self._scan_init(init)
        forward = _method(self.cls, "forward")
        if forward is not None:
            self._visit_function(forward, self_method=True)
        for api in self.leftover + [a for apis in self.modules.values() for a in apis]:
            self.out.setdefault(api, None)
        return tuple(self.out)

    # -- __init__: modules and scalar attributes --------------------------------------------------------------
    def _scan_class_body(self) -> None:
        bindings: dict[str, list[ast.expr | None]] = {}
        for node in self.cls.body:
            if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
                bind(node, bindings)
        self.self_scalars |= scalar_names(bindings, set(), self.index, set())

    def _constructed(self, node: ast.AST, seen: frozenset[str] = frozenset()) -> list[tuple[ast.Call, list[str]]]:
        """Calls under `node` that build an nn module (or a class of this file), with the APIs each one brings.

        A call of a helper method (`self._make_layer(...)`) brings whatever that helper builds.
        """
        found = []
        for call in ast.walk(node):
            if not isinstance(call, ast.Call):
                continue
            apis = self._construction_apis(call.func)
            match call.func:
                case ast.Attribute(value=ast.Name(id="self"), attr=attr) if attr not in seen | {"__init__", "forward"}:
                    helper = _method(self.cls, attr)
                    if helper is not None:
                        apis = [a for _, more in self._constructed(helper, seen | {attr}) for a in more]
            if apis:
                found.append((call, apis))
        return sorted(found, key=lambda item: (item[0].lineno, item[0].col_offset))

    def _construction_apis(self, func: ast.expr) -> list[str]:
        path = self.index.dotted(func)
        if path is not None:
            api = canonical(path)
            return [api] if api is not None and api.startswith("nn.") else []
        if isinstance(func, ast.Name) and func.id in self.index.classes:
            return list(self._class_apis(func.id)) if self.follow else []
        return []

    def _class_apis(self, name: str) -> tuple[str, ...]:
        if name in self.stack:  # a class that builds itself (directly or not): stop the recursion
            return ()
        if name not in self.index.cache:
            cls = self.index.classes[name]
            extractor = _ClassExtractor(self.index, cls, self.follow, (*self.stack, name))
            self.index.cache[name] = extractor.run() if _method(cls, "forward") else ()
        return self.index.cache[name]

    def _scan_init(self, init: ast.FunctionDef) -> None:
        params = {a.arg for a in _params(init)} - {"self"}
        local_bindings: dict[str, list[ast.expr | None]] = {}
        attr_values: dict[str, list[ast.expr]] = {}
        claimed: set[int] = set()
        for node in ast.walk(init):
            if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
                bind(node, local_bindings)
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                        attr_values.setdefault(t.attr, []).append(node.value)
                        for call, apis in self._constructed(node.value):
                            self.modules.setdefault(t.attr, []).extend(apis)
                            claimed.update(id(c) for c in ast.walk(call))
                        ref = self.index.dotted(node.value)  # `self.act = F.gelu`: a function kept for forward
                        if ref is not None and canonical(ref) is not None:
                            self.modules.setdefault(t.attr, []).append(canonical(ref))
        for call, apis in self._constructed(init):
            if id(call) not in claimed:
                self.leftover.extend(apis)
        local = scalar_names(local_bindings, params, self.index, set())
        for attr, values in attr_values.items():
            if all(is_scalar(v, local, self.index, set()) for v in values):
                self.self_scalars.add(attr)

    # -- forward and what it calls --------------------------------------------------------------------------
    def _visit_function(self, fn: ast.FunctionDef, self_method: bool) -> None:
        if fn.name in self.visited and self_method:
            return
        self.visited.add(fn.name if self_method else f"<module>.{fn.name}")
        seed = set()
        for a in _params(fn):
            annotated = isinstance(a.annotation, ast.Name) and a.annotation.id in ("int", "float", "bool", "str")
            if annotated:
                seed.add(a.arg)
        defaults = fn.args.defaults
        for a, d in zip(fn.args.args[len(fn.args.args) - len(defaults) :], defaults):
            if isinstance(d, ast.Constant) and d.value is not None:
                seed.add(a.arg)
        bindings: dict[str, list[ast.expr | None]] = {}
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
                bind(node, bindings)
            elif isinstance(node, ast.For | ast.comprehension):
                bind_loop(node.target, node.iter, bindings)
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                bindings.setdefault(node.target.id, []).append(node.value)
        scalars = scalar_names(bindings, seed, self.index, self.self_scalars)
        for stmt in fn.body:
            self._walk(stmt, scalars)

    def _scalar(self, node: ast.expr, scalars: set[str]) -> bool:
        return is_scalar(node, scalars, self.index, self.self_scalars)

    def _emit(self, api: str | None) -> None:
        if api is not None:
            self.out.setdefault(api, None)

    def _walk(self, node: ast.AST, scalars: set[str]) -> None:
        """Post-order: operands before the operation, so the output follows evaluation order."""
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            return  # nested definitions run only if called; not followed
        for child in ast.iter_child_nodes(node):
            self._walk(child, scalars)
        match node:
            case ast.Call():
                self._call(node, scalars)
            case ast.BinOp(op=op, left=left, right=right) if not (
                is_str((left, right)) or (self._scalar(left, scalars) and self._scalar(right, scalars))
            ):
                self._emit(BINOPS.get(type(op)))
            case ast.AugAssign(op=op, target=target, value=value) if not (
                self._scalar(target, scalars) and self._scalar(value, scalars)
            ):
                self._emit(BINOPS.get(type(op)))
            case ast.UnaryOp(op=op, operand=operand) if not self._scalar(operand, scalars):
                self._emit(UNARIES.get(type(op)))
            case ast.Compare(left=left, ops=ops, comparators=rest):
                operands = [left, *rest]
                for i, op in enumerate(ops):
                    pair = operands[i], operands[i + 1]
                    if not (is_str(pair) or all(self._scalar(o, scalars) for o in pair)):
                        self._emit(COMPARES.get(type(op)))
            case ast.Attribute(attr=attr, value=value, ctx=ast.Load()) if attr in TENSOR_PROPERTIES:
                if self._tensor_receiver(value, scalars):
                    self._emit(f"Tensor.{attr}")

    def _tensor_receiver(self, node: ast.expr, scalars: set[str]) -> bool:
        """A method's receiver we take for a tensor: not `self`, not `super()`, not a module, not a scalar."""
        if isinstance(node, ast.Name) and (node.id == "self" or node.id in self.index.imports):
            return False
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super":
            return False
        return self.index.dotted(node) is None and not self._scalar(node, scalars)

    def _call(self, call: ast.Call, scalars: set[str]) -> None:
        func = call.func
        path = self.index.dotted(func)
        if path is not None:
            self._emit(canonical(path))
            return
        match func:
            case ast.Attribute(value=ast.Name(id="self"), attr=attr):
                if attr in self.modules:
                    for api in self.modules[attr]:
                        self._emit(api)
                else:
                    helper = _method(self.cls, attr)
                    if helper is not None and attr not in self.visited:
                        self._visit_function(helper, self_method=True)
            case ast.Attribute(value=receiver, attr=attr):
                base = attr[:-1] if attr.endswith("_") and not attr.endswith("__") else attr
                if base in TENSOR_METHODS and self._tensor_receiver(receiver, scalars):
                    self._emit(f"Tensor.{base}")
            case ast.Name(id=name) if name in self.index.classes:
                for api in self._construction_apis(func):
                    self._emit(api)
            case ast.Name(id=name) if name in self.index.functions:
                if f"<module>.{name}" not in self.visited:
                    self._visit_function(self.index.functions[name], self_method=False)


def _tree(source: str | ast.Module) -> ast.Module:
    return source if isinstance(source, ast.Module) else parse(source)


def extract_apis(
    source: str | ast.Module, class_name: str = "Model", *, follow_classes: bool = True
) -> tuple[str, ...]:
    """The canonical torch APIs class `class_name` uses (module docstring: what counts, in which order).

    Raises SyntaxError for unparsable source and a one-line ValueError when the class is not defined.
    """
    index = ModuleIndex.build(_tree(source))
    cls = next((n for n in index.tree.body if isinstance(n, ast.ClassDef) and n.name == class_name), None)
    if cls is None:
        raise ValueError(f"no class {class_name!r} defined at module level")
    return _ClassExtractor(index, cls, follow_classes, (class_name,)).run()


def extract_classes(source: str | ast.Module, *, follow_classes: bool = False) -> dict[str, tuple[str, ...]]:
    """Per class that defines `forward` (nested ones too): the APIs it uses. What co-occurrence mining reads.

    `follow_classes` is off by default here: a model class that builds ten blocks would otherwise list every API
    of every block, and co-occurrence is about ops used together in one forward.
    """
    index = ModuleIndex.build(_tree(source))
    out = {}
    for node in ast.walk(index.tree):
        if isinstance(node, ast.ClassDef) and _method(node, "forward") is not None:
            out[node.name] = _ClassExtractor(index, node, follow_classes, (node.name,)).run()
    return out
