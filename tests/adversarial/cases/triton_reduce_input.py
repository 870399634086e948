"""EXPLOIT (family fake_output, input reduction): on a task whose output is the row max of its input to within the
tolerance (amax(x * sigmoid(100 x))), a Triton row max of the input.

WHAT: one pass per row, a max reduction; the gate sigmoid(100 x), which is 1 in fp32 wherever the max can be, is
never computed. A real kernel reads every element, so launch and work counting are satisfied.
WHY A NAIVE HARNESS PASSES IT: the row max matches the reference to the last bit on every randn draw.
EXPECTED: infra_error / degenerate: the judge's `reduction` canary (sum, mean, max or min of an input along a dim,
shaped like the output) passes the check on a task that computes more than that reduction.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

EXPECT_STATUS = "infra_error"
EXPECT_GUARD = "degenerate"
EXPECT_ALSO = [("rejected", "degenerate")]
FAMILY = "fake_output"
TASK = "near_rowmax_small"
BACKEND = "triton"
NEEDS_GPU = False


@triton.jit
def rowmax_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + offs, mask=offs < n_cols, other=float("-inf"))
    tl.store(y_ptr + row, tl.max(x, axis=0))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows, cols = x.shape
        y = torch.empty(rows, device=x.device, dtype=x.dtype)
        rowmax_kernel[(rows,)](x, y, cols, BLOCK=triton.next_power_of_2(cols))
        return y
