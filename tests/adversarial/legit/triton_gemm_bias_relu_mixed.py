"""LEGIT (MIXED): the GEMM stays in torch (cuBLAS on a GPU), a Triton kernel fuses the bias add and the ReLU.

This is the pattern a judge must not reject as "calls the reference op": the candidate calls torch.matmul, an op the
task also uses, but the kernel it launches does real per-element work (the epilogue over the whole output) and the
task's own top-level ops (linear + relu) are not called. Parameters live in an nn.Linear created exactly as the
task's, so seeded construction gives identical weights.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

EXPECT_STATUS = "ok"
EXPECT_GUARD = None
TASK = "gemm_bias_relu_small"
BACKEND = "triton"
NEEDS_GPU = False
MIXED = True


@triton.jit
def _bias_relu_kernel(y_ptr, bias_ptr, out_ptr, n_rows, n_cols, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    y = tl.load(y_ptr + row * n_cols + cols, mask=mask)
    b = tl.load(bias_ptr + cols, mask=mask)
    tl.store(out_ptr + row * n_cols + cols, tl.maximum(y + b, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)  # parameter container only; never called

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.matmul(x, self.linear.weight.t()).contiguous()  # (B, out) by the vendor GEMM
        out = torch.empty_like(y)
        rows, cols = y.shape
        _bias_relu_kernel[(rows,)](y, self.linear.bias, out, rows, cols, BLOCK_N=triton.next_power_of_2(cols))
        return out
