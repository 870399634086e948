#!/usr/bin/env bash
# The README's main job on its embedded default: `kernelzero train` with no arguments runs one smoke-scale round of
# the co-evolution loop on CPU (the tiny local model, built on first use; the Triton interpreter as judge) and writes
# the run directory with its report.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh triton,train
out="runs/quickstart-$(date +%Y%m%d-%H%M%S)"
kernelzero train --out "$out"
echo "report: $out/report.md  (a random tiny model writes no valid task or kernel: the numbers are honest zeros)"
