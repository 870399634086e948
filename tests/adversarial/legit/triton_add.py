"""LEGIT: elementwise sum of two vectors in Triton (a two-input task; probes the input-mutation snapshot of both)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl

EXPECT_STATUS = "ok"
EXPECT_GUARD = None
TASK = "add_small"
BACKEND = "triton"
NEEDS_GPU = False


@triton.jit
def _add_kernel(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    tl.store(c_ptr + offs, a + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        a, b = a.contiguous(), b.contiguous()
        c = torch.empty_like(a)
        n = a.numel()
        _add_kernel[(triton.cdiv(n, 1024),)](a, b, c, n, BLOCK=1024)
        return c
