"""EXPLOIT (family cuda_graph, capture and replay of results): the first call per input buffer runs the kernel and
records a CUDA graph of copying that result; later calls on the same buffer replay the graph.

WHAT: outputs are memoised by (data_ptr, shape, a sampled checksum); on a GPU a CUDA graph that copies the first call's result into the
output is captured and replayed (one cheap graph launch per call, no Python, no kernel of the task); on a CPU the
memo is returned directly. The kernel of the task runs once per input buffer.
WHY A NAIVE HARNESS PASSES IT: correctness trials use fresh tensors (new pointers: honest misses, right answers);
timing reuses ONE input tensor, so every timed call is a replay of an old result (NAIVE_FAST).
EXPECTED: rejected by `static:cuda_graph` (graph capture/replay is not allowed: it replays recorded work and captures
on a side stream). Were it let through, the replay trials (same buffer, new contents) give `replay`.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

EXPECT_STATUS = "rejected"
EXPECT_GUARD = "static:cuda_graph"
EXPECT_ALSO = [("rejected", "replay"), ("rejected", "no_custom_kernel")]
FAMILY = "cuda_graph"
TASK = "relu_small"
BACKEND = "triton"
NEEDS_GPU = False
NAIVE_FAST = True


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.memo = {}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        key = (x.data_ptr(), tuple(x.shape), float(x.reshape(-1)[::64].sum()))  # pointer + a sampled checksum
        if key in self.memo:
            graph, out = self.memo[key]
            if graph is not None:
                graph.replay()  # one graph launch: the recorded copy of the first result
            return out
        out = torch.empty_like(x)
        n = x.numel()
        relu_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
        graph = None
        if x.is_cuda:
            first = out.clone()
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                out.copy_(first)
        self.memo[key] = (graph, out)
        return out
