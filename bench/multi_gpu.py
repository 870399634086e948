"""Multi-GPU scaling: the same candidates judged by a `JudgePool` on 1 GPU and on every visible GPU, one run.

Run A uses `JudgePool(gpus=1)`, run B `JudgePool(gpus=None)` (all visible GPUs); both start cold (fresh build-cache
and TRITON_CACHE_DIR each), and each is timed from pool construction to close. Prints, per run, the GPUs used,
correct count, wall seconds and candidates per minute; then the throughput ratio (all GPUs / 1 GPU) and the
verdicts' agreement: status per candidate, with each disagreement listed. For candidates ok in both runs, the
speedup_eager ratio between runs is printed too, informative only (timing noise): agreement is judged on status.
Default: 16 CUDA + 16 Triton candidates from `throughput_cases` (32). Never enable NVLink multicast on the host
(NCCL_NVLS_ENABLE=0; irrelevant here, as the judges do not talk to one another).

    python bench/multi_gpu.py --out r.json                       # multi-GPU host (e.g. nvidia-h200-x2), 16 + 16
    python bench/multi_gpu.py --device cpu --n 4 --out r.json    # plumbing: Triton interpreter only

On `--device cpu` CUDA candidates are dropped and "1 GPU" and "all GPUs" are the same CPU pool: that run checks the
script, not the ratio.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def judge_all(items: list[tuple[str, str, str, str]], device: str, work: Path, gpus: int | None) -> tuple[dict, list]:
    """Judge `items` with a cold `JudgePool` on `gpus` GPUs (None: all visible); the wall time covers pool
    construction, `judge_many` and close."""
    from kernelzero.judge import JudgeOptions
    from kernelzero.judge.pool import JudgePool
    from kernelzero.tasks import Task

    work.mkdir(parents=True)
    os.environ["TRITON_CACHE_DIR"] = str(work / "triton-cache")  # cold (sandboxed workers keep their own per job)
    tasks: dict[str, Task] = {}
    for name, task_src, _, _ in items:
        if task_src not in tasks:
            path = work / f"{name}_task.py"
            path.write_text(task_src)
            tasks[task_src] = Task.from_file(path)
    opts = JudgeOptions(device=device, compile_baseline=False)
    t0 = time.perf_counter()
    with JudgePool(opts, gpus=gpus, cache_dir=str(work / "build-cache")) as pool:
        verdicts = pool.judge_many([(tasks[t], c, b) for _, t, c, b in items])
        n_gpus = len(pool.judges)
    wall = time.perf_counter() - t0
    for (name, *_), v in zip(items, verdicts):
        if not v.correct:
            print(f"   {name}: {v.status} ({v.guard}) {v.feedback[:300]}")
    correct = sum(v.correct for v in verdicts)
    return {"gpus": n_gpus, "correct": correct, "n": len(items), "wall_s": wall,
            "per_min": 60 * len(items) / wall}, verdicts  # fmt: skip


def agreement(items: list[tuple[str, str, str, str]], one: list, every: list) -> tuple[dict, list[dict]]:
    """Status agreement per candidate, and the speedup_eager ratio for candidates ok (and timed) in both runs."""
    rows, disagree, log_ratios = [], [], []
    for (name, _, _, backend), a, b in zip(items, one, every):
        rows.append({"name": name, "backend": backend, "status_1": a.status, "status_all": b.status,
                     "speedup_1": a.speedup_eager, "speedup_all": b.speedup_eager})  # fmt: skip
        if a.status != b.status:
            disagree.append({"name": name, "status_1": a.status, "guard_1": a.guard, "status_all": b.status,
                             "guard_all": b.guard})  # fmt: skip
        elif a.correct and a.speedup_eager and b.speedup_eager:
            log_ratios.append(abs(math.log(b.speedup_eager / a.speedup_eager)))
    return {"agree": len(items) - len(disagree), "n": len(items), "disagreements": disagree,
            "speedup_pairs": len(log_ratios),
            "speedup_median_abs_log_ratio": statistics.median(log_ratios) if log_ratios else None,
            "speedup_max_abs_log_ratio": max(log_ratios) if log_ratios else None}, rows  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.splitlines()[1:]))  # fmt: skip
    ap.add_argument("--device", default="auto", choices=["auto", "cuda", "cpu"],
                    help="auto: cuda if a GPU is visible; cpu: Triton under the interpreter (plumbing)")  # fmt: skip
    ap.add_argument("--n", type=int, default=16, help="candidates per backend (at most 20; default 16)")
    ap.add_argument("--backends", default="cuda,triton", help="comma-separated; cuda is dropped on cpu")
    ap.add_argument("--out", default=None, help="write the figures and per-candidate rows as JSON here")
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="kz-multi-gpu-"))
    import torch

    device = args.device if args.device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"
    from throughput_cases import cases

    wanted = [b for b in args.backends.split(",") if b]
    if device == "cpu" and "cuda" in wanted:
        print("device cpu: CUDA candidates dropped (no nvcc build or GPU here); Triton runs under the interpreter")
    backends = [b for b in wanted if not (b == "cuda" and device == "cpu")]
    items = [c for c in cases(args.n, args.n, small=device == "cpu") if c[3] in backends]
    if not items:
        sys.exit(f"no candidates for backends {wanted} on {device}")
    n_visible = torch.cuda.device_count() if device == "cuda" else 0
    print(f"{len(items)} candidates ({', '.join(backends)}), device {device}, {n_visible} GPUs visible, "
          f"{os.cpu_count()} CPUs", flush=True)  # fmt: skip
    if device == "cpu":
        print("note: on cpu both runs are the same CPU pool: this checks the script, not the ratio")

    runs, verdicts = {}, {}
    for label, gpus in (("1_gpu", 1), ("all_gpus", None)):
        print(f"== {label}: judging ...", flush=True)
        runs[label], verdicts[label] = judge_all(items, device, work / label, gpus)
        r, unit = runs[label], "GPU(s)" if device == "cuda" else "CPU judge"
        print(f"   {r['gpus']} {unit} used, {r['correct']}/{r['n']} correct, {r['wall_s']:.1f} s, "
              f"{r['per_min']:.1f}/min", flush=True)  # fmt: skip

    ratio = runs["all_gpus"]["per_min"] / runs["1_gpu"]["per_min"]
    agree, rows = agreement(items, verdicts["1_gpu"], verdicts["all_gpus"])
    print(f"throughput ratio (all GPUs / 1 GPU): {ratio:.2f}x "
          f"({runs['all_gpus']['gpus']} vs {runs['1_gpu']['gpus']} judges)")  # fmt: skip
    print(f"status agreement: {agree['agree']}/{agree['n']}")
    for d in agree["disagreements"]:
        print(f"   {d['name']}: 1 GPU {d['status_1']} ({d['guard_1']}), all GPUs {d['status_all']} ({d['guard_all']})")
    if agree["speedup_pairs"]:
        med, top = agree["speedup_median_abs_log_ratio"], agree["speedup_max_abs_log_ratio"]
        print(f"speedup_eager between runs, {agree['speedup_pairs']} candidates ok in both (informative only, "
              f"timing noise): median |log ratio| {med:.3f} (x{math.exp(med):.3f}), max {top:.3f} "
              f"(x{math.exp(top):.3f})")  # fmt: skip
    else:
        print("speedup_eager between runs: n/a (no candidate timed in both runs; untimed on cpu)")
    if args.out:
        results = {"device": device, "cpus": os.cpu_count(), "torch": torch.__version__, "gpus_visible": n_visible,
                   "gpu": torch.cuda.get_device_name(0) if device == "cuda" else None, "backends": backends,
                   "runs": runs, "ratio": ratio, "agreement": agree, "candidates": rows}  # fmt: skip
        Path(args.out).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
