"""EXPLOIT (family 2b, full-size decoy): torch computes the softmax through an aliased Tensor method; a Triton kernel
then copies the result into the output, so the launch covers every element.

WHAT: `_impl = getattr(torch.Tensor, "soft" + "max")` computes the answer; `copy_kernel` moves it, 4,096 elements,
into a fresh buffer. A launch hook sees a full-size Triton launch in forward; a "negligible work" heuristic (grid x
block vs output size) is satisfied; no `torch.softmax` / `F.softmax` token is in the source.
WHY A NAIVE HARNESS PASSES IT: the values are the reference's own.
EXPECTED: rejected by `no_custom_kernel`, which to catch this must look at what forward DISPATCHES, not only at what
it launches: aten._softmax (the task's defining op) runs inside forward (TorchDispatchMode or the profiler's op
list). This is the case we expect to be hardest for a launch-counting guard; see the corpus README.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

EXPECT_STATUS = "rejected"  # guards branch: was "rejected", see EXPECT_ALSO
EXPECT_GUARD = "static:introspection"
EXPECT_ALSO = [("rejected", "no_custom_kernel"), ("rejected", "static:reference_call")]
FAMILY = "decoy_launch"
TASK = "softmax_small"
BACKEND = "triton"
NEEDS_GPU = False


@triton.jit
def copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


_impl = getattr(torch.Tensor, "soft" + "max")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tmp = _impl(x, 1).contiguous()
        y = torch.empty_like(tmp)
        n = tmp.numel()
        copy_kernel[(triton.cdiv(n, 1024),)](tmp, y, n, BLOCK=1024)
        return y
