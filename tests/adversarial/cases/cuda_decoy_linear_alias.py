"""EXPLOIT (family library_alias, CUDA form): a one-thread decoy CUDA kernel launched each call, while F.linear, bound
to the module-level name `project`, computes the matrix product.

WHAT: no `matmul`/`mm` in forward and a real launch of the candidate's own `__global__` kernel, so a "was a kernel
of the solution launched?" check and a rule on torch.matmul both pass.
WHY A NAIVE HARNESS PASSES IT: the output is cuBLAS's product.
EXPECTED: rejected by `no_custom_kernel`: the dispatch-level recorder sees aten.mm (gemm family) on the full problem.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline

EXPECT_STATUS = "rejected"
EXPECT_GUARD = "no_custom_kernel"
EXPECT_ALSO = []
FAMILY = "library_alias"
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
    name="kz_adv_decoy_linear_alias",
    cpp_sources=cpp_src,
    cuda_sources=cuda_src,
    functions=["prefetch"],
    verbose=False,
)


project = F.linear  # "a projection helper"


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("scratch", torch.ones(1))

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        ext.prefetch(self.scratch)
        return project(a, b.t())
