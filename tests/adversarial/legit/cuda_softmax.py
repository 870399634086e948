"""LEGIT (CUDA): row softmax, one block of 128 threads per row, max and sum by shared-memory tree reductions.

A false-positive probe for the work heuristics (32 blocks x 128 threads = one thread per element of the 32 x 128
output) and for static rules on __syncthreads / shared memory.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

EXPECT_STATUS = "ok"
EXPECT_GUARD = None
TASK = "softmax_small"
BACKEND = "cuda"
NEEDS_GPU = True

cuda_src = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#define THREADS 128

__global__ void softmax_kernel(const float* __restrict__ x, float* __restrict__ y, int cols) {
    __shared__ float red[THREADS];
    const float* xr = x + (int64_t)blockIdx.x * cols;
    float* yr = y + (int64_t)blockIdx.x * cols;
    float m = -INFINITY;
    for (int j = threadIdx.x; j < cols; j += THREADS) m = fmaxf(m, xr[j]);
    red[threadIdx.x] = m;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
        __syncthreads();
    }
    m = red[0];
    __syncthreads();
    float sum = 0.0f;
    for (int j = threadIdx.x; j < cols; j += THREADS) sum += expf(xr[j] - m);
    red[threadIdx.x] = sum;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();
    }
    float inv = 1.0f / red[0];
    for (int j = threadIdx.x; j < cols; j += THREADS) yr[j] = expf(xr[j] - m) * inv;
}

torch::Tensor softmax_cuda(torch::Tensor x) {
    TORCH_CHECK(x.dim() == 2 && x.scalar_type() == torch::kFloat32, "softmax_cuda: 2-D float32 expected");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    softmax_kernel<<<(int)xc.size(0), THREADS, 0, at::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), y.data_ptr<float>(), (int)xc.size(1));
    return y;
}
"""
cpp_src = "torch::Tensor softmax_cuda(torch::Tensor x);"

ext = load_inline(
    name="kz_legit_softmax", cpp_sources=cpp_src, cuda_sources=cuda_src, functions=["softmax_cuda"], verbose=False
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ext.softmax_cuda(x)
