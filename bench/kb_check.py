"""CPU check of `bench/kb_solutions/`: judge each solution against a SHRUNK copy of its KernelBench task.

KernelBench's shapes (4096 x 393216 fp32 for the activations, 8192-wide GEMMs) are far beyond what the Triton
interpreter can run on a CPU, so `shrink_source` rewrites the task's module-level integer size constants
(`batch_size = 4096` -> `batch_size = 63`) in a copy; the solution must not care, since it reads shapes from its
inputs. The KernelBench files are read in place and never copied into this repository.

    KERNELBENCH_DIR=/path/to/KernelBench python bench/kb_check.py [--cap 63] [--workers 2]

Prints one line per solution (task, expected outcome from the solution's docstring, verdict) and exits non-zero if
any verdict differs from what its docstring says ("Expected: correct." / "incorrect." / "degenerate.").
"""

from __future__ import annotations

import argparse
import ast
import os
import sys
import time
from pathlib import Path

SOLUTIONS = Path(__file__).resolve().parent / "kb_solutions"
# Per-task sizes where the generic cap would not exercise the kernel's structure: softmax streams its rows in
# 2048-wide chunks, so a row must span several chunks and end in a partial one.
OVERRIDES = {"23_Softmax": {"dim": 4099}}


def shrink_source(source: str, cap: int = 63, overrides: dict[str, int] | None = None) -> str:
    """Rewrite every module-level `NAME = <int>` with a value above `cap` to `cap` (or `overrides[NAME]`).

    Only plain integer assignments at module level are touched (sizes by KernelBench's convention); floats
    (`multiplier = 2.0`), class bodies and function bodies are left alone. Tuple sizes like `kernel_size = (3, 5)`
    are small already and kept.
    """
    overrides = overrides or {}
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    edits: list[tuple[int, int, int, str]] = []  # (line, col start, col end, new text), one per constant
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        name, value = node.targets[0].id, node.value
        if not (isinstance(value, ast.Constant) and type(value.value) is int):
            continue
        new = overrides.get(name, cap if value.value > cap else None)
        if new is not None:
            edits.append((value.lineno - 1, value.col_offset, value.end_col_offset, str(new)))
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
    for sol in sorted(SOLUTIONS.glob("level*/*.py")):
        task_file = root / sol.parent.name / sol.name
        src = shrink_source(task_file.read_text(), args.cap, OVERRIDES.get(sol.stem))
        requests.append((Task(name=sol.stem, source=src), sol.read_text(), "triton"))
        names.append(f"{sol.parent.name}/{sol.stem}")
    start = time.monotonic()
    with JudgePool(JudgeOptions(device="cpu", trials=3), workers=args.workers) as pool:
        verdicts = pool.judge_many(requests)
    bad = 0
    for name, (_, source, _), v in zip(names, requests, verdicts):
        want = expected(source)
        got = outcome(v)
        bad += got != want
        note = "" if got == want else f"  <-- expected {want}: {v.feedback.splitlines()[0] if v.feedback else ''}"
        print(f"{name:<40} expected {want:<10} got {v.status:<12} {v.guard or '':<10}{note}")
    print(f"{len(requests) - bad}/{len(requests)} as expected in {time.monotonic() - start:.0f} s (CPU, interpreter)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
