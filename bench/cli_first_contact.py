"""How long `kernelzero judge` takes to turn away a task it cannot judge (a syntax error, no `get_inputs`), against
the CLI's own start-up (`kernelzero --version`) and a whole CPU judgement of a correct candidate, all as fresh
processes, the way a user meets them. Target: under 2 s on CPU for the malformed tasks (before the checks moved in
front of the judge, each waited for the sandboxed reference: 6-25 s, then `infra_error`).

    python bench/cli_first_contact.py                          # this checkout
    python bench/cli_first_contact.py --src /tmp/kz/before/src # another checkout's package, for a before/after
    python bench/cli_first_contact.py --repeat 5 --no-full     # more runs; skip the whole judgement

Prints one line per case: median seconds over the runs, the exit code, the ratio to start-up, and the first line
the command printed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures" / "judge"
TASK = (FIX / "relu_task.py").read_text()
CASES = {
    "syntax error": "import torch\nclass Model(torch.nn.Module:\n    pass\n",
    "no get_inputs": TASK.split("def get_inputs")[0] + "def get_init_inputs():\n    return []\n",
}


def run(src: Path, args: list[str]) -> tuple[float, int, str]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "kernelzero.cli", *args], capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - start
    lines = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.strip() and not ln.startswith("judge: ")]
    return seconds, proc.returncode, lines[0] if lines else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--src", type=Path, default=ROOT / "src", help="the src/ folder holding kernelzero")
    parser.add_argument("--repeat", type=int, default=3, help="runs per case (median reported)")
    parser.add_argument("--no-full", dest="full", action="store_false", help="skip the whole CPU judgement")
    a = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        solution = str(FIX / "relu_triton_ok.py")
        cases: dict[str, list[str]] = {"start-up (--version)": ["--version"]}
        for name, source in CASES.items():
            path = Path(tmp) / f"{name.replace(' ', '_')}.py"
            path.write_text(source)
            cases[f"judge, task with {name}"] = ["judge", str(path), solution, "--device", "cpu"]
        if a.full:
            task = Path(tmp) / "relu_task.py"
            task.write_text(TASK)
            cases["judge, correct candidate (whole)"] = ["judge", str(task), solution, "--device", "cpu"]
        base = None
        print(f"{a.src} on {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; median of {a.repeat}")
        for name, args in cases.items():
            runs = [run(a.src, args) for _ in range(a.repeat if "whole" not in name else 1)]
            seconds = statistics.median(r[0] for r in runs)
            base = base or seconds
            code, first = runs[-1][1], runs[-1][2]
            print(f"{name:<36} {seconds:6.2f} s  exit {code}  x{seconds / base:4.1f}  {first[:110]}")


if __name__ == "__main__":
    main()
