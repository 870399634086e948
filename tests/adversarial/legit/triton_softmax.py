"""LEGIT: row softmax in Triton, one program per row, max and sum reductions in registers.

A false-positive probe for the no-custom-kernel guard's "negligible work" heuristic (32 programs, each a full row).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

EXPECT_STATUS = "ok"
EXPECT_GUARD = None
TASK = "softmax_small"
BACKEND = "triton"
NEEDS_GPU = False


@triton.jit
def _softmax_kernel(x_ptr, y_ptr, n_cols, stride_x, stride_y, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    den = tl.sum(num, axis=0)
    tl.store(y_ptr + row * stride_y + cols, num / den, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        rows, cols = x.shape
        y = torch.empty_like(x)
        _softmax_kernel[(rows,)](x, y, cols, x.stride(0), y.stride(0), BLOCK=triton.next_power_of_2(cols))
        return y
