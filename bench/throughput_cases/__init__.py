"""Tasks and correct candidates for `bench/judge_throughput.py`: five elementwise/row ops, CUDA and Triton variants.

Every CUDA candidate is a distinct source (block size and extension name differ), so no build is shared or cached;
all are written the KernelBench way (kernel and torch wrapper together in `cuda_sources`). `small=True` gives
shapes the Triton interpreter gets through on a CPU.
"""

from __future__ import annotations

OPS = ("relu", "gelu", "add", "scale", "softmax")

_TASK = '''import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, {args}):
        return {expr}


def get_inputs():
    return [{inputs}]


def get_init_inputs():
    return []
'''

_EXPR = {
    "relu": ("x", "torch.relu(x)"),
    "gelu": ("x", 'F.gelu(x, approximate="tanh")'),
    "add": ("x, y", "x + y"),
    "scale": ("x", "x * 2.5 + 0.5"),
    "softmax": ("x", "torch.softmax(x, dim=1)"),
}

# CUDA: per-element expression on `v` (and `w` for add).
_CUDA_ELEM = {
    "relu": "fmaxf(v, 0.f)",
    "gelu": "0.5f * v * (1.f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)))",
    "add": "v + w",
    "scale": "v * 2.5f + 0.5f",
}

_CUDA_ELEMENTWISE = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>
__global__ void {op}_kernel(const float* __restrict__ x, const float* __restrict__ y, float* __restrict__ out,
                            long n) {{
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) {{ float v = x[i]; float w = y ? y[i] : 0.f; (void)w; out[i] = {elem}; }}
}}
torch::Tensor {op}_cuda(torch::Tensor x, torch::Tensor y) {{
    auto out = torch::empty_like(x);
    long n = x.numel();
    const float* yp = y.numel() ? y.data_ptr<float>() : nullptr;
    {op}_kernel<<<(n + {block} - 1) / {block}, {block}>>>(x.data_ptr<float>(), yp, out.data_ptr<float>(), n);
    return out;
}}
"""
ext = load_inline(name="tp_{op}_{block}", cpp_sources="torch::Tensor {op}_cuda(torch::Tensor x, torch::Tensor y);",
                  cuda_sources=cuda_src, functions=["{op}_cuda"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, {args}):
        return ext.{op}_cuda({call})
'''

_CUDA_SOFTMAX = r'''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>
__global__ void softmax_kernel(const float* __restrict__ x, float* __restrict__ out, int cols) {{
    __shared__ float red[{block}];
    const float* row = x + (long)blockIdx.x * cols;
    float* orow = out + (long)blockIdx.x * cols;
    float m = -INFINITY;
    for (int c = threadIdx.x; c < cols; c += {block}) m = fmaxf(m, row[c]);
    red[threadIdx.x] = m; __syncthreads();
    for (int s = {block} / 2; s > 0; s >>= 1) {{
        if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
        __syncthreads();
    }}
    m = red[0]; __syncthreads();
    float sum = 0.f;
    for (int c = threadIdx.x; c < cols; c += {block}) sum += expf(row[c] - m);
    red[threadIdx.x] = sum; __syncthreads();
    for (int s = {block} / 2; s > 0; s >>= 1) {{
        if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();
    }}
    float inv = 1.f / red[0];
    for (int c = threadIdx.x; c < cols; c += {block}) orow[c] = expf(row[c] - m) * inv;
}}
torch::Tensor softmax_cuda(torch::Tensor x) {{
    auto out = torch::empty_like(x);
    softmax_kernel<<<x.size(0), {block}>>>(x.data_ptr<float>(), out.data_ptr<float>(), x.size(1));
    return out;
}}
"""
ext = load_inline(name="tp_softmax_{block}", cpp_sources="torch::Tensor softmax_cuda(torch::Tensor x);",
                  cuda_sources=cuda_src, functions=["softmax_cuda"], extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.softmax_cuda(x.contiguous())
'''

_TRITON_ELEM = {
    "relu": "tl.maximum(v, 0.0)",
    "gelu": "0.5 * v * (2.0 - 2.0 / (tl.exp(2.0 * 0.7978845608 * (v + 0.044715 * v * v * v)) + 1.0))",
    "add": "v + w",
    "scale": "v * 2.5 + 0.5",
}

_TRITON_ELEMENTWISE = '''import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def {op}_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x_ptr + offs, mask=mask)
    w = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, {elem}, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, {args}):
        x = x.contiguous()
        y = {y}
        out = torch.empty_like(x)
        n = x.numel()
        {op}_kernel[(triton.cdiv(n, {block}),)](x, y, out, n, BLOCK={block})
        return out
'''

_TRITON_SOFTMAX = '''import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    v = tl.load(x_ptr + row * cols + offs, mask=mask, other=-float("inf"))
    v = v - tl.max(v, axis=0)
    e = tl.exp(v)
    tl.store(out_ptr + row * cols + offs, e / tl.sum(e, axis=0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        softmax_kernel[(x.shape[0],)](x, out, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]),
                                      num_warps={warps})
        return out
'''


def task_source(op: str, small: bool) -> str:
    rows, cols = (64, 256) if small else (4096, 4096)
    args, expr = _EXPR[op]
    inputs = ", ".join(f"torch.randn({rows}, {cols})" for _ in args.split(", "))
    return _TASK.format(args=args, expr=expr, inputs=inputs)


def cuda_candidate(op: str, block: int) -> str:
    if op == "softmax":
        return _CUDA_SOFTMAX.format(block=block)
    args = _EXPR[op][0]
    call = "x.contiguous(), y.contiguous()" if op == "add" else "x.contiguous(), x.new_empty(0)"
    return _CUDA_ELEMENTWISE.format(op=op, block=block, elem=_CUDA_ELEM[op], args=args, call=call)


def triton_candidate(op: str, variant: int) -> str:
    if op == "softmax":
        return _TRITON_SOFTMAX.format(warps=(1, 2, 4, 8)[variant % 4])
    y = "y.contiguous()" if op == "add" else "x"
    return _TRITON_ELEMENTWISE.format(op=op, block=(256, 512, 1024, 2048)[variant % 4], elem=_TRITON_ELEM[op],
                                      args=_EXPR[op][0], y=y)  # fmt: skip


def cases(n_cuda: int = 20, n_triton: int = 20, small: bool = False) -> list[tuple[str, str, str, str]]:
    """(name, task source, candidate source, backend), CUDA first; at most 20 of each (5 ops x 4 variants)."""
    out = []
    for i in range(min(n_cuda, 20)):
        op, block = OPS[i % 5], (128, 256, 512, 1024)[i // 5]
        out.append((f"cuda_{op}_{block}", task_source(op, small), cuda_candidate(op, block), "cuda"))
    for i in range(min(n_triton, 20)):
        op, variant = OPS[i % 5], i // 5
        out.append((f"triton_{op}_{variant}", task_source(op, small), triton_candidate(op, variant), "triton"))
    return out
