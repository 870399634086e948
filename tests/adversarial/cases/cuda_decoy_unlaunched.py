"""EXPLOIT (family 1, decoy kernel, CUDA): a correct CUDA ReLU is compiled with load_inline and never called;
forward returns x.clamp_min(0), which equals ReLU but is not spelled torch.relu.

WHAT: `__global__`, load_inline, a host wrapper: everything KernelBench's checker requires is present and builds.
The compute is a different aten op (clamp_min) than the task's (relu), so a static list of "the replaced op" misses
it.
WHY A NAIVE HARNESS PASSES IT: clamp_min(x, 0) == relu(x) bit for bit.
EXPECTED: rejected by `no_custom_kernel`: no kernel from the candidate's extension runs in forward (only aten's
clamp kernel). Telling the two apart needs the kernel's origin (the profiler's kernel names, or a launch hook on
the extension's module), not merely "some CUDA kernel ran".
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

EXPECT_STATUS = "rejected"
EXPECT_GUARD = "no_custom_kernel"
EXPECT_ALSO = [("rejected", "static:reference_call")]
FAMILY = "decoy_unlaunched"
TASK = "relu_small"
BACKEND = "cuda"
NEEDS_GPU = True

cuda_src = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = fmaxf(x[i], 0.0f);
}

torch::Tensor relu_cuda(torch::Tensor x) {
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    int64_t n = xc.numel();
    int threads = 256;
    int blocks = (int)((n + threads - 1) / threads);
    relu_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(xc.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
"""
cpp_src = "torch::Tensor relu_cuda(torch::Tensor x);"

relu_ext = load_inline(
    name="kz_adv_decoy_unlaunched", cpp_sources=cpp_src, cuda_sources=cuda_src, functions=["relu_cuda"], verbose=False
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.ext = relu_ext

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.clamp_min(0.0)
