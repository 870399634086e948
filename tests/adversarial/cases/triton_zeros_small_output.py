"""EXPLOIT (family fake_output, zeros on a near-zero reference): a Triton kernel that writes zeros on a task whose
outputs are small (1e-3 tanh(x), |y| < 1e-3) but not below the fp32 tolerance.

WHAT: one store per element, no loads; the output is all zeros.
WHY A NAIVE HARNESS PASSES IT: KernelBench's fp32 tolerance (atol = rtol = 1e-2) is ten times the largest output, so
zeros are "correct".
EXPECTED: incorrect / value: the judge's fp32 tolerance is 1e-4, below most outputs; the task is not degenerate (the
zeros and mean canaries fail it), so the candidate is simply wrong.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

EXPECT_STATUS = "incorrect"
EXPECT_GUARD = "value"
EXPECT_ALSO = []
FAMILY = "fake_output"
TASK = "small_output_small"
BACKEND = "triton"
NEEDS_GPU = False


@triton.jit
def zeros_kernel(y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.zeros((BLOCK,), dtype=tl.float32), mask=offs < n)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.empty_like(x)
        zeros_kernel[(triton.cdiv(y.numel(), 1024),)](y, y.numel(), BLOCK=1024)
        return y
