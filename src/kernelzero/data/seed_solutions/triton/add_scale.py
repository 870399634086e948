import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def add_scale_kernel(x_ptr, y_ptr, out_ptr, scale, n_elements, BLOCK_SIZE: tl.constexpr):
    # One program per BLOCK_SIZE elements: the add and the scale fused in one pass over memory.
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, (x + y) * scale, mask=mask)


def add_scale(x: torch.Tensor, y: torch.Tensor, scale: float) -> torch.Tensor:
    x = x.contiguous()
    y = y.contiguous()
    out = torch.empty_like(x)
    n_elements = out.numel()
    BLOCK_SIZE = 1024
    grid = (triton.cdiv(n_elements, BLOCK_SIZE),)
    add_scale_kernel[grid](x, y, out, scale, n_elements, BLOCK_SIZE=BLOCK_SIZE)
    return out


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return add_scale(x, y, self.scale)
