"""Row softmax (dim=1) for very long rows: one program per row, an online max/sum pass, then a write pass.

Expected: correct. Rows are 393,216 wide in KernelBench, far past one block, so the row is streamed in BLOCK-sized
chunks; the first pass keeps a running max and a rescaled running sum (the online-softmax recurrence).
"""

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _softmax_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(axis=0)
    base = row * n_cols
    cols = tl.arange(0, BLOCK)
    m = tl.full([BLOCK], float("-inf"), tl.float32)  # per-lane running max
    s = tl.zeros([BLOCK], tl.float32)  # per-lane running sum of exp(x - m)
    for start in range(0, n_cols, BLOCK):
        mask = start + cols < n_cols
        x = tl.load(x_ptr + base + start + cols, mask=mask, other=float("-inf"))
        m_new = tl.maximum(m, x)
        # lanes that have seen nothing yet keep m = -inf: guard the rescale against (-inf) - (-inf)
        scale = tl.where(m_new == float("-inf"), 0.0, tl.exp(m - m_new))
        s = s * scale + tl.where(mask, tl.exp(x - m_new), 0.0)
        m = m_new
    row_max = tl.max(m, axis=0)
    row_sum = tl.sum(tl.where(m == float("-inf"), 0.0, s * tl.exp(m - row_max)), axis=0)
    for start in range(0, n_cols, BLOCK):
        mask = start + cols < n_cols
        x = tl.load(x_ptr + base + start + cols, mask=mask, other=0.0)
        tl.store(out_ptr + base + start + cols, tl.exp(x - row_max) / row_sum, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        n_rows, n_cols = x.shape
        _softmax_kernel[(n_rows,)](x, out, n_cols, BLOCK=2048, num_warps=8)
        return out
