"""EXPLOIT (family library_alias, aten under its own name): a decoy Triton launch on a 1-element scratch tensor while
`torch.ops.aten._softmax` does the work.

WHAT: the op is called through the dispatcher's Python handle, not torch.softmax / F.softmax, so a source rule on
the usual names does not see it; a launch hook sees a Triton launch in forward.
WHY A NAIVE HARNESS PASSES IT: the output is torch's own softmax, bit for bit.
EXPECTED: rejected by `no_custom_kernel`: the worker's dispatch-level recorder sees aten._softmax on the whole
input in forward, whatever Python name reached it.
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
        return torch.ops.aten._softmax(x, 1, False)
