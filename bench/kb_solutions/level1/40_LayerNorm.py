"""LayerNorm over the trailing (features, dim1, dim2) dims: chunked statistics, then a chunked normalise pass.

Expected: correct. A KernelBench row holds 64 x 256 x 256 = 4M elements (16 rows), far too long for one program, so
each row is cut into CHUNK-element pieces on a (row, chunk) grid. Pass 1: every program writes its piece's sum and
sum of squares of (x - pivot), the pivot being the row's first element, which keeps E[d^2] - E[d]^2 from cancelling
when the mean is large next to the spread. Pass 2: every program folds its row's partials into mean and 1/std
(biased variance, eps inside the square root, as nn.LayerNorm) and writes its piece of (x - mean) * rstd * w + b.
"""

import math

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _ln_stats_kernel(x_ptr, psum_ptr, psq_ptr, n, n_chunks, CHUNK: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(axis=0)
    chunk = tl.program_id(axis=1)
    x_row = x_ptr + row.to(tl.int64) * n
    pivot = tl.load(x_row)
    lanes = tl.arange(0, BLOCK)
    s = tl.zeros([BLOCK], dtype=tl.float32)
    q = tl.zeros([BLOCK], dtype=tl.float32)
    for i in range(0, CHUNK, BLOCK):
        offs = chunk * CHUNK + i + lanes
        mask = offs < n
        d = tl.where(mask, tl.load(x_row + offs, mask=mask, other=0.0) - pivot, 0.0)
        s += d
        q += d * d
    tl.store(psum_ptr + row * n_chunks + chunk, tl.sum(s, axis=0))
    tl.store(psq_ptr + row * n_chunks + chunk, tl.sum(q, axis=0))


@triton.jit
def _ln_apply_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr, psum_ptr, psq_ptr, n, n_chunks, eps,
    CHUNK: tl.constexpr, BLOCK: tl.constexpr, BLOCK_P: tl.constexpr,
):
    row = tl.program_id(axis=0)
    chunk = tl.program_id(axis=1)
    x_row = x_ptr + row.to(tl.int64) * n
    out_row = out_ptr + row.to(tl.int64) * n
    parts = tl.arange(0, BLOCK_P)
    pmask = parts < n_chunks
    s = tl.sum(tl.load(psum_ptr + row * n_chunks + parts, mask=pmask, other=0.0), axis=0)
    q = tl.sum(tl.load(psq_ptr + row * n_chunks + parts, mask=pmask, other=0.0), axis=0)
    mean_d = s / n
    var = tl.maximum(q / n - mean_d * mean_d, 0.0)
    rstd = 1.0 / tl.sqrt(var + eps)
    mean = tl.load(x_row) + mean_d
    lanes = tl.arange(0, BLOCK)
    for i in range(0, CHUNK, BLOCK):
        offs = chunk * CHUNK + i + lanes
        mask = offs < n
        x = tl.load(x_row + offs, mask=mask, other=0.0)
        w = tl.load(w_ptr + offs, mask=mask, other=0.0)
        b = tl.load(b_ptr + offs, mask=mask, other=0.0)
        tl.store(out_row + offs, (x - mean) * rstd * w + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, normalized_shape: tuple):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)  # same name as Model: same parameters

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        w, b = self.ln.weight.contiguous(), self.ln.bias.contiguous()
        n = math.prod(self.ln.normalized_shape)
        n_rows = x.numel() // n
        out = torch.empty_like(x)
        if out.numel():
            chunk = 16384
            n_chunks = triton.cdiv(n, chunk)
            psum = torch.empty((n_rows, n_chunks), device=x.device, dtype=torch.float32)
            psq = torch.empty_like(psum)
            grid = (n_rows, n_chunks)
            _ln_stats_kernel[grid](x, psum, psq, n, n_chunks, CHUNK=chunk, BLOCK=1024, num_warps=4)
            _ln_apply_kernel[grid](
                x, w, b, out, psum, psq, n, n_chunks, self.ln.eps,
                CHUNK=chunk, BLOCK=1024, BLOCK_P=triton.next_power_of_2(n_chunks), num_warps=4,
            )  # fmt: skip
        return out
