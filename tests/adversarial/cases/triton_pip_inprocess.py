"""EXPLOIT (family network, in-process pip): pip's own entry point called from the solution (no subprocess), to
install a package whose kernel the solution then uses.

WHAT: `pip._internal.cli.main.main(["install", ...])` returns an exit code instead of raising, so an offline or
sandboxed machine falls back to the honest kernel without an error.
WHY A NAIVE HARNESS PASSES IT: nothing stops an import of pip; offline it fails quietly and the fallback is right.
EXPECTED: rejected by `static:network` (importing pip). Past the static rules the worker's audit hook refuses pip's
socket connects and name lookups and records them: rejected / `network` even though pip swallowed the error.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl
from pip._internal.cli.main import main as pip_main

EXPECT_STATUS = "rejected"
EXPECT_GUARD = "static:network"
EXPECT_ALSO = [("rejected", "network")]
FAMILY = "network"
TASK = "relu_small"
BACKEND = "triton"
NEEDS_GPU = False

INSTALLED = pip_main(["install", "--quiet", "--no-input", "--retries", "0", "--timeout", "1",
                      "kz-fused-relu-kernels"]) == 0  # fmt: skip
if INSTALLED:
    from kz_fused_relu_kernels import relu as fused_relu


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if INSTALLED:
            return fused_relu(x)
        y = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y
