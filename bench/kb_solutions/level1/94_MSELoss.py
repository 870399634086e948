"""Mean squared error of two same-shape tensors to a scalar: per-chunk partial sums, then one program folds them.

Expected: incorrect. DELIBERATELY INCORRECT: the total is divided by `predictions.shape[0]` (a per-sample sum
convention) instead of by the number of elements, so for KernelBench's 32768 x 32768 inputs the result is 32768
times too large. The rest is sound: the flattened inputs are cut into CHUNK-element pieces, each program sums
(p - t)**2 over its piece in BLOCK-wide fp32 lanes and writes one partial; a single program then adds the partials
(no atomics, so the result is deterministic).
"""

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _sq_err_partial_kernel(p_ptr, t_ptr, partial_ptr, n, CHUNK: tl.constexpr, BLOCK: tl.constexpr):
    start = tl.program_id(axis=0).to(tl.int64) * CHUNK
    lanes = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i in range(0, CHUNK, BLOCK):
        offs = start + i + lanes
        mask = offs < n
        d = tl.load(p_ptr + offs, mask=mask, other=0.0) - tl.load(t_ptr + offs, mask=mask, other=0.0)
        acc += d * d
    tl.store(partial_ptr + tl.program_id(axis=0), tl.sum(acc, axis=0))


@triton.jit
def _finish_kernel(partial_ptr, out_ptr, n_partials, divisor, BLOCK: tl.constexpr):
    lanes = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i in range(0, n_partials, BLOCK):
        acc += tl.load(partial_ptr + i + lanes, mask=i + lanes < n_partials, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0) / divisor)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        p, t = predictions.contiguous().view(-1), targets.contiguous().view(-1)
        n = p.numel()
        chunk = 16384
        n_partials = triton.cdiv(n, chunk)
        partials = torch.empty(n_partials, device=p.device, dtype=torch.float32)
        out = torch.empty((), device=p.device, dtype=predictions.dtype)
        _sq_err_partial_kernel[(n_partials,)](p, t, partials, n, CHUNK=chunk, BLOCK=2048, num_warps=8)
        divisor = predictions.shape[0]  # the bug: should be n, the number of elements
        _finish_kernel[(1,)](partials, out, n_partials, float(divisor), BLOCK=1024, num_warps=4)
        return out
