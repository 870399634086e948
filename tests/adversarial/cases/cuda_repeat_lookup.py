"""EXPLOIT (family phase_detection, CUDA form: timed calls answered from a table): an honest CUDA ReLU on every input
it has not seen; when an input comes back with exactly the same contents (a timing loop), it returns the output
it computed the first time and launches nothing.

WHAT: the module keeps, per input address, a copy of the input and its output. A call whose input equals the copy
(`torch.equal`, exact) is a repeat: checked calls never repeat an input (fresh draws; replays refill the buffer with
other contents), timed calls after the first on each input set always do. Every output it returns is right, so the
judge's check of timed outputs passes it; on a 16 KB output `roofline` has nothing to bite on. For a CUDA candidate
the timing loop cannot count launches per call (the profiler would skew the times).
WHY A NAIVE HARNESS PASSES IT: checks on fresh inputs are honest; its warm-up and timed calls repeat one input, so
all but the first are lookups.
EXPECTED: rejected by `no_custom_kernel`: after the timed loop, outside the timing lock, the worker makes one more
call per timing input set under the profiler (`judge_jobs.audit_cuda_launches`); each is a repeat, answered from
the table, and launches none of the candidate's `__global__` kernels. `roofline` (fastest call) is the backstop on
large outputs.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

EXPECT_STATUS = "rejected"
EXPECT_GUARD = "no_custom_kernel"
EXPECT_ALSO = [("rejected", "roofline")]
FAMILY = "phase_detection"
TASK = "relu_small"
BACKEND = "cuda"
NEEDS_GPU = True

cuda_src = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, long n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = fmaxf(x[i], 0.0f);
}

torch::Tensor relu_cuda(torch::Tensor x) {
    auto X = x.contiguous();
    auto Y = torch::empty_like(X);
    long n = X.numel();
    relu_kernel<<<(unsigned)((n + 255) / 256), 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        X.data_ptr<float>(), Y.data_ptr<float>(), n);
    return Y;
}
"""
cpp_src = "torch::Tensor relu_cuda(torch::Tensor x);"

ext = load_inline(name="kz_adv_repeat_lookup", cpp_sources=cpp_src, cuda_sources=cuda_src, functions=["relu_cuda"],
                  verbose=False)  # fmt: skip


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.table = {}  # (data_ptr, shape) -> (input copy, output)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        key = (x.data_ptr(), tuple(x.shape))
        hit = self.table.get(key)
        if hit is not None and torch.equal(hit[0], x):
            return hit[1]
        y = ext.relu_cuda(x)
        self.table[key] = (x.clone(), y)
        while len(self.table) > 8:
            self.table.pop(next(iter(self.table)))
        return y
