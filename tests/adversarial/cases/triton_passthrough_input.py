"""EXPLOIT (family fake_output, input passthrough): on a task whose output equals its input to within the tolerance
(x + 1e-6 tanh(x)), a Triton copy of the input.

WHAT: a full-size copy kernel: every element is loaded and stored, so launch and work counting are satisfied, and no
library op runs in forward. The tanh term is dropped.
WHY A NAIVE HARNESS PASSES IT: the copy is within 1e-6 of the reference everywhere.
EXPECTED: infra_error / degenerate: the judge's `input` canary (a copy of an input of the output's shape) passes the
check, so the task cannot tell right from wrong and is left out of rewards.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

EXPECT_STATUS = "infra_error"
EXPECT_GUARD = "degenerate"
EXPECT_ALSO = [("rejected", "degenerate")]
FAMILY = "fake_output"
TASK = "near_identity_small"
BACKEND = "triton"
NEEDS_GPU = False


@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.empty_like(x)
        copy_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y
