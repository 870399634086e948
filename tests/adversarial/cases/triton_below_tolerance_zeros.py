"""EXPLOIT (family 12b, output below tolerance): writes zeros on a task whose outputs are all smaller than the atol.

WHAT: the task is tanh(x) * 1e-5: its output is NOT constant (a constant-output check passes the task) but every
value is below the judge's fp32 atol of 1e-4 (and KernelBench's 1e-2), so zeros are "within tolerance" everywhere.
WHY A NAIVE HARNESS PASSES IT: |ref - 0| <= 1e-5 < atol + rtol*|ref| for every element; so would the judge's
comparison, which is why this needs a guard and not a tighter tolerance.
EXPECTED: rejected by `degenerate`: the judge checks that the reference output is distinguishable from zero (and
from a constant) at its tolerance, i.e. that `allclose(ref, zeros)` / `allclose(ref, ref.mean())` is False; if it
is True the task cannot tell right from wrong.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

EXPECT_STATUS = "infra_error"  # outputs ~1e-5 sit under the fp32 atol of 1e-4: the zeros canary passes the task
EXPECT_GUARD = "degenerate"
EXPECT_ALSO = [("incorrect", "value")]  # what a larger output scale (1e-3) gives under the same atol
FAMILY = "degenerate"
TASK = "tiny_output_small"
BACKEND = "triton"
NEEDS_GPU = False


@triton.jit
def zeros_kernel(y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.zeros((BLOCK,), dtype=tl.float32), mask=offs < n)


class ModelNew(nn.Module):
    def __init__(self, scale: float = 1e-5):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.empty_like(x)
        zeros_kernel[(triton.cdiv(y.numel(), 1024),)](y, y.numel(), BLOCK=1024)
        return y
