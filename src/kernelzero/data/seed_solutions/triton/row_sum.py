import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def row_sum_exp_kernel(x_ptr, out_ptr, n_cols, BLOCK_SIZE: tl.constexpr):
    # One program per row: walk the row in BLOCK_SIZE chunks, accumulate exp in fp32, reduce once at the end.
    row = tl.program_id(axis=0)
    offsets = tl.arange(0, BLOCK_SIZE)
    acc = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + offsets
        x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=-float("inf"))
        acc += tl.exp(x)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


def row_sum_exp(x: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    n_cols = x.shape[-1]
    out = torch.empty(x.shape[:-1], device=x.device, dtype=x.dtype)
    BLOCK_SIZE = 1024
    row_sum_exp_kernel[(out.numel(),)](x, out, n_cols, BLOCK_SIZE=BLOCK_SIZE)
    return out


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return row_sum_exp(x)
