"""What a judge worker's start costs: workers forked from a template (`judge/sandbox/template.py`) against workers
started through the exec chain (setpriv, unshare, the shell prelude, a fresh Python importing torch).

Two measures, each mode in alternating rounds in this one process (`KERNELZERO_WORKER_TEMPLATE` is read per start):
- start: `--n` sandboxes spawned one after another, each until its worker waits for its job (torch imported),
  machine-wide busy CPU seconds and wall per start;
- verdicts: `--n` correct Triton ReLU candidates (each a new source: no verdict reused) judged one at a time by one
  CPU judge, its warm workers off so every verdict pays its worker's start; CPU seconds and wall per verdict.
CPU device only (a CUDA worker's CUDA start follows the fork either way); run it on an otherwise idle machine.

    python bench/worker_start.py --n 8 --out bench/results/worker_start_devbox.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

from proc_acct import cpu_seconds  # the machine's busy CPU seconds

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures" / "judge"


def _ready(sb, timeout_s: float = 120.0) -> None:
    """Until the sandbox's worker waits for its job: blocked reading its stdin pipe (its wait channel, read from /proc
    as an outside observer), which it reaches after its limits and torch's import."""
    from kernelzero.judge.sandbox.spawn import descendants

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        kids = descendants(sb._proc.pid)
        if kids:
            try:
                with open(f"/proc/{kids[-1]}/wchan") as f:
                    if "pipe" in f.read():
                        return
            except OSError:
                pass
        time.sleep(0.002)
    raise TimeoutError("a worker did not come up")


def starts(n: int) -> tuple[float, float]:
    from kernelzero.judge.sandbox.process import Sandbox

    c0, t0 = cpu_seconds(), time.perf_counter()
    for _ in range(n):
        sb = Sandbox(job={})
        sb.spawn()
        _ready(sb)
        sb.finish()
        sb.cleanup()
    return (cpu_seconds() - c0) / n, (time.perf_counter() - t0) / n


def verdicts(n: int, tag: str) -> tuple[float, float]:
    from kernelzero.judge import JudgeOptions
    from kernelzero.judge.core import Judge
    from kernelzero.tasks import Task

    judge, task = Judge(JudgeOptions(device="cpu", trials=2)), Task.from_file(FIX / "relu_task.py")
    source = (FIX / "relu_triton_ok.py").read_text()
    c0, t0 = cpu_seconds(), time.perf_counter()
    for i in range(n):
        v = judge.judge(task, f"{source}\n# {tag} {i}\n", "triton")
        if v.status != "ok":
            raise SystemExit(f"worker_start: a correct candidate was judged {v.status}: {v.feedback[:300]}")
    return (cpu_seconds() - c0) / n, (time.perf_counter() - t0) / n


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=8, help="starts and verdicts of each mode per round (default 8)")
    ap.add_argument("--rounds", type=int, default=2, help="alternating rounds of both modes (default 2)")
    ap.add_argument("--out", help="write the figures here as JSON")
    args = ap.parse_args(argv)
    if args.n < 1 or args.rounds < 1:
        print("worker_start: --n and --rounds must be at least 1", file=sys.stderr)
        return 2
    from kernelzero.judge.sandbox.process import isolation_mode

    rows: dict[str, dict[str, list[float]]] = {m: {"start_cpu": [], "start_wall": [], "verdict_cpu": [],
                                                   "verdict_wall": []} for m in ("exec", "template")}  # fmt: skip
    verdicts(1, "warm-up")  # the reference and the template paid before any round
    for r in range(args.rounds):
        for mode in ("exec", "template") if r % 2 == 0 else ("template", "exec"):
            os.environ["KERNELZERO_WORKER_TEMPLATE"] = "1" if mode == "template" else "0"
            cpu, wall = starts(args.n)
            rows[mode]["start_cpu"].append(cpu)
            rows[mode]["start_wall"].append(wall)
            cpu, wall = verdicts(args.n, f"{mode}-{r}")
            rows[mode]["verdict_cpu"].append(cpu)
            rows[mode]["verdict_wall"].append(wall)
            start = rows[mode]["start_cpu"][-1], rows[mode]["start_wall"][-1]
            print(f"round {r} {mode:8s}: start {start[0]:.3f} CPU s / {start[1]:.3f} s wall; "
                  f"verdict {cpu:.3f} CPU s / {wall:.3f} s wall", flush=True)  # fmt: skip
    med = {m: {k: statistics.median(v) for k, v in kv.items()} for m, kv in rows.items()}
    ratio = {k: med["exec"][k] / med["template"][k] for k in med["exec"] if med["template"][k] > 0}
    summary = {"isolation": isolation_mode(), "n": args.n, "rounds": args.rounds, "cores": os.cpu_count(),
               "median": med, "ratio": ratio, "rounds_raw": rows}  # fmt: skip
    e, t = med["exec"], med["template"]
    print(f"per start ({isolation_mode()}): exec chain {e['start_cpu']:.3f} CPU s, {e['start_wall']:.3f} s; "
          f"template {t['start_cpu']:.3f} CPU s, {t['start_wall']:.3f} s")  # fmt: skip
    print(f"per verdict: exec chain {e['verdict_cpu']:.3f} CPU s, {e['verdict_wall']:.3f} s; "
          f"template {t['verdict_cpu']:.3f} CPU s, {t['verdict_wall']:.3f} s")  # fmt: skip
    if args.out:
        Path(args.out).write_text(json.dumps(summary, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
