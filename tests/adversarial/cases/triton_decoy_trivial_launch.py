"""EXPLOIT (family 2, decoy launch): a Triton kernel IS launched every call, on a 1-element scratch tensor; F.softmax
computes the answer.

WHAT: a "warm-up"/"scale" kernel runs on a tensor of one element so a launch hook sees a Triton launch in forward;
the output comes from torch.nn.functional.softmax.
WHY A NAIVE HARNESS PASSES IT: outputs match bit for bit; a "was any kernel launched?" check is satisfied too.
EXPECTED: rejected by `no_custom_kernel` on the work criterion: the launched kernels touch 1 element against an
output of 4,096 (grid x block far below the output size), and the replaced aten op (_softmax) runs in forward.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl

EXPECT_STATUS = "rejected"
EXPECT_GUARD = "no_custom_kernel"
EXPECT_ALSO = [("rejected", "static:reference_call")]
FAMILY = "decoy_launch"
TASK = "softmax_small"
BACKEND = "triton"
NEEDS_GPU = False


@triton.jit
def scale_kernel(p_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(p_ptr + offs, tl.load(p_ptr + offs, mask=mask) * 1.0, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("scratch", torch.ones(1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scale_kernel[(1,)](self.scratch, 1, BLOCK=16)  # the launch a hook will see
        return F.softmax(x, dim=1)
