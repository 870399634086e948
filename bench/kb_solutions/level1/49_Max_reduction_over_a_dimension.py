"""Max over one dimension: a grid over (leading index, column block), each program streaming the reduced dim.

Expected: incorrect. DELIBERATELY INCORRECT: the tile loop's bound is `n_red - BLOCK_R` instead of `n_red`, so the
last tile of the reduced dim is never read (the last partial tile, or the last full 32 rows when 32 divides the
length, as with KernelBench's 4096). A column whose maximum lies in those rows comes out too small: on
`torch.rand` inputs that is about 1 column in 128 (some 4,000 of the 524,160), and in about half of those the
second-largest value is further below the maximum than the 2e-4 tolerance.
Otherwise the structure of the sum/mean solutions: (BLOCK_R, BLOCK_C) running max, folded once at the end, int64
base offsets for the > 2**31-element input.
"""

import math

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _max_dim_kernel(x_ptr, out_ptr, n_red, n_inner, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    pid_o = tl.program_id(axis=0)
    pid_c = tl.program_id(axis=1)
    x_base = x_ptr + pid_o.to(tl.int64) * n_red * n_inner
    rows = tl.arange(0, BLOCK_R)
    cols = pid_c * BLOCK_C + tl.arange(0, BLOCK_C)
    col_mask = cols < n_inner
    acc = tl.full((BLOCK_R, BLOCK_C), float("-inf"), dtype=tl.float32)
    for r0 in range(0, n_red - BLOCK_R, BLOCK_R):  # the bug: stops one tile early
        r = r0 + rows
        mask = (r[:, None] < n_red) & col_mask[None, :]
        x = tl.load(x_base + r[:, None] * n_inner + cols[None, :], mask=mask, other=float("-inf"))
        acc = tl.maximum(acc, x)
    tl.store(out_ptr + pid_o.to(tl.int64) * n_inner + cols, tl.max(acc, axis=0), mask=col_mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        dim = self.dim % x.ndim
        n_outer, n_red, n_inner = math.prod(x.shape[:dim]), x.shape[dim], math.prod(x.shape[dim + 1 :])
        out = torch.empty((*x.shape[:dim], *x.shape[dim + 1 :]), device=x.device, dtype=x.dtype)
        if out.numel():
            grid = (n_outer, triton.cdiv(n_inner, 128))
            _max_dim_kernel[grid](x, out, n_red, n_inner, BLOCK_R=32, BLOCK_C=128, num_warps=4)
        return out
