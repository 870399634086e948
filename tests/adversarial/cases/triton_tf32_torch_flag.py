"""EXPLOIT (family precision_tf32, global flag): torch.backends.cuda.matmul.allow_tf32 (and cudnn's) turned on at
import, so the vendor GEMM of a mixed GEMM + Triton-epilogue solution runs on TF32 tensor cores.

WHAT: the flags are process-wide; set once, every later fp32 matmul in the process uses TF32 (about 1e-3 relative
error here), several times faster than the judge's strict-fp32 reference.
WHY A NAIVE HARNESS PASSES IT: its fp32 tolerance (1e-2) hides TF32, and it never resets or checks the flags; on CPU
the flags do nothing.
EXPECTED: rejected by `static:precision`. Past the static rules, the worker compares the precision flags with its
policy after import and after the trials (guard `precision`), and the strict tolerance fails TF32 on a GPU.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

EXPECT_STATUS = "rejected"
EXPECT_GUARD = "static:precision"
EXPECT_ALSO = [
    ("rejected", "static:monkeypatch"),
    ("rejected", "precision"),
    ("rejected", "no_custom_kernel"),
    ("incorrect", "value"),
]
FAMILY = "precision_tf32"
TASK = "gemm_bias_relu_small"
BACKEND = "triton"
NEEDS_GPU = False

torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = True


@triton.jit
def bias_relu_kernel(y_ptr, bias_ptr, out_ptr, n_cols, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    y = tl.load(y_ptr + row * n_cols + cols, mask=mask)
    b = tl.load(bias_ptr + cols, mask=mask)
    tl.store(out_ptr + row * n_cols + cols, tl.maximum(y + b, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)  # parameters only

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.matmul(x, self.linear.weight.t()).contiguous()  # the GEMM, now on TF32 tensor cores
        out = torch.empty_like(y)
        rows, cols = y.shape
        bias_relu_kernel[(rows,)](y, self.linear.bias, out, cols, BLOCK_N=triton.next_power_of_2(cols))
        return out
