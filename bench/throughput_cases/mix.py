"""A realistic candidate mix: what a Coder in training sends, not only correct kernels.

Early GRPO batches are mostly candidates that do not compile, crash or are wrong; a judge measured on correct
candidates alone says little about a training run's throughput. Per backend, 64 candidates over 8 tasks (five
elementwise ops, a product, an absolute difference and a row softmax), in the proportions the judge sees early in
training: 40% correct, 30% that do not compile, 20% wrong results, 10% that crash or hang. Every candidate is a
distinct source (its block size, extension name or a comment differ), so no build or verdict is shared, and each
carries the status the judge must return.

The failures are the ones models write: an undeclared identifier, a missing semicolon, a tensor passed where a
pointer is expected, a helper never defined (CUDA); a misspelt `tl` function, an undefined name in the kernel, a
runtime block size where a constexpr is needed (Triton); an off-by-one bound or a wrong constant; an out-of-bounds
index or a view that does not fit; a kernel that never ends.
"""

from __future__ import annotations

from dataclasses import dataclass

from throughput_cases import _CUDA_ELEM, _EXPR, _TASK, _TRITON_ELEM, cuda_candidate, triton_candidate

# Three more tasks beside throughput_cases' five, so the mix spans 8.
_EXPR_MORE = {"sigmoid": ("x", "torch.sigmoid(x)"), "mul": ("x, y", "x * y"), "absdiff": ("x, y", "(x - y).abs()")}
_CUDA_MORE = {"sigmoid": "1.f / (1.f + expf(-v))", "mul": "v * w", "absdiff": "fabsf(v - w)"}
_TRITON_MORE = {"sigmoid": "1.0 / (1.0 + tl.exp(-v))", "mul": "v * w", "absdiff": "tl.abs(v - w)"}
TASKS = ("relu", "gelu", "add", "scale", "softmax", "sigmoid", "mul", "absdiff")
BINARY = ("add", "mul", "absdiff")

# Expected verdict statuses by kind; a crash may surface as the forward's exception or as the worker's death.
EXPECTED = {"ok": ("ok",), "compile": ("compile_error",), "wrong": ("incorrect",),
            "crash": ("runtime_error", "crashed"), "hang": ("timeout",)}  # fmt: skip
# 64 per backend: 26 correct, 19 not compiling, 13 wrong, 4 crashes and 2 hangs (40/30/20/10 %)
KINDS = ["ok"] * 26 + ["compile"] * 19 + ["wrong"] * 13 + ["crash"] * 4 + ["hang"] * 2


@dataclass(frozen=True)
class Case:
    """One candidate of the mix: its name, task and candidate sources, backend, kind and the statuses it may get."""

    name: str
    task: str
    source: str
    backend: str
    kind: str
    flaw: str  # what was done to a correct candidate ("" for a correct one)

    @property
    def expected(self) -> tuple[str, ...]:
        return EXPECTED[self.kind]


def _task(op: str, small: bool) -> str:
    rows, cols = (64, 256) if small else (4096, 4096)
    args, expr = {**_EXPR, **_EXPR_MORE}[op]
    inputs = ", ".join(f"torch.randn({rows}, {cols})" for _ in args.split(", "))
    return _TASK.format(args=args, expr=expr, inputs=inputs)


def _cuda(op: str, block: int) -> str:
    if op in _CUDA_ELEM or op == "softmax":
        return cuda_candidate(op, block)
    base = cuda_candidate("add", block).replace("add_", f"{op}_").replace(_CUDA_ELEM["add"], _CUDA_MORE[op])
    return base if op in BINARY else base.replace("y.contiguous()", "x.new_empty(0)").replace("x, y):", "x):")


def _triton(op: str, variant: int) -> str:
    if op in _TRITON_ELEM or op == "softmax":
        return triton_candidate(op, variant)
    base = triton_candidate("add", variant).replace("add_kernel", f"{op}_kernel")
    base = base.replace(_TRITON_ELEM["add"], _TRITON_MORE[op])
    return base if op in BINARY else base.replace("y = y.contiguous()", "y = x").replace("x, y):", "x):")


def _sub(src: str, old: str, new: str) -> str:
    """`src` with the first `old` replaced; a template change that loses `old` fails here, not as a mislabelled case."""
    if old not in src:
        raise ValueError(f"mutation target {old!r} not in the candidate")
    return src.replace(old, new, 1)


def _rows(elementwise: tuple[str, str], softmax: tuple[str, str]):
    """A mutation that replaces one thing in the elementwise templates and another in the row softmax."""
    return lambda s, o: _sub(s, *(softmax if o == "softmax" else elementwise))


# Waits on a change of the input that never comes. Each read is volatile, a side effect the compiler must keep: an
# earlier `volatile int spin = 1; while (spin) {}` was compiled away by nvcc -O3 on the H200 and judged `ok`.
SPIN = "while (*(volatile const float*)x == *(volatile const float*)x) {}\n    "
_CUDA_FLAWS = {
    "compile": [
        ("undeclared identifier", _rows(("blockDim.x", "blockDimx"), ("blockIdx.x", "blockIdxx"))),
        ("missing semicolon", lambda s, o: _sub(s, "torch::empty_like(x);", "torch::empty_like(x)")),
        ("tensor for a pointer", lambda s, o: _sub(s, "x.data_ptr<float>(),", "x,")),
        ("undefined helper", _rows(("out[i] = ", "out[i] = fast_eval(v) + 0.f * "),
                                   ("expf(row[c] - m) * inv", "fast_exp(row[c] - m) * inv"))),
    ],
    "wrong": [
        ("skips the last element", _rows(("if (i < n)", "if (i < n - 1)"),
                                         ("orow[c] = expf", "orow[c] = (c + 1 < cols) * expf"))),
        ("wrong constant", _rows(("out[i] = ", "out[i] = 1.01f * "), ("float inv = 1.f", "float inv = 1.01f"))),
    ],
    "crash": [
        ("out-of-bounds write", _rows(("out[i] = ", "out[i + (1L << 40)] = "),
                                      ("orow[c] =", "orow[c + (1L << 40)] ="))),
    ],
    "hang": [
        ("kernel never ends", _rows(("long i = blockIdx.x", SPIN + "long i = blockIdx.x"),
                                    ("float m = -INFINITY;", SPIN + "float m = -INFINITY;"))),
    ],
}  # fmt: skip

_TRITON_FLAWS = {
    "compile": [
        ("misspelt tl function", lambda s, o: _sub(s, "tl.arange(0, BLOCK)", "tl.arrange(0, BLOCK)")),
        ("undefined name", lambda s, o: _sub(s, "mask=mask)\n\n", "mask=maks)\n\n")),
        ("unknown keyword", lambda s, o: _sub(s, "tl.load(x_ptr + ", "tl.load(padding=0.0, pointer=x_ptr + ")),
    ],
    "wrong": [
        ("off-by-one mask", _rows(("mask = offs < n", "mask = offs < n - 1"),
                                  ("mask = offs < cols", "mask = offs < cols - 1"))),
        ("wrong constant", _rows(("tl.store(out_ptr + offs, ", "tl.store(out_ptr + offs, 1.01 * "),
                                 ("e / tl.sum(e, axis=0)", "e / (1.01 * tl.sum(e, axis=0))"))),
    ],
    "crash": [
        ("a view that does not fit", lambda s, o: _sub(s, "out = torch.empty_like(x)\n",
                                                      "out = torch.empty_like(x).view(-1, 7)\n")),
    ],
    "hang": [
        ("loop that never ends", lambda s, o: _sub(s, "        out = torch.empty_like(x)\n",
                                                  "        while x.numel() > 0:\n            x = x + 0\n"
                                                  "        out = torch.empty_like(x)\n")),
    ],
}  # fmt: skip


def mix(backend: str, n: int = 64, small: bool = False) -> list[Case]:
    """`n` candidates for `backend` over the 8 tasks (task i % 8), kinds in KINDS' proportions spread over tasks."""
    flaws = _CUDA_FLAWS if backend == "cuda" else _TRITON_FLAWS
    kinds = _spread(KINDS, n)
    out, used = [], {k: 0 for k in flaws}
    for i, kind in enumerate(kinds):
        op = TASKS[i % len(TASKS)]
        variant = i // len(TASKS)
        if backend == "cuda":
            src = _cuda(op, (128, 256, 512, 1024)[variant % 4]).replace('name="tp_', f'name="mix{i}_tp_')
        else:
            src = _triton(op, variant) + f"\n# mix case {i}\n"
        flaw = ""
        if kind != "ok":
            flaw, mutate = flaws[kind][used[kind] % len(flaws[kind])]
            used[kind] += 1
            src = mutate(src, op)
        out.append(Case(f"{backend}_{i:02d}_{op}_{kind}", _task(op, small), src, backend, kind, flaw))
    return out


def _spread(kinds: list[str], n: int) -> list[str]:
    """`n` kinds in the proportions of `kinds`, interleaved (every task gets a mix, not a block of one kind)."""
    scaled = [kinds[int(i * len(kinds) / n)] for i in range(n)]
    order = sorted(range(n), key=lambda i: ((i * 37) % n, i))  # a fixed permutation (37 is prime to 64)
    return [scaled[j] for j in order]
