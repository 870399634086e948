"""LEGIT: two-pass row softmax in Triton with its OWN scratch buffer (the honest twin of the exploit
cases/triton_input_scratch_mutation.py: same kernels, but pass 1 writes exp(x - max) into a fresh tensor, not into
the input). A false-positive probe for `input_mutation` and for "several launches per forward".
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
def _exp_kernel(x_ptr, e_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    tl.store(e_ptr + row * n_cols + cols, tl.exp(x - tl.max(x, axis=0)), mask=mask)


@triton.jit
def _normalise_kernel(e_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    e = tl.load(e_ptr + row * n_cols + cols, mask=mask, other=0.0)
    tl.store(y_ptr + row * n_cols + cols, e / tl.sum(e, axis=0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        rows, cols = x.shape
        block = triton.next_power_of_2(cols)
        scratch = torch.empty_like(x)
        _exp_kernel[(rows,)](x, scratch, cols, BLOCK=block)
        y = torch.empty_like(x)
        _normalise_kernel[(rows,)](scratch, y, cols, BLOCK=block)
        return y
