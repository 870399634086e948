"""Matrix-vector product A @ B for A (M, K) and B (K, 1): one program per row, streaming K in BLOCK_K-wide blocks.

Expected: correct. KernelBench's A is 2048 x 1048576 (8 GB), so the work is one pass over A at memory bandwidth:
each program reads its row in contiguous BLOCK_K-wide pieces, multiplies by the matching piece of B (small, stays in
cache across programs), accumulates in BLOCK_K fp32 lanes and folds them once at the end. Row offsets are int64:
M * K = 2**31 elements is past int32.
"""

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _matvec_kernel(a_ptr, b_ptr, out_ptr, K, BLOCK_K: tl.constexpr):
    row = tl.program_id(axis=0)
    a_row = a_ptr + row.to(tl.int64) * K
    lanes = tl.arange(0, BLOCK_K)
    acc = tl.zeros([BLOCK_K], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k = k0 + lanes
        mask = k < K
        acc += tl.load(a_row + k, mask=mask, other=0.0) * tl.load(b_ptr + k, mask=mask, other=0.0)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        M, K = A.shape
        assert B.shape == (K, 1), f"expected B of shape ({K}, 1), got {tuple(B.shape)}"
        A, b = A.contiguous(), B.contiguous().view(-1)
        out = torch.empty((M, 1), device=A.device, dtype=A.dtype)
        if M:
            _matvec_kernel[(M,)](A, b, out, K, BLOCK_K=4096, num_warps=8)
        return out
