"""RMS norm over dim 1 (the features) of a (batch, features, *spatial) tensor: x / sqrt(mean(x**2, dim=1) + eps).

Expected: correct. The input is viewed as (batch, C, S). Program (b, s) owns BLOCK_S adjacent spatial positions
(contiguous, so loads coalesce) and walks the features in BLOCK_C-row tiles: a first pass sums squares in fp32, a
second reloads the tiles (L1/L2 hits: a program's footprint is C x BLOCK_S x 4 bytes) and writes x / rms. When all
C features fit one tile (KernelBench's C = 64) the tile is loaded once and kept in registers. KernelBench's
112 x 64 x 512 x 512 input is near 2**31 elements, so offsets are int64.
"""

import math

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _rms_norm_kernel(x_ptr, out_ptr, n_c, n_s, eps, BLOCK_C: tl.constexpr, BLOCK_S: tl.constexpr,
                     ONE_TILE: tl.constexpr):  # fmt: skip
    pid_b = tl.program_id(axis=0)
    pid_s = tl.program_id(axis=1)
    base = pid_b.to(tl.int64) * n_c * n_s
    feats = tl.arange(0, BLOCK_C)
    pos = pid_s * BLOCK_S + tl.arange(0, BLOCK_S)
    pos_mask = pos < n_s
    if ONE_TILE:
        mask = (feats[:, None] < n_c) & pos_mask[None, :]
        offs = base + feats[:, None].to(tl.int64) * n_s + pos[None, :]
        x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        rms = tl.sqrt(tl.sum(x * x, axis=0) / n_c + eps)
        tl.store(out_ptr + offs, x / rms[None, :], mask=mask)
    else:
        acc = tl.zeros((BLOCK_C, BLOCK_S), dtype=tl.float32)
        for c0 in range(0, n_c, BLOCK_C):
            c = c0 + feats
            mask = (c[:, None] < n_c) & pos_mask[None, :]
            x = tl.load(x_ptr + base + c[:, None].to(tl.int64) * n_s + pos[None, :], mask=mask, other=0.0)
            x = x.to(tl.float32)
            acc += x * x
        rms = tl.sqrt(tl.sum(acc, axis=0) / n_c + eps)
        for c0 in range(0, n_c, BLOCK_C):
            c = c0 + feats
            mask = (c[:, None] < n_c) & pos_mask[None, :]
            offs = base + c[:, None].to(tl.int64) * n_s + pos[None, :]
            x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
            tl.store(out_ptr + offs, x / rms[None, :], mask=mask)


class ModelNew(nn.Module):
    def __init__(self, num_features: int, eps: float = 1e-5):
        super().__init__()
        self.num_features = num_features
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        n_b, n_c, n_s = x.shape[0], x.shape[1], math.prod(x.shape[2:])
        out = torch.empty_like(x)
        if out.numel():
            block_c = min(64, triton.next_power_of_2(n_c))
            block_s = max(16, 4096 // block_c)  # a 4096-element tile per step
            grid = (n_b, triton.cdiv(n_s, block_s))
            _rms_norm_kernel[grid](x, out, n_c, n_s, self.eps, BLOCK_C=block_c, BLOCK_S=block_s,
                                   ONE_TILE=n_c <= block_c, num_warps=4)  # fmt: skip
        return out
