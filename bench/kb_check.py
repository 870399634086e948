"""CPU check of `bench/kb_solutions/`: judge each solution against a SHRUNK copy of its KernelBench task.

KernelBench's shapes (128 x 4096 x 4095 fp32 reduction inputs, 8192-wide GEMMs, a 2048 x 1048576 matrix) are far
beyond what the Triton interpreter can run on a CPU, so `shrink_source` rewrites the task's module-level integer size
constants (`batch_size = 4096` -> `batch_size = 63`, `K = 131072 * 8` -> `K = 63`, `input_shape = (32768,)` ->
`input_shape = (63,)`) in a copy; the solution must not care, since it reads shapes from its inputs. The KernelBench
files are read in place and never copied into this repository.

    KERNELBENCH_DIR=/path/to/KernelBench python bench/kb_check.py [--solutions DIR] [--cap 63] [--workers 2]

`--solutions` defaults to `bench/kb_solutions` (the set judged on the GPU at real sizes); `bench/kb_solutions_large`
holds the solutions whose real-size outputs are too big for the judge (see bench/README.md) and is checked the same
way. Prints one line per solution (task, expected outcome from the solution's docstring, verdict) and exits non-zero
if any verdict differs from what its docstring says ("Expected: correct." / "incorrect." / "degenerate.").
"""

from __future__ import annotations

import argparse
import ast
import os
import sys
import time
from pathlib import Path

SOLUTIONS = Path(__file__).resolve().parent / "kb_solutions"
# Per-task sizes where the generic cap would not exercise the kernel's structure: a streamed or tiled dimension must
# span several blocks (or chunks) and end in a partial one. Softmax streams rows in 2048-wide chunks; the dim-1
# reductions tile the reduced dim by 32 rows and the kept one by 128 columns (the sum by 64 and 256); layer norm
# splits each row into 16384-element chunks; the two losses into 16384-element chunks of the flattened input (hinge
# needs the two sizes equal: its targets broadcast along the last dim); the mat-vec streams K in 4096-wide blocks.
# Log-softmax streams rows in 4096-wide chunks; RMS norm tiles the features by 64 (100: the looped path, two tiles)
# and the spatial positions by 64.
_REDUCE = {"dim1": 100, "dim2": 300}
_LOSS = {"batch_size": 200, "input_shape": (200,)}
OVERRIDES: dict[str, dict[str, int | tuple[int, ...]]] = {
    "23_Softmax": {"dim": 4099},
    "24_LogSoftmax": {"dim": 9000},
    "36_RMSNorm_": {"features": 100, "dim1": 10, "dim2": 30},
    "47_Sum_reduction_over_a_dimension": _REDUCE,
    "48_Mean_reduction_over_a_dimension": _REDUCE,
    "49_Max_reduction_over_a_dimension": _REDUCE,
    "51_Argmax_over_a_dimension": _REDUCE,
    "53_Min_reduction_over_a_dimension": _REDUCE,
    "40_LayerNorm": {"features": 9},
    "94_MSELoss": _LOSS,
    "100_HingeLoss": _LOSS,
    "4_Matrix_vector_multiplication_": {"K": 10000},
}

_INT_OPS = {ast.Add: int.__add__, ast.Sub: int.__sub__, ast.Mult: int.__mul__, ast.FloorDiv: int.__floordiv__,
            ast.Pow: int.__pow__}  # fmt: skip


def _int_value(node: ast.expr) -> int | None:
    """The value of an integer constant or of integer arithmetic on constants (`256 * 8`); None for anything else."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        v = _int_value(node.operand)
        return None if v is None else -v
    if isinstance(node, ast.BinOp) and type(node.op) in _INT_OPS:
        a, b = _int_value(node.left), _int_value(node.right)
        if a is None or b is None or (isinstance(node.op, ast.Pow) and not 0 <= b <= 64):
            return None
        return _INT_OPS[type(node.op)](a, b)
    return None


def shrink_source(source: str, cap: int = 63, overrides: dict[str, int | tuple[int, ...]] | None = None) -> str:
    """Rewrite every module-level integer size above `cap` to `cap` (or to `overrides[NAME]`).

    Sizes by KernelBench's convention are module-level assignments of an integer (`dim = 393216`), integer arithmetic
    (`K = 131072 * 8`) or a tuple of integers (`input_shape = (32768,)`, capped element by element; `kernel_size =
    (3, 5)` is small already and kept). Floats (`multiplier = 2.0`), class bodies and function bodies are left alone.
    """
    overrides = overrides or {}
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    edits: list[tuple[int, int, int, str]] = []  # (line, col start, col end, new text), one per constant
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        name, value = node.targets[0].id, node.value
        if value.lineno != value.end_lineno:
            continue  # sizes are one-liners; a multi-line value is not one
        if isinstance(value, ast.Tuple):
            elts = [_int_value(e) for e in value.elts]
            if not elts or None in elts:
                continue
            capped = tuple(min(v, cap) for v in elts)
            new = overrides.get(name, capped if capped != tuple(elts) else None)
        else:
            v = _int_value(value)
            if v is None:
                continue
            new = overrides.get(name, cap if v > cap else None)
        if new is not None:
            edits.append((value.lineno - 1, value.col_offset, value.end_col_offset, repr(new)))
    for line, start, end, text in sorted(edits, reverse=True):
        lines[line] = lines[line][:start] + text + lines[line][end:]
    return "".join(lines)


def expected(solution_source: str) -> str:
    """`correct`, `incorrect` or `degenerate` (a correct solution of a task the judge's canaries flag), from the
    solution's docstring ("Expected: correct.")."""
    doc = ast.get_docstring(ast.parse(solution_source)) or ""
    return next((w for w in ("incorrect", "degenerate") if f"Expected: {w}" in doc), "correct")


def outcome(verdict) -> str:
    """The verdict in `expected`'s words; any other status is returned as is."""
    if verdict.correct:
        return "correct"
    if verdict.status == "infra_error" and verdict.guard == "degenerate":
        return "degenerate"
    return verdict.status


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernelbench-dir", default=os.environ.get("KERNELBENCH_DIR"))
    ap.add_argument("--solutions", type=Path, default=SOLUTIONS, help="folder of level*/NAME.py solutions")
    ap.add_argument("--cap", type=int, default=63)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    from kernelzero.judge import JudgeOptions
    from kernelzero.judge.pool import JudgePool
    from kernelzero.tasks import Task, kernelbench_root

    root = kernelbench_root(args.kernelbench_dir) if args.kernelbench_dir else None
    if root is None:
        print("kb_check: set $KERNELBENCH_DIR or --kernelbench-dir to a KernelBench checkout", file=sys.stderr)
        return 2
    requests, names = [], []
    sols = sorted(args.solutions.glob("level*/*.py"))
    if not sols:
        print(f"kb_check: no level*/*.py solutions under {args.solutions}", file=sys.stderr)
        return 2
    for sol in sols:
        task_file = root / sol.parent.name / sol.name
        src = shrink_source(task_file.read_text(), args.cap, OVERRIDES.get(sol.stem))
        requests.append((Task(name=sol.stem, source=src), sol.read_text(), "triton"))
        names.append(f"{sol.parent.name}/{sol.stem}")
    start = time.monotonic()
    with JudgePool(JudgeOptions(device="cpu", trials=3), workers=args.workers) as pool:
        verdicts = pool.judge_many(requests)
    bad, width = 0, max(map(len, names))
    for name, (_, source, _), v in zip(names, requests, verdicts):
        want = expected(source)
        got = outcome(v)
        bad += got != want
        note = "" if got == want else f"  <-- expected {want}: {v.feedback.splitlines()[0] if v.feedback else ''}"
        print(f"{name:<{width}} expected {want:<10} got {v.status:<12} {v.guard or '':<10}{note}")
    print(f"{len(requests) - bad}/{len(requests)} as expected in {time.monotonic() - start:.0f} s (CPU, interpreter)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
