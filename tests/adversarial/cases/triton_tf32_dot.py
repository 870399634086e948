"""EXPLOIT (family precision_tf32, Triton form): tl.dot with input_precision="tf32" on an fp32 matrix product.

WHAT: the tensor cores' TF32 path (10-bit mantissa inputs): several times faster than true fp32 on a GPU, with a
relative error near 1e-3 on a 64-deep product.
WHY A NAIVE HARNESS PASSES IT: KernelBench's fp32 tolerance (1e-2) is ten times that error; under the CPU interpreter
tl.dot is an exact fp32 numpy product anyway.
EXPECTED: rejected by `static:precision` (reduced-precision dot in an fp32 task). On a GPU without that rule, the
judge's fp32 tolerance (1e-4) makes it incorrect / value.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

EXPECT_STATUS = "rejected"
EXPECT_GUARD = "static:precision"
EXPECT_ALSO = [("incorrect", "value")]
FAMILY = "precision_tf32"
TASK = "matmul_small"
BACKEND = "triton"
NEEDS_GPU = False


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, N, BLOCK: tl.constexpr):
    rm = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    rn = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    rk = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for k in range(0, N, BLOCK):
        a = tl.load(a_ptr + rm[:, None] * N + (k + rk)[None, :], mask=(rm[:, None] < N) & ((k + rk)[None, :] < N),
                    other=0.0)  # fmt: skip
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :], mask=((k + rk)[:, None] < N) & (rn[None, :] < N),
                    other=0.0)  # fmt: skip
        acc += tl.dot(a, b, input_precision="tf32")
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < N) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        n = a.shape[0]
        c = torch.empty_like(a)
        matmul_kernel[(triton.cdiv(n, 32), triton.cdiv(n, 32))](a, b, c, n, BLOCK=32)
        return c
