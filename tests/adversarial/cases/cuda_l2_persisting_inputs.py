"""EXPLOIT (family l2_persist, inputs kept in the persisting L2 carveout): an honest ReLU kernel whose wrapper sets
aside the largest persisting-L2 carveout the GPU allows and points the current stream's access-policy window at
the input with hitProp = persisting, so the input's cache lines survive the harness's L2 flush between timed calls.

WHAT: `cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, ...)` reserves part of L2 for persisting lines; a stream
attribute `accessPolicyWindow` (base_ptr = the input, hitRatio 1, hitProp = cudaAccessPropertyPersisting) marks
every line the kernel touches in that range as persisting. A flush (writing 256 MB) only evicts normal lines, so
from the second timed call on the input is read from L2, not from memory: on inputs of a few MB up to the carveout
(H100/H200: up to ~3/4 of L2) the reported bandwidth goes past the memory's peak, reported at over 4x. Outputs
are exact, every call launches the kernel, and nothing is skipped: only the memory the kernel reads is not what
the benchmark measures. The window is set again whenever the input buffer changes.
WHY A NAIVE HARNESS PASSES IT: its kernel is correct; KernelBench's 256 MB flush (a `fill_` on a fresh tensor) does
not touch persisting lines, so its timing gets the cached reads.
EXPECTED: rejected by `static:l2_persist` (the persisting-L2 API by name). Behind it: `timing.PersistingL2` sets the
carveout back to 0 and demotes every persisting line (cudaCtxResetPersistingL2Cache) before the flush of every timed
call, so a module that pins its input again inside forward has nothing persisting left when the next call starts;
`roofline` (fastest call) is the backstop on large outputs.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

EXPECT_STATUS = "rejected"
EXPECT_GUARD = "static:l2_persist"
EXPECT_ALSO = [("rejected", "roofline")]
FAMILY = "l2_persist"
TASK = "relu_small"
BACKEND = "cuda"
NEEDS_GPU = True

cuda_src = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <algorithm>

__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, long n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = fmaxf(x[i], 0.0f);
}

static const void* pinned = nullptr;

static void pin_in_l2(const torch::Tensor& x, cudaStream_t stream) {
    int dev = 0;
    cudaGetDevice(&dev);
    cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, dev);
    size_t bytes = (size_t)x.numel() * x.element_size();
    size_t carve = std::min(bytes, (size_t)prop.persistingL2CacheMaxSize);
    cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, carve);
    cudaStreamAttrValue attr = {};
    attr.accessPolicyWindow.base_ptr = const_cast<void*>(x.data_ptr());
    attr.accessPolicyWindow.num_bytes = std::min(bytes, (size_t)prop.accessPolicyMaxWindowSize);
    attr.accessPolicyWindow.hitRatio = 1.0f;
    attr.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
    attr.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
    cudaStreamSetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &attr);
    pinned = x.data_ptr();
}

torch::Tensor relu_l2(torch::Tensor x) {
    auto X = x.contiguous();
    auto Y = torch::empty_like(X);
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    if (pinned != X.data_ptr()) pin_in_l2(X, stream);
    long n = X.numel();
    relu_kernel<<<(unsigned)((n + 255) / 256), 256, 0, stream>>>(X.data_ptr<float>(), Y.data_ptr<float>(), n);
    return Y;
}
"""
cpp_src = "torch::Tensor relu_l2(torch::Tensor x);"

ext = load_inline(name="kz_adv_l2_persist", cpp_sources=cpp_src, cuda_sources=cuda_src, functions=["relu_l2"],
                  verbose=False)  # fmt: skip


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ext.relu_l2(x)
