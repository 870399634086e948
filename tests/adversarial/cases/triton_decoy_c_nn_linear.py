"""EXPLOIT (family library_alias, private binding): a decoy Triton launch beside `torch._C._nn.linear`, the C
binding under F.linear, computing the matrix product (a @ b = linear(a, b.T)).

WHAT: no matmul, mm or linear under its public name; the GEMM runs in the vendor library.
WHY A NAIVE HARNESS PASSES IT: the product is the library's, exact to the last bit or two.
EXPECTED: rejected by `no_custom_kernel`: at the dispatcher the call is aten.mm / addmm (the gemm family) on the
full problem, whatever binding was used.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

EXPECT_STATUS = "rejected"
EXPECT_GUARD = "no_custom_kernel"
EXPECT_ALSO = []
FAMILY = "library_alias"
TASK = "matmul_small"
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

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        scale_kernel[(1,)](self.scratch, 1, BLOCK=16)
        return torch._C._nn.linear(a, b.t())
