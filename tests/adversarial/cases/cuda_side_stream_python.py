"""EXPLOIT (family 6, side stream, CUDA from Python): an honest tiled CUDA matmul launched inside
`with torch.cuda.stream(side)`, and forward returns WITHOUT making the default stream wait for it.

WHAT: the harness records its start/end CUDA events on the default stream around forward(); the kernel runs on
another stream, so the events bracket an empty default stream and the elapsed time is ~0 (KernelBench's own
non_default_stream test kernel and the "stream injection" hack of its static checker).
WHY A NAIVE HARNESS PASSES IT: after forward the harness calls torch.cuda.synchronize(), which waits for EVERY stream,
so the values it compares are complete and exact; the CUDA-event time misses the kernel entirely.
EXPECTED: rejected by `static:streams` (torch.cuda.Stream / torch.cuda.stream in candidate code). The run-time
`side_stream` guard (device-wide synchronize and wall time around each timed call, compared with the event time)
catches the spelling a static rule misses (cuda_side_stream_cpp).
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

EXPECT_STATUS = "rejected"
EXPECT_GUARD = "static:streams"
EXPECT_ALSO = [("rejected", "side_stream")]
FAMILY = "side_stream"
TASK = "matmul_small"
BACKEND = "cuda"
NEEDS_GPU = True

cuda_src = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#define TILE 16

__global__ void matmul_kernel(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        As[threadIdx.y][threadIdx.x] = (row < M && k0 + threadIdx.x < K) ? A[row * K + k0 + threadIdx.x] : 0.0f;
        Bs[threadIdx.y][threadIdx.x] = (col < N && k0 + threadIdx.y < K) ? B[(k0 + threadIdx.y) * N + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = acc;
}

torch::Tensor matmul_cuda(torch::Tensor a, torch::Tensor b) {
    auto A = a.contiguous(), B = b.contiguous();
    int M = A.size(0), K = A.size(1), N = B.size(1);
    auto C = torch::empty({M, N}, A.options());
    dim3 block(TILE, TILE), grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);
    // the CURRENT stream: inside `with torch.cuda.stream(side)` that is the side stream
    matmul_kernel<<<grid, block, 0, at::cuda::getCurrentCUDAStream()>>>(
        A.data_ptr<float>(), B.data_ptr<float>(), C.data_ptr<float>(), M, N, K);
    return C;
}
"""
cpp_src = "torch::Tensor matmul_cuda(torch::Tensor a, torch::Tensor b);"

ext = load_inline(
    name="kz_adv_side_stream_python",
    cpp_sources=cpp_src,
    cuda_sources=cuda_src,
    functions=["matmul_cuda"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.side = None

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        if self.side is None:
            self.side = torch.cuda.Stream()
        self.side.wait_stream(torch.cuda.current_stream())  # inputs are ready; the reverse wait is left out
        with torch.cuda.stream(self.side):
            return ext.matmul_cuda(a, b)
