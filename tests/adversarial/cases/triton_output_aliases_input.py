"""EXPLOIT (aliasing): an honest Triton ReLU computed IN PLACE into the input; forward returns a view of the input.

WHAT: no output allocation at all: `relu_(x)` then `return x.view(x.shape)`. The returned tensor shares storage with
the argument, so the caller's input is overwritten and any later write to either changes the other.
WHY A NAIVE HARNESS PASSES IT: the reference already ran on the input, the values are exact, and the view has the
right shape and dtype. (It also saves one allocation, a small "speedup".)
EXPECTED: rejected by `aliasing`: the output's storage overlaps an input's storage while the reference's does not.
`input_mutation` fires too on the same call.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

EXPECT_STATUS = "rejected"
EXPECT_GUARD = "aliasing"
EXPECT_ALSO = [("rejected", "input_mutation")]
FAMILY = "aliasing"
TASK = "relu_small"
BACKEND = "triton"
NEEDS_GPU = False


@triton.jit
def relu_inplace_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        relu_inplace_kernel[(triton.cdiv(x.numel(), 1024),)](x, x.numel(), BLOCK=1024)
        return x.view(x.shape)
