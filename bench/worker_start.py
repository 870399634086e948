"""CPU seconds a judge worker's start costs: a fresh Python that imports torch and prewarms as a worker does
(`sandbox.worker.prewarm`), against a fork of one process that did that once (what a worker template would cost).

Machine-wide busy CPU (/proc/stat) over `--n` starts each, on an otherwise idle machine; CPU device only (CUDA cannot
be initialised before a fork). A batch of 64 candidates starts ~72 judge workers, and each candidate worker's start
competes with the builds for the cores.

    python bench/worker_start.py --n 8
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

from judge_throughput import cpu_seconds  # the machine's busy CPU seconds

PREWARM = "import torch; from kernelzero.judge.sandbox.worker import prewarm; prewarm(torch, 'cpu')"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=8, help="starts of each kind (default 8)")
    args = ap.parse_args(argv)
    if args.n < 1:
        print("worker_start: --n must be at least 1", file=sys.stderr)
        return 2
    c0 = cpu_seconds()
    for _ in range(args.n):
        subprocess.run([sys.executable, "-c", PREWARM + "; torch.ones(4).add_(1)"], check=True)
    fresh = (cpu_seconds() - c0) / args.n
    exec(PREWARM, namespace := {})  # this process becomes the template
    torch = namespace["torch"]
    c0 = cpu_seconds()
    for _ in range(args.n):
        pid = os.fork()
        if pid == 0:
            torch.ones(4).add_(1)
            os._exit(0)
        os.waitpid(pid, 0)
    forked = (cpu_seconds() - c0) / args.n
    print(f"CPU seconds per worker start ({args.n} each): fresh process {fresh:.2f}, fork of a prewarmed template "
          f"{forked:.3f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
