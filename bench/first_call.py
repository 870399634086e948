"""Where a fresh worker's first Triton call goes: each step of a cold process timed, outside and inside the sandbox's
namespaces. On the H200 our workers' first call took 6-9 s against ~2 s for a Triton kernel's first call in a plain
process; this splits that figure (import, CUDA context, inputs, Triton driver, compile, launch).

    python bench/first_call.py            # prints one line per mode: step -> seconds
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = r"""
import json, os, sys, time
t = {}
t0 = time.perf_counter()
def mark(name):
    global t0
    now = time.perf_counter(); t[name] = round(now - t0, 3); t0 = now
import torch; mark("import_torch")
torch.cuda.init(); mark("cuda_init")
x = torch.randn(4096 * 4096, device="cuda"); torch.cuda.synchronize(); mark("first_randn (context)")
import triton, triton.language as tl; mark("import_triton")
triton.runtime.driver.active.utils; mark("triton_driver_utils")
@triton.jit
def relu(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=m), 0.0), mask=m)
y = torch.empty_like(x); mark("define_kernel")
relu[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024); torch.cuda.synchronize(); mark("first_call")
relu[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024); torch.cuda.synchronize(); mark("second_call")
print("RESULT " + json.dumps(t))
"""


def run(mode: str) -> dict:
    cache = tempfile.mkdtemp(prefix="kz-first-call-")
    env = {**os.environ, "TRITON_CACHE_DIR": cache, "OMP_NUM_THREADS": "1"}
    script = os.path.join(cache, "child.py")  # Triton reads a kernel's source from its file: no `python -c`
    Path(script).write_text(CHILD)
    cmd = [sys.executable, script]
    if mode == "namespaces":
        cmd = ["unshare", "--pid", "--fork", "--net", "--mount", "--kill-child", "--mount-proc", *cmd]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    wall = time.perf_counter() - t0
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if not lines:
        return {"error": (proc.stderr or proc.stdout)[-600:], "wall": round(wall, 2)}
    return {**json.loads(lines[-1][7:]), "wall": round(wall, 2)}


if __name__ == "__main__":
    for mode in ("plain", "namespaces", "plain"):
        print(mode, json.dumps(run(mode)), flush=True)
