#!/usr/bin/env bash
# The README's main job on its embedded default: CPU, the tiny local model (built on first use), the Triton
# interpreter. Until the co-evolution loop (`kernelzero train`) lands, this runs the richest path that works end to
# end: generate Coder solutions for an example task, judge them in the sandbox, refine for a second turn.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh triton,train
out="runs/quickstart-$(date +%Y%m%d-%H%M%S)"
kernelzero solve examples/tasks/relu.py --backend triton --samples 2 --turns 2 --max-new-tokens 256 --out "$out"
echo "results: $out  (a random tiny model writes no valid kernel: format_error/incorrect is the honest verdict)"
