"""The 6-8 GB level-1 KernelBench tasks on one GPU: our judge against KernelBench's own eval, task by task.

KernelBench's largest level-1 tasks move 6-8 GB of fp32 per call (4096 x 393216 activations, RMS norm of
112 x 64 x 512 x 512, a sum over 128 x 4096 x 4095). For each task, with our solution for it
(`bench/kb_solutions_large/` or `bench/kb_solutions/`):

(a) ours: one `JudgePool` (torch.compile baseline off unless `--compile-baseline`), warmed first by judging a tiny
    inline Triton task (workers started, torch and Triton imported), then each big task judged once, in sequence,
    its reference never computed beforehand: the wall seconds from submit to verdict include the reference run.
    Recorded per task: status, guard, wall seconds, `stage_s`, candidate and reference medians, `speedup_eager`,
    `memory` (peak GB per worker).
(b) KernelBench's way (`judge_throughput.kernelbench_way`, fresh process per candidate as its eval script does):
    import, 5 correctness trials at atol=rtol=1e-2, 100 timed calls; wall seconds and whether it passed. Slow
    (70-110 s per task on an H200): `--skip-kernelbench` leaves it out.

Expected: 22_Tanh, 24_LogSoftmax, 36_RMSNorm_ and 47_Sum_reduction_over_a_dimension `ok`; 19_ReLU and 23_Softmax
`infra_error` with guard `degenerate` (ReLU's inputs are all positive, so the identity passes; Softmax's outputs
are ~2.5e-6, under the tolerance, so zeros pass). Exits 1 if any of ours differs from that or takes more than
10 s wall (each is printed), 2 on bad arguments (before torch is imported).

    KERNELBENCH_DIR=/path/to/KernelBench python bench/kb_big.py --out results/          # all six, both ways
    python bench/kb_big.py --kernelbench .kb/KernelBench --skip-kernelbench --tasks 22_Tanh,36_RMSNorm_
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOLUTION_DIRS = (HERE / "kb_solutions_large" / "level1", HERE / "kb_solutions" / "level1")
# task -> (status, guard) our judge should return at KernelBench's real sizes
EXPECTED: dict[str, tuple[str, str | None]] = {
    "22_Tanh": ("ok", None),
    "24_LogSoftmax": ("ok", None),
    "36_RMSNorm_": ("ok", None),
    "47_Sum_reduction_over_a_dimension": ("ok", None),
    "19_ReLU": ("infra_error", "degenerate"),
    "23_Softmax": ("infra_error", "degenerate"),
}
MAX_WALL_S = 10.0

WARM_TASK = """import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x):
        return x * 2.0


def get_inputs():
    return [torch.rand(1024, 1024)]


def get_init_inputs():
    return []
"""

WARM_SOLUTION = '''"""x * 2 in one Triton kernel: warms the pool's workers before the big tasks."""
import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _scale(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        _scale[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
        return out
'''


def solution_path(task: str) -> Path | None:
    return next((d / f"{task}.py" for d in SOLUTION_DIRS if (d / f"{task}.py").is_file()), None)


def parse_args(argv: list[str] | None = None) -> tuple[argparse.Namespace, Path, list[str]]:
    """Arguments, the KernelBench root and the task names; a bad one exits 2 with one line (torch not imported)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", default=",".join(EXPECTED), help=f"comma-separated, of: {', '.join(EXPECTED)}")
    ap.add_argument("--kernelbench", default=os.environ.get("KERNELBENCH_DIR"), help="KernelBench checkout "
                    "(default $KERNELBENCH_DIR)")  # fmt: skip
    ap.add_argument("--out", type=Path, default=None, help="folder for kb_big.json (created if missing)")
    ap.add_argument("--skip-kernelbench", action="store_true", help="only our judge (KernelBench's way is slow)")
    ap.add_argument(
        "--kernelbench-tasks",
        default=None,
        help="comma-separated subset of --tasks that KernelBench's "
        "way also judges (default: all of them; each takes 70-110 s)",
    )
    ap.add_argument("--compile-baseline", action="store_true", help="also time torch.compile of each reference")
    args = ap.parse_args(argv)
    from kernelzero.tasks import kernelbench_root  # imports no torch

    def fail(msg: str):
        print(f"kb_big: {msg}", file=sys.stderr)
        sys.exit(2)

    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    unknown = [t for t in tasks if t not in EXPECTED]
    if not tasks or unknown:
        fail(f"--tasks: unknown {', '.join(unknown) or '(none given)'}; choose from {', '.join(EXPECTED)}")
    args.kb_tasks = (
        tasks if args.kernelbench_tasks is None else [t.strip() for t in args.kernelbench_tasks.split(",") if t.strip()]
    )
    if set(args.kb_tasks) - set(tasks):
        fail(f"--kernelbench-tasks: not in --tasks: {', '.join(sorted(set(args.kb_tasks) - set(tasks)))}")
    if not args.kernelbench:
        fail("set $KERNELBENCH_DIR or --kernelbench to a KernelBench checkout")
    root = kernelbench_root(args.kernelbench)
    if root is None:
        fail(f"--kernelbench {args.kernelbench}: not a KernelBench checkout (no level1.. folders)")
    missing = [t for t in tasks if not (root / "level1" / f"{t}.py").is_file() or solution_path(t) is None]
    if missing:
        fail(f"no task file under {root / 'level1'} or no solution for: {', '.join(missing)}")
    if args.out is not None and args.out.exists() and not args.out.is_dir():
        fail(f"--out {args.out}: exists and is not a folder")
    return args, root, tasks


def _median(t) -> float | None:
    return None if t is None else t.median_ms


def judge_ours(root: Path, tasks: list[str], compile_baseline: bool) -> tuple[dict, list[dict]]:
    """(warm-up record, one record per task): each big task judged once, in sequence, by one warmed pool."""
    from kernelzero.judge import JudgeOptions
    from kernelzero.judge.pool import JudgePool
    from kernelzero.tasks import Task

    rows = []
    with JudgePool(JudgeOptions(compile_baseline=compile_baseline)) as pool:
        t0 = time.perf_counter()
        v = pool.judge(Task(name="warm_scale", source=WARM_TASK), WARM_SOLUTION, "triton")
        warm = {"status": v.status, "guard": v.guard, "wall_s": round(time.perf_counter() - t0, 2),
                "feedback": v.feedback[:300]}  # fmt: skip
        print(f"warm-up (tiny task): {v.status} in {warm['wall_s']:.1f} s", flush=True)
        for name in tasks:
            task = Task.from_file(root / "level1" / f"{name}.py", origin="kernelbench", level=1)
            source = solution_path(name).read_text()
            t0 = time.perf_counter()
            v = pool.submit(task, source, "triton").result()
            wall = time.perf_counter() - t0
            row = {"task": name, "status": v.status, "guard": v.guard, "wall_s": round(wall, 2),
                   "runtime_ms": _median(v.runtime), "ref_runtime_ms": _median(v.ref_runtime),
                   "compile_runtime_ms": _median(v.compile_runtime), "speedup_eager": v.speedup_eager,
                   "trials": v.trials, "max_abs_err": v.max_abs_err, "stage_s": v.stage_s, "memory": v.memory,
                   "feedback": v.feedback[:500], "env": v.env}  # fmt: skip
            rows.append(row)
            print(f"ours: {name}: {v.status} {v.guard or ''} {wall:.1f} s, speedup {v.speedup_eager}; memory "
                  f"{json.dumps(v.memory)}; stages {json.dumps(v.stage_s)}", flush=True)  # fmt: skip
    return warm, rows


def judge_kernelbench_way(root: Path, tasks: list[str], work: Path) -> dict[str, dict]:
    """KernelBench's eval of each (task, solution), one at a time, each in a fresh process."""
    from judge_throughput import kernelbench_way

    os.environ["TRITON_CACHE_DIR"] = str(work / "triton-cache-kernelbench")  # cold, as our pass was
    out = {}
    for name in tasks:
        (work / name).mkdir(parents=True, exist_ok=True)
        item = (name, (root / "level1" / f"{name}.py").read_text(), solution_path(name).read_text(), "triton")
        r = kernelbench_way([item], "cuda", work / name, "fresh")
        out[name] = {"wall_s": round(r["wall_s"], 2), "correct": r["correct"] == 1}
        print(f"kernelbench way: {name}: correct={out[name]['correct']} in {r['wall_s']:.1f} s", flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    args, root, tasks = parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="kz-kb-big-"))
    os.environ["TRITON_CACHE_DIR"] = str(work / "triton-cache")  # cold: each solution's JIT is in its wall
    import torch

    if not torch.cuda.is_available():
        print("kb_big: no CUDA GPU visible (the big tasks need one; bench/kb_check.py checks solutions on CPU)",
              file=sys.stderr)  # fmt: skip
        return 2
    sys.path.insert(0, str(HERE))
    results: dict = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "cpus": os.cpu_count(),
                     "compile_baseline": args.compile_baseline, "tasks": tasks}  # fmt: skip
    results["warm_up"], ours = judge_ours(root, tasks, args.compile_baseline)  # the pool closes: its GPU memory too
    kb = {} if args.skip_kernelbench else judge_kernelbench_way(root, args.kb_tasks, work)
    results["ours"], results["kernelbench_way"] = ours, kb or None

    bad = []
    print(f"\n{'task':<36} {'status':<12} {'guard':<11} {'wall s':>7} {'speedup':>8}   {'KB-way s':>8} {'KB ok':>6}")
    for row in ours:
        want = EXPECTED[row["task"]]
        name, k = row["task"], kb.get(row["task"])
        speed = f"{row['speedup_eager']:.2f}" if row["speedup_eager"] is not None else "-"
        kb_cols = f"{k['wall_s']:>8.1f} {str(k['correct']):>6}" if k else f"{'-':>8} {'-':>6}"
        print(f"{name:<36} {row['status']:<12} {row['guard'] or '-':<11} {row['wall_s']:>7.1f} {speed:>8}   {kb_cols}")
        if (row["status"], row["guard"]) != want:
            bad.append(f"{name}: got {row['status']}/{row['guard']}, expected {want[0]}/{want[1]}: "
                       f"{row['feedback'].splitlines()[0] if row['feedback'] else ''}")  # fmt: skip
        if row["wall_s"] > MAX_WALL_S:
            bad.append(f"{name}: {row['wall_s']:.1f} s wall, over {MAX_WALL_S:.0f} s")
    results["failures"] = bad
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "kb_big.json").write_text(json.dumps(results, indent=1, default=str))
        print(f"\nwrote {args.out / 'kb_big.json'}")
    for line in bad:
        print(f"FAIL {line}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
