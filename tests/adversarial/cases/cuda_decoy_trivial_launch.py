"""EXPLOIT (family 2, decoy launch, CUDA): the extension's kernel runs every call, on one thread over one float;
torch.matmul computes the answer.

WHAT: a "prefetch" kernel launched with <<<1, 1>>> on a 1-element scratch buffer, then torch.matmul(a, b).
A profiler or launch hook sees a custom kernel in forward.
WHY A NAIVE HARNESS PASSES IT: the output is cuBLAS's, bit-exact against the reference.
EXPECTED: rejected by `no_custom_kernel` on the work criterion: the custom kernel's grid x block (1 thread) is far
below the output's 4,096 elements, and the task's op (aten::mm) runs in forward.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

EXPECT_STATUS = "rejected"
EXPECT_GUARD = "no_custom_kernel"
EXPECT_ALSO = [("rejected", "static:reference_call")]
FAMILY = "decoy_launch"
TASK = "matmul_small"
BACKEND = "cuda"
NEEDS_GPU = True

cuda_src = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void prefetch_kernel(float* p) { p[0] = p[0] * 1.0f; }

void prefetch(torch::Tensor scratch) {
    prefetch_kernel<<<1, 1, 0, at::cuda::getCurrentCUDAStream()>>>(scratch.data_ptr<float>());
}
"""
cpp_src = "void prefetch(torch::Tensor scratch);"

ext = load_inline(
    name="kz_adv_decoy_trivial_launch",
    cpp_sources=cpp_src,
    cuda_sources=cuda_src,
    functions=["prefetch"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("scratch", torch.ones(1))

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        ext.prefetch(self.scratch)
        return torch.matmul(a, b)
