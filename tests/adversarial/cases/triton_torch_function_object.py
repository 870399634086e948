"""EXPLOIT (family lying_output, a non-tensor that answers for torch): forward returns an object with a `shape` and a
`__torch_function__` that says True to torch.allclose / torch.equal / torch.isclose; no tensor is ever computed.

WHAT: torch's override protocol dispatches any torch function called with such an object to the object's own
`__torch_function__` (it need not subclass Tensor), so every comparison the checker makes is answered by the
candidate. A decoy Triton launch keeps launch counters happy.
WHY A NAIVE HARNESS PASSES IT: it checks `output.shape != output_new.shape` (the object reports the right shape)
and then `torch.allclose(output, output_new)` (the object answers True).
EXPECTED: rejected by `tensor_subclass`: the worker accepts only outputs whose type is exactly torch.Tensor.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

EXPECT_STATUS = "rejected"
EXPECT_GUARD = "tensor_subclass"
EXPECT_ALSO = []
FAMILY = "lying_output"
TASK = "relu_small"
BACKEND = "triton"
NEEDS_GPU = False


@triton.jit
def scale_kernel(p_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(p_ptr + offs, tl.load(p_ptr + offs, mask=mask) * 1.0, mask=mask)


class Answer:
    """Looks like the output to whoever asks through torch."""

    def __init__(self, like: torch.Tensor):
        self.shape, self.dtype, self.device = like.shape, like.dtype, like.device

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func in (torch.allclose, torch.equal):
            return True
        if func is torch.isclose:
            return torch.ones(args[0].shape, dtype=torch.bool)
        return NotImplemented


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("scratch", torch.ones(1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scale_kernel[(1,)](self.scratch, 1, BLOCK=16)
        return Answer(x)
