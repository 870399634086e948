"""minGPT's tanh-approximation GELU, elementwise over the flattened input: one program per BLOCK elements.

Expected: correct. 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x**3))), with tanh(u) written as
1 - 2 / (exp(2u) + 1), which saturates cleanly to +-1 when exp overflows to inf or underflows to 0.
"""

import math

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _new_gelu_kernel(x_ptr, out_ptr, n, sqrt_2_over_pi, BLOCK: tl.constexpr):
    offs = tl.program_id(axis=0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    u = sqrt_2_over_pi * (x + 0.044715 * x * x * x)
    tanh_u = 1.0 - 2.0 / (tl.exp(2.0 * u) + 1.0)
    tl.store(out_ptr + offs, 0.5 * x * (1.0 + tanh_u), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        if n:
            _new_gelu_kernel[(triton.cdiv(n, 1024),)](x, out, n, math.sqrt(2.0 / math.pi), BLOCK=1024, num_warps=4)
        return out
