"""EXPLOIT (family precision_tf32, silent form): tl.dot with no input_precision, which on an NVIDIA GPU means TF32
for fp32 inputs.

WHAT: nothing in the source names a precision; Triton's default does it (about 1e-3 relative error on a 64-deep
product, against ~1e-6 for true fp32).
WHY A NAIVE HARNESS PASSES IT: its fp32 tolerance (1e-2) hides the TF32 error; the CPU interpreter is exact.
EXPECTED: incorrect / value on a GPU: the judge's fp32 tolerance (atol = rtol = 1e-4) is the guard (no rule can
see a default). On CPU (interpreter, exact fp32) the same source is ok.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

EXPECT_STATUS = "incorrect"
EXPECT_GUARD = "value"
EXPECT_ALSO = []
FAMILY = "precision_tf32"
TASK = "matmul_small"
BACKEND = "triton"
NEEDS_GPU = True


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
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < N) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        n = a.shape[0]
        c = torch.empty_like(a)
        matmul_kernel[(triton.cdiv(n, 32), triton.cdiv(n, 32))](a, b, c, n, BLOCK=32)
        return c
