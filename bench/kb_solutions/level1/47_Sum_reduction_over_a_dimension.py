"""Sum over one dimension (keepdim): a grid over (leading index, column block), each program streaming the reduced dim.

Expected: correct. The input is viewed as (outer, n_red, inner) around the reduced dim; program (o, c) owns BLOCK_C
adjacent columns of the kept trailing dims (coalesced loads), walks the reduced dim in BLOCK_R-row tiles into a
(BLOCK_R, BLOCK_C) fp32 accumulator and folds its rows once at the end. KernelBench's 128 x 4096 x 4095 input has
more than 2**31 elements, so each program's base offset is computed in int64.
"""

import math

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _sum_dim_kernel(x_ptr, out_ptr, n_red, n_inner, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    pid_o = tl.program_id(axis=0)
    pid_c = tl.program_id(axis=1)
    x_base = x_ptr + pid_o.to(tl.int64) * n_red * n_inner
    rows = tl.arange(0, BLOCK_R)
    cols = pid_c * BLOCK_C + tl.arange(0, BLOCK_C)
    col_mask = cols < n_inner
    acc = tl.zeros((BLOCK_R, BLOCK_C), dtype=tl.float32)
    for r0 in range(0, n_red, BLOCK_R):
        r = r0 + rows
        mask = (r[:, None] < n_red) & col_mask[None, :]
        acc += tl.load(x_base + r[:, None] * n_inner + cols[None, :], mask=mask, other=0.0)
    tl.store(out_ptr + pid_o.to(tl.int64) * n_inner + cols, tl.sum(acc, axis=0), mask=col_mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        dim = self.dim % x.ndim
        n_outer, n_red, n_inner = math.prod(x.shape[:dim]), x.shape[dim], math.prod(x.shape[dim + 1 :])
        out = torch.empty((*x.shape[:dim], 1, *x.shape[dim + 1 :]), device=x.device, dtype=x.dtype)
        if out.numel():
            # 64 x 256 tiles, 16 warps: 2.31 ms on an H200 at KernelBench's size (32 x 128, 4 warps: 2.57 ms)
            grid = (n_outer, triton.cdiv(n_inner, 256))
            _sum_dim_kernel[grid](x, out, n_red, n_inner, BLOCK_R=64, BLOCK_C=256, num_warps=16)
        return out
