"""The `side_stream` guard under a loaded machine: how often honest small modules read as hidden work, with the wall
rounds' control kernel (`TimingConfig.wall_control`, the default) and without it, and whether a module that does
its work on a side stream is still caught. The baseline (control off) runs in the same process, interleaved.

Load, as a learning study puts on one GPU (its trainers and judge workers): `--gpu-load` processes that each keep the
GPU busy with back-to-back matrix products (the GPU time-sliced between them and this process) and `--cpu-load`
processes spinning on the cores. For each module, each condition (quiet, loaded) and each protocol (control on,
off), `--repeats` runs of the judge's timing protocol (`timing.time_model`, eager: no graphs, as the wall rounds are):

- `relu_small`, `softmax_small`: the realistic mix's small tasks (64 x 256), eager torch, a few microseconds;
- `side_stream`: a matrix product of about 1 ms launched on a stream of its own, the result returned without waiting.
  Under load the events the timed loop reads miss it and the wall does not: the guard must reject it there. Quiet,
  on an H100, the product holds every SM, so the current stream's own op waits behind it and the events' span takes
  in most of it (wall - span 0.67 ms, under the span): the timing counts the work and the rule, rightly, stays quiet.

Prints per row how many runs the guard's rule flags (`wall.hides_work` on the medians `time_model` returns), the
median of wall less span, of the control's excess taken out and of the host's wait for a CPU. In the second GPU
study (four at once on an H100, before the control) honest 13 us kernels read 0.29 ms of wall and 27-88 of 768
rollouts a run were rejected.

    python bench/side_stream_load.py --out side_stream_load.json     # an H100: about 2 minutes
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

MODULES = ("relu_small", "softmax_small", "side_stream")


def _gpu_load(stop) -> None:
    import torch

    a = torch.randn(2048, 2048, device="cuda")
    while not stop.is_set():
        for _ in range(20):
            a = (a @ a).clamp_(-1, 1)
        torch.cuda.synchronize()


def _cpu_load(stop) -> None:
    while not stop.is_set():
        pass


def _modules() -> dict:
    """name -> (module, input sets): our own trusted modules, nothing judged."""
    import torch
    from timing_probe import _module  # the mix's small task, built from our own task text

    out = {}
    for name, op in (("relu_small", "relu"), ("softmax_small", "softmax")):
        torch.manual_seed(0)
        model, get_inputs = _module(op)
        out[name] = (model, [[t.cuda() for t in get_inputs()] for _ in range(3)])
    side, w = torch.cuda.Stream(), torch.randn(4096, 4096, device="cuda")

    def hidden(x):  # the work on a stream of its own, not waited for: what the guard is for
        with torch.cuda.stream(side):
            (w @ w).sum()
        return x * 2

    out["side_stream"] = (hidden, [[torch.randn(64, 256, device="cuda")] for _ in range(3)])
    return out


def _run(model, sets: list, control: bool) -> dict:
    import torch

    from kernelzero.judge.sandbox.harness import Bound
    from kernelzero.judge.timing import time_model
    from kernelzero.judge.wall import hides_work

    cfg = {"graphs": False, "wall_control": control, "budget_s": 0.05}
    out = time_model(torch, Bound(torch), model, sets, cfg)
    wall, span = out["wall"]["median_ms"], out["span"]["median_ms"]
    return {"flagged": hides_work(wall, span), "hidden_ms": wall - span, "control_ms": out["wall_control_ms"],
            "waited_ms": out["wall_waited_ms"], "rounds": out["wall_rounds"]}  # fmt: skip


def measure(modules: dict, repeats: int) -> dict:
    rows = {}
    for name, (model, sets) in modules.items():
        for control in (True, False):
            rows[f"{name} control={'on' if control else 'off'}"] = []
        for _ in range(repeats):  # on and off interleaved: both meet the same moments of the load
            for control in (True, False):
                rows[f"{name} control={'on' if control else 'off'}"].append(_run(model, sets, control))
    return rows


def summary(runs: list[dict]) -> dict:
    return {"flagged": sum(r["flagged"] for r in runs), "runs": len(runs),
            "hidden_ms": round(statistics.median(r["hidden_ms"] for r in runs), 4),
            "control_ms": round(statistics.median(r["control_ms"] for r in runs), 4),
            "waited_ms": round(statistics.median(r["waited_ms"] for r in runs), 4),
            "rounds": round(statistics.fmean(r["rounds"] for r in runs), 2)}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=8, help="timings per module, condition and protocol (default 8)")
    ap.add_argument("--gpu-load", type=int, default=4, help="processes keeping the GPU busy (default 4)")
    ap.add_argument("--cpu-load", type=int, default=0,
                    help="processes spinning on the cores (default: one per core)")  # fmt: skip
    ap.add_argument("--out", type=Path, default=None, help="write every run's figures here as JSON")
    args = ap.parse_args(argv)
    if args.repeats < 1 or args.gpu_load < 0 or args.cpu_load < 0:
        print("side_stream_load: --repeats must be >= 1, --gpu-load and --cpu-load >= 0", file=sys.stderr)
        return 2
    import os

    import torch

    if not torch.cuda.is_available():
        print("side_stream_load: no CUDA GPU visible (the guard's figures need one)", file=sys.stderr)
        return 2
    cpu_load = args.cpu_load or os.cpu_count() or 1
    modules = _modules()
    record: dict = {"gpu": torch.cuda.get_device_name(0), "repeats": args.repeats, "gpu_load": args.gpu_load,
                    "cpu_load": cpu_load, "conditions": {}}  # fmt: skip
    t0 = time.perf_counter()
    record["conditions"]["quiet"] = measure(modules, args.repeats)
    ctx = multiprocessing.get_context("spawn")
    stop = ctx.Event()
    loaders = [ctx.Process(target=_gpu_load, args=(stop,), daemon=True) for _ in range(args.gpu_load)]
    loaders += [ctx.Process(target=_cpu_load, args=(stop,), daemon=True) for _ in range(cpu_load)]
    for p in loaders:
        p.start()
    time.sleep(5.0)  # the GPU loaders' CUDA start
    try:
        record["conditions"]["loaded"] = measure(modules, args.repeats)
    finally:
        stop.set()
        for p in loaders:
            p.join(10)
            if p.is_alive():
                p.terminate()
    record["wall_s"] = round(time.perf_counter() - t0, 1)
    print(f"{'condition':<8} {'module, protocol':<28} flagged  wall-span  control  waited  rounds (medians, ms)")
    for cond, rows in record["conditions"].items():
        for name, runs in rows.items():
            s = summary(runs)
            print(f"{cond:<8} {name:<28} {s['flagged']:>3}/{s['runs']:<3} {s['hidden_ms']:>9.4f} "
                  f"{s['control_ms']:>8.4f} {s['waited_ms']:>7.4f} {s['rounds']:>6}")  # fmt: skip
    print(f"({record['wall_s']} s; {args.gpu_load} GPU loaders, {cpu_load} CPU spinners)")
    if args.out:
        args.out.write_text(json.dumps(record, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
