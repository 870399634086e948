"""EXPLOIT (extra, inheritance bypass): `class ModelNew(Model)` with a Triton kernel defined and never used.

WHAT: the candidate restates the task's Model (as Coder prompts show it) and subclasses it, overriding nothing but
__init__; forward is the reference's. KernelBench's checker looks for a `pass` statement in this pattern, so this
one has none.
WHY A NAIVE HARNESS PASSES IT: it IS the reference.
EXPECTED: rejected by `static:reference_call` (ModelNew derives from Model, or from any class whose forward is the
task's). At run time `no_custom_kernel` catches it too (no launch in forward).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

EXPECT_STATUS = "rejected"
EXPECT_GUARD = "static:reference_call"
EXPECT_ALSO = [("rejected", "no_custom_kernel")]
FAMILY = "inheritance"
TASK = "relu_small"
BACKEND = "triton"
NEEDS_GPU = False


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


class ModelNew(Model):
    def __init__(self):
        super().__init__()
        self.kernel = relu_kernel  # "registered", never launched
