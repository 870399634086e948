"""EXPLOIT (family cuda_graph, CUDA form): a CUDA extension's ReLU captured once into a torch.cuda.CUDAGraph per input
buffer; later calls on that buffer replay the recorded graph instead of launching the kernel.

WHAT: the graph is captured on the first call for a (data_ptr, shape) and bound to that call's input and output; a
replay recomputes nothing the task asks for when the contents are unchanged and re-reads a stale buffer otherwise,
and timed calls pay one graph launch (no host-side launch cost of the extension call).
WHY A NAIVE HARNESS PASSES IT: correctness trials use fresh tensors (each is a capture and a real launch); timing
reuses one tensor, so every timed call is a graph replay.
EXPECTED: rejected by `static:cuda_graph`. Were it let through: `replay` (same buffer, new contents) or timing guards.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

EXPECT_STATUS = "rejected"
EXPECT_GUARD = "static:cuda_graph"
EXPECT_ALSO = [("rejected", "replay")]
FAMILY = "cuda_graph"
TASK = "relu_small"
BACKEND = "cuda"
NEEDS_GPU = True

cuda_src = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}

torch::Tensor relu_out(torch::Tensor x, torch::Tensor y) {
    int64_t n = x.numel();
    relu_kernel<<<(n + 255) / 256, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
"""
cpp_src = "torch::Tensor relu_out(torch::Tensor x, torch::Tensor y);"

ext = load_inline(
    name="graph_relu_ext", cpp_sources=cpp_src, cuda_sources=cuda_src, functions=["relu_out"], verbose=False
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.graphs = {}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        key = (x.data_ptr(), tuple(x.shape))
        if key in self.graphs:
            graph, out = self.graphs[key]
            graph.replay()
            return out
        out = torch.empty_like(x)
        ext.relu_out(x, out)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            ext.relu_out(x, out)
        self.graphs[key] = (graph, out)
        return out
