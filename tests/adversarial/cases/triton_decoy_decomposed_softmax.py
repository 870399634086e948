"""EXPLOIT (family library_alias, the op rebuilt from other library ops): a decoy Triton launch beside a softmax
written as torch.exp / amax / sum / div, so the task's own op (aten._softmax) never runs.

WHAT: every element is computed by torch (four library passes over the input); the kernel touches one element.
WHY A NAIVE HARNESS PASSES IT: the decomposition equals torch.softmax to rounding.
EXPECTED: rejected by `no_custom_kernel`: forward's library compute (non-plumbing aten ops) covers at least the
reference's whole compute volume, so torch, not the candidate's kernel, did the task.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

EXPECT_STATUS = "rejected"
EXPECT_GUARD = "no_custom_kernel"
EXPECT_ALSO = []
FAMILY = "library_alias"
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
        scale_kernel[(1,)](self.scratch, 1, BLOCK=16)
        e = torch.exp(x - x.amax(dim=1, keepdim=True))
        return e / e.sum(dim=1, keepdim=True)
