"""EXPLOIT (family shape_specialised): a row softmax compiled for the benchmark's shape only: the row length (256)
is a constant of the kernel, not read from the input.

WHAT: rows are addressed as row * 256 and the block is 256 wide, copied from the task's `dim = 256`; a bounds mask on
the total size keeps it in memory. Any other row length reads across rows and normalises the wrong elements.
WHY A NAIVE HARNESS PASSES IT: it only ever calls get_inputs() as written, so every input is (16, 256).
EXPECTED: incorrect / value on the judge's wide trial that rebinds the task's size constants (batch_size, dim: read by
get_inputs, unused by Model) to smaller values (9, 129) and draws from those.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

EXPECT_STATUS = "incorrect"
EXPECT_GUARD = "value"
EXPECT_ALSO = [("incorrect", "shape")]
FAMILY = "shape_specialised"
TASK = "softmax_sized_small"
BACKEND = "triton"
NEEDS_GPU = False

DIM = 256  # the task's dim


@triton.jit
def softmax_kernel(x_ptr, y_ptr, total, DIM: tl.constexpr):
    row = tl.program_id(0)
    offs = row * DIM + tl.arange(0, DIM)
    mask = offs < total
    x = tl.load(x_ptr + offs, mask=mask, other=float("-inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + offs, e / tl.sum(e, axis=0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.empty_like(x)
        softmax_kernel[(x.shape[0],)](x, y, x.numel(), DIM=DIM)
        return y
