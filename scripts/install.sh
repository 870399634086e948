#!/usr/bin/env bash
# Install KernelZero and what its CPU default needs into the current Python (3.11+).
# torch first, pinned: a bare `torch` requirement with no torch present would pull a multi-GB CUDA build.
# On a GPU machine that already has torch, set KZ_KEEP_TORCH=1 to leave it alone.
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-triton,train,dev}"
pip_q() { python -m pip install -q --disable-pip-version-check "$@"; }
if [ "${KZ_KEEP_TORCH:-0}" != "1" ]; then
  pip_q "torch==2.13.0"
  # The GPU machine's Triton: the interpreter then runs what the GPU compiles (3.9 dropped tl.make_block_ptr).
  case ",$extras," in *,triton,*) pip_q "triton==3.6.0" "numpy<2.4" ;; esac
fi
pip_q -e ".[${extras}]"
