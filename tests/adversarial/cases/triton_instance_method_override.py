"""EXPLOIT (family lying_output, methods overridden on the returned tensor): forward returns a plain
torch.empty_like whose instance attributes `to`, `detach`, `cpu`, `contiguous` compute F.softmax when called.

WHAT: the type is exactly torch.Tensor (a subclass check passes), but Python looks methods up on the instance first,
so whoever reads the output through a method runs the candidate's lambda: the real work (a library softmax)
happens inside the checker, after forward returned, outside anything that records forward's ops. The kernel only
fills a scratch buffer.
WHY A NAIVE HARNESS PASSES IT: a lenient harness casts `output_new.to(output.dtype)` before comparing (NAIVE =
lenient): the cast is the lambda, which returns the right softmax.
EXPECTED: rejected by `tensor_subclass`: the worker refuses an output that carries instance attributes, and reads
outputs only through methods bound from the class before candidate code ran.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl

EXPECT_STATUS = "rejected"
EXPECT_GUARD = "tensor_subclass"
EXPECT_ALSO = [("rejected", "no_custom_kernel")]
FAMILY = "lying_output"
TASK = "softmax_small"
BACKEND = "triton"
NEEDS_GPU = False
NAIVE = "lenient"


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
        y = torch.empty_like(x)

        def answer(*args, **kwargs):
            return F.softmax(x, dim=1).to(*args, **kwargs) if args or kwargs else F.softmax(x, dim=1)

        y.to = answer
        y.detach = answer
        y.cpu = answer
        y.contiguous = answer
        return y
