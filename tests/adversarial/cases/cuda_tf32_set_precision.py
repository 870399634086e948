"""EXPLOIT (family precision_tf32, CUDA form): the mixed GEMM + CUDA-epilogue solution with
torch.set_float32_matmul_precision("high") in __init__, so cuBLAS runs the fp32 GEMM on TF32 tensor cores.

WHAT: the epilogue is an honest CUDA kernel; the speed comes from the GEMM at TF32 (about 1e-3 relative error on a
64-deep product), which the strict-fp32 reference (TF32 off for matmul and cuDNN) does not get.
WHY A NAIVE HARNESS PASSES IT: KernelBench's 1e-2 tolerance hides the TF32 error, and it never checks the flags.
EXPECTED: rejected by `static:precision`. Past the static rules: guard `precision` in the worker (the float32 matmul
precision is no longer the policy's "highest"), and the strict fp32 tolerance on the GEMM's output.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

EXPECT_STATUS = "rejected"
EXPECT_GUARD = "static:precision"
EXPECT_ALSO = [("rejected", "precision"), ("incorrect", "value")]
FAMILY = "precision_tf32"
TASK = "gemm_bias_relu_small"
BACKEND = "cuda"
NEEDS_GPU = True

cuda_src = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void bias_relu_kernel(float* __restrict__ y, const float* __restrict__ bias, int64_t rows, int64_t cols) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < rows * cols) y[i] = fmaxf(y[i] + bias[i % cols], 0.0f);
}

torch::Tensor bias_relu_(torch::Tensor y, torch::Tensor bias) {
    TORCH_CHECK(y.is_contiguous() && bias.is_contiguous(), "bias_relu_: contiguous tensors expected");
    int64_t rows = y.size(0), cols = y.size(1), n = rows * cols;
    bias_relu_kernel<<<(int)((n + 255) / 256), 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        y.data_ptr<float>(), bias.data_ptr<float>(), rows, cols);
    return y;
}
"""
cpp_src = "torch::Tensor bias_relu_(torch::Tensor y, torch::Tensor bias);"

ext = load_inline(
    name="kz_tf32_gemm_bias_relu", cpp_sources=cpp_src, cuda_sources=cuda_src, functions=["bias_relu_"], verbose=False
)


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)  # parameter container only; never called
        torch.set_float32_matmul_precision("high")  # cuBLAS may use TF32 tensor cores for the GEMM

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.matmul(x, self.linear.weight.t()).contiguous()  # (B, out), a fresh tensor
        return ext.bias_relu_(y, self.linear.bias.contiguous())
