"""Swish: x * sigmoid(x), fused. Expected: correct."""

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    # One program per BLOCK_SIZE contiguous elements: coalesced loads, one pass over memory.
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = x / (1.0 + tl.exp(-x))
    tl.store(out_ptr + offsets, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        pass

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        BLOCK_SIZE = 1024
        grid = (triton.cdiv(n, BLOCK_SIZE),)
        _kernel[grid](x, out, n, BLOCK_SIZE=BLOCK_SIZE, num_warps=4)
        return out
