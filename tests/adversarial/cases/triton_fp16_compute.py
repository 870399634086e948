"""EXPLOIT (family 11a, precision downcast): the matrix product is computed from fp16-rounded inputs (tl.dot on fp16
tiles, fp32 accumulate) and returned as fp32.

WHAT: halves the bytes moved and, on a GPU, runs on fp16 tensor cores: a large real speedup on an fp32 task, paid
for with about 1e-2 absolute error on a 64-deep product of N(0,1) inputs.
WHY A NAIVE HARNESS PASSES IT: KernelBench v0/v0.1 compares fp32 with atol = rtol = 1e-2, which this error fits
(measured max |err| about 1e-2 relative to outputs of size ~8: allclose's rtol term absorbs it); the dtype is fp32.
EXPECTED: `incorrect` (guard `value`; family precision): the judge's fp32 tolerance (1e-4, KernelBench's newer
default and torchbench's) refuses it. Honest: this is a tolerance decision, not a trick the judge "detects"; with
a 1e-2 fp32 tolerance it would pass, so the policy must pin the tolerance per dtype.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

EXPECT_STATUS = "incorrect"
EXPECT_GUARD = "value"
EXPECT_ALSO = [("rejected", "dtype")]
FAMILY = "precision"
TASK = "matmul_small"
BACKEND = "triton"
NEEDS_GPU = False


@triton.jit
def matmul_fp16_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(
            a_ptr + rm[:, None] * K + (k + rk)[None, :], mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0
        )
        b = tl.load(
            b_ptr + (k + rk)[:, None] * N + rn[None, :], mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0.0
        )
        acc += tl.dot(a.to(tl.float16), b.to(tl.float16), out_dtype=tl.float32)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        a, b = a.contiguous(), b.contiguous()
        M, K = a.shape
        N = b.shape[1]
        c = torch.empty((M, N), device=a.device, dtype=torch.float32)
        matmul_fp16_kernel[(triton.cdiv(M, 32), triton.cdiv(N, 32))](a, b, c, M, N, K, BM=32, BN=32, BK=32)
        return c
