"""LEGIT (CUDA, MIXED): torch.matmul (cuBLAS) for the GEMM, then one custom kernel that fuses the bias add and the
ReLU over the whole output, in place on the GEMM's own (fresh) result.

The in-place write is on a tensor this forward allocated, not on an input: a probe for the aliasing and
input-mutation guards. The GEMM is a torch op the task also uses: a probe for `no_custom_kernel` /
`static:reference_call`, which must accept a custom kernel doing real per-element work next to a vendor GEMM.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

EXPECT_STATUS = "ok"
EXPECT_GUARD = None
TASK = "gemm_bias_relu_small"
BACKEND = "cuda"
NEEDS_GPU = True
MIXED = True

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
    name="kz_legit_gemm_bias_relu", cpp_sources=cpp_src, cuda_sources=cuda_src, functions=["bias_relu_"], verbose=False
)


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)  # parameter container only; never called

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.matmul(x, self.linear.weight.t()).contiguous()  # (B, out), a fresh tensor
        return ext.bias_relu_(y, self.linear.bias.contiguous())
