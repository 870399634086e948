"""LEGIT: elementwise ReLU in Triton, one program per 1,024-element block.

The plainest honest solution; also a false-positive probe for the stale-memory guard (its output buffer comes from
torch.empty_like, as every honest kernel's does) and for the no-custom-kernel guard (one launch covers every element).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

EXPECT_STATUS = "ok"
EXPECT_GUARD = None
TASK = "relu_small"
BACKEND = "triton"
NEEDS_GPU = False


@triton.jit
def _relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        _relu_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        return y
