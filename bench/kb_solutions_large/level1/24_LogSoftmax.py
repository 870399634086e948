"""Row log-softmax for very long rows: one program per row, an online max/sum pass, then a write pass.

Expected: correct. Rows are 393,216 wide in KernelBench, so the row is streamed in BLOCK-sized chunks: the first pass
keeps a per-lane running max and a sum of exp(x - max) rescaled whenever the max grows (stable for inputs scaled x32
too), the second writes x - (max + log(sum)), with no exp. Three passes over memory in all (read, read, write).
"""

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _log_softmax_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(axis=0)
    base = row.to(tl.int64) * n_cols  # 4096 x 393216 is near 2**31: keep the row offset in int64
    cols = tl.arange(0, BLOCK)
    m = tl.full([BLOCK], float("-inf"), tl.float32)  # per-lane running max
    s = tl.zeros([BLOCK], tl.float32)  # per-lane running sum of exp(x - m)
    for start in range(0, n_cols, BLOCK):
        mask = start + cols < n_cols
        x = tl.load(x_ptr + base + start + cols, mask=mask, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, x)
        # lanes that have seen nothing yet keep m = -inf: guard the rescale against (-inf) - (-inf)
        scale = tl.where(m_new == float("-inf"), 0.0, tl.exp(m - m_new))
        s = s * scale + tl.where(mask, tl.exp(x - m_new), 0.0)
        m = m_new
    row_max = tl.max(m, axis=0)
    row_sum = tl.sum(tl.where(m == float("-inf"), 0.0, s * tl.exp(m - row_max)), axis=0)
    shift = row_max + tl.log(row_sum)
    for start in range(0, n_cols, BLOCK):
        mask = start + cols < n_cols
        x = tl.load(x_ptr + base + start + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(out_ptr + base + start + cols, x - shift, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int = 1):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dim = self.dim % x.ndim
        xt = x.movedim(dim, -1).contiguous()  # the reduced dim last (a no-op for KernelBench's dim=1 of 2D)
        out = torch.empty_like(xt)
        n_cols = xt.shape[-1]
        n_rows = xt.numel() // n_cols if n_cols else 0
        if n_rows:
            _log_softmax_kernel[(n_rows,)](xt, out, n_cols, BLOCK=4096, num_warps=16)
        return out.movedim(-1, dim)
