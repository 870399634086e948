"""Hinge loss mean(clamp(1 - predictions * targets, min=0)) to a scalar: per-chunk partial sums, then one fold.

Expected: correct. KernelBench's targets have the predictions' last-dim size and broadcast along the leading dims,
so flat element i of the predictions meets targets[i % targets.numel()] (any other broadcast is materialised first).
The flattened predictions are cut into CHUNK-element pieces, each program sums the clamped margins over its piece in
BLOCK-wide fp32 lanes and writes one partial; a single program adds the partials and divides by the element count
(no atomics: deterministic). Offsets are int64 (32768 x 32768 = 2**30 elements, near the int32 limit).
"""

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _hinge_partial_kernel(p_ptr, t_ptr, partial_ptr, n, n_t, CHUNK: tl.constexpr, BLOCK: tl.constexpr):
    start = tl.program_id(axis=0).to(tl.int64) * CHUNK
    lanes = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i in range(0, CHUNK, BLOCK):
        offs = start + i + lanes
        mask = offs < n
        p = tl.load(p_ptr + offs, mask=mask, other=0.0)
        t = tl.load(t_ptr + offs % n_t, mask=mask, other=0.0)
        acc += tl.where(mask, tl.maximum(1.0 - p * t, 0.0), 0.0)
    tl.store(partial_ptr + tl.program_id(axis=0), tl.sum(acc, axis=0))


@triton.jit
def _mean_of_partials_kernel(partial_ptr, out_ptr, n_partials, n, BLOCK: tl.constexpr):
    lanes = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i in range(0, n_partials, BLOCK):
        acc += tl.load(partial_ptr + i + lanes, mask=i + lanes < n_partials, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0) / n)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        p = predictions.contiguous().view(-1)
        if tuple(targets.shape) != tuple(predictions.shape[predictions.ndim - targets.ndim :]):
            targets = targets.expand_as(predictions)  # not KernelBench's case: give every element its own target
        t = targets.contiguous().view(-1)
        n = p.numel()
        chunk = 16384
        n_partials = triton.cdiv(n, chunk)
        partials = torch.empty(n_partials, device=p.device, dtype=torch.float32)
        out = torch.empty((), device=p.device, dtype=predictions.dtype)
        _hinge_partial_kernel[(n_partials,)](p, t, partials, n, t.numel(), CHUNK=chunk, BLOCK=2048, num_warps=8)
        _mean_of_partials_kernel[(1,)](partials, out, n_partials, float(n), BLOCK=1024, num_warps=4)
        return out
