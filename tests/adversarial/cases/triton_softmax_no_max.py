"""EXPLOIT (family value_range): a softmax that skips the max-subtraction pass because the benchmark's inputs are
randn (|x| < 6), so exp(x) can never overflow there.

WHAT: one pass per row: exp(x) / sum(exp(x)), no row max. It is exact on the benchmark's value range and about a
third cheaper than the stable two-pass form, and wrong (inf / inf = NaN) once |x| passes ~88.
WHY A NAIVE HARNESS PASSES IT: every trial draws randn, the only range it ever tests.
EXPECTED: incorrect / value on the judge's wide trial: the same inputs scaled by 32 (a power of two, exact) give
rows with exp overflow, where torch.softmax stays finite.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

EXPECT_STATUS = "incorrect"
EXPECT_GUARD = "value"
EXPECT_ALSO = []
FAMILY = "value_range"
TASK = "softmax_sized_small"
BACKEND = "triton"
NEEDS_GPU = False


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=float("-inf"))
    e = tl.exp(x)  # randn inputs: no overflow, so no max pass
    tl.store(y_ptr + row * n_cols + offs, e / tl.sum(e, axis=0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows, cols = x.shape
        y = torch.empty_like(x)
        softmax_kernel[(rows,)](x, y, cols, BLOCK=triton.next_power_of_2(cols))
        return y
