"""Argmax over one dimension: a grid over (leading index, column block), each program streaming the reduced dim.

Expected: incorrect. DELIBERATELY INCORRECT: a lane records the winning row's index within its tile (`rows`) instead
of its index along the reduced dim (`r0 + rows`), so every answer comes out modulo the 32-row tile; wrong on almost
every column of KernelBench's 4096-long reduced dim (argmax is int64 and compared exactly).
Otherwise a sound design: a (BLOCK_R, BLOCK_C) running (max, index) per lane with a strict `>` so each lane keeps
its first maximum, then per column the smallest index among the lanes holding the column's maximum (torch returns
the first maximal index); int64 base offsets for the > 2**31-element input.
"""

import math

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _argmax_dim_kernel(x_ptr, out_ptr, n_red, n_inner, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    pid_o = tl.program_id(axis=0)
    pid_c = tl.program_id(axis=1)
    x_base = x_ptr + pid_o.to(tl.int64) * n_red * n_inner
    rows = tl.arange(0, BLOCK_R)
    cols = pid_c * BLOCK_C + tl.arange(0, BLOCK_C)
    col_mask = cols < n_inner
    best = tl.full((BLOCK_R, BLOCK_C), float("-inf"), dtype=tl.float32)
    best_idx = tl.zeros((BLOCK_R, BLOCK_C), dtype=tl.int32)
    for r0 in range(0, n_red, BLOCK_R):
        r = r0 + rows
        mask = (r[:, None] < n_red) & col_mask[None, :]
        x = tl.load(x_base + r[:, None] * n_inner + cols[None, :], mask=mask, other=float("-inf"))
        take = x > best
        best = tl.where(take, x, best)
        best_idx = tl.where(take, rows[:, None], best_idx)  # the bug: should be r[:, None]
    col_max = tl.max(best, axis=0)
    idx = tl.min(tl.where(best == col_max[None, :], best_idx, n_red), axis=0)
    tl.store(out_ptr + pid_o.to(tl.int64) * n_inner + cols, idx.to(tl.int64), mask=col_mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        dim = self.dim % x.ndim
        n_outer, n_red, n_inner = math.prod(x.shape[:dim]), x.shape[dim], math.prod(x.shape[dim + 1 :])
        out = torch.empty((*x.shape[:dim], *x.shape[dim + 1 :]), device=x.device, dtype=torch.int64)
        if out.numel():
            grid = (n_outer, triton.cdiv(n_inner, 128))
            _argmax_dim_kernel[grid](x, out, n_red, n_inner, BLOCK_R=32, BLOCK_C=128, num_warps=4)
        return out
