import torch
from torch import nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

#define THREADS 256

// One block per row: threads stride over the columns summing exp, then a shared-memory tree reduction.
__global__ void row_sum_exp_kernel(const float* __restrict__ x, float* __restrict__ out, int64_t n_cols) {
    __shared__ float partial[THREADS];
    const float* row = x + blockIdx.x * n_cols;
    float acc = 0.0f;
    for (int64_t j = threadIdx.x; j < n_cols; j += THREADS) {
        acc += expf(row[j]);
    }
    partial[threadIdx.x] = acc;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) {
            partial[threadIdx.x] += partial[threadIdx.x + s];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        out[blockIdx.x] = partial[0];
    }
}

torch::Tensor row_sum_exp(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "row_sum_exp: x must be a float32 CUDA tensor");
    auto xc = x.contiguous();
    int64_t n_cols = xc.size(-1);
    auto out = torch::empty(xc.sizes().slice(0, xc.dim() - 1), xc.options());
    int64_t rows = out.numel();
    row_sum_exp_kernel<<<rows, THREADS, 0, at::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), out.data_ptr<float>(), n_cols);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}
"""

cpp_source = "torch::Tensor row_sum_exp(torch::Tensor x);"

seed_row_sum_cuda_ext = load_inline(
    name="seed_row_sum_cuda_ext",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["row_sum_exp"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return seed_row_sum_cuda_ext.row_sum_exp(x)
