"""Static guards: each hack snippet hits with the right name; legit solutions pass every rule. Plus the pure
runtime-policy functions (library ops, degenerate canaries)."""

import textwrap

import pytest
import torch

from kernelzero.judge.core import degenerate_canary
from kernelzero.judge.guards import library_op_violation, main_compute, op_family, run_static
from kernelzero.judge.sandbox.harness import LaunchCounter, perturb

HEAD = (
    "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
    "import triton\nimport triton.language as tl\n"
)


def hit(body: str):
    result = run_static(HEAD + textwrap.dedent(body))
    return result[0] if result else None


HACKS = {
    "static:try_except": [
        "try:\n    import foo\nexcept ImportError:\n    foo = None\n",
        "def f(x):\n    try:\n        return g(x)\n    except Exception:\n        return torch.relu(x)\n",
        "import contextlib\nwith contextlib.suppress(Exception):\n    pass\n",
        "from contextlib import suppress\n",
    ],
    "static:reference_call": [
        "class ModelNew(Model):\n    pass\n",
        "class ModelNew(nn.Module):\n    def forward(self, x):\n        return Model()(x)\n",
        "import kz\nclass ModelNew(kz.Model):\n    pass\n",
    ],
    "static:threads": [
        "import threading\n",
        "from concurrent.futures import ThreadPoolExecutor\n",
        "import subprocess\n",
        "import asyncio\n",
        "import multiprocessing as mp\n",
        "import os\npid = os.fork()\n",
        "import torch.multiprocessing\n",
    ],
    "static:harness_import": [
        "import kernelzero\n",
        "from kernelzero.judge.sandbox import worker\n",
        "from kernelzero.judge.sandbox.worker import _Bound\n",
        "import kz_task\n",
        "m = sys.modules['kz_task']\n",
    ],
    "static:monkeypatch": [
        "torch.allclose = lambda *a, **k: True\n",
        "F.relu = lambda x: x\n",
        "torch.Tensor.__eq__ = lambda a, b: True\n",
        "setattr(torch, 'allclose', None)\n",
        "delattr(torch.nn.functional, 'softmax')\n",
        "import builtins\nbuiltins.print = None\n",
        "import time\ntime.perf_counter = lambda: 0.0\n",
        "f = torch.nn.functional\nf.softmax = None\n",
        "import sys\nsys.modules.update({})\n",
        "torch.cuda.Event.elapsed_time += 0\n",
    ],
    "static:introspection": [
        "import gc\n",
        "import inspect\n",
        "import ctypes\n",
        "import importlib\n",
        "import sys\nf = sys._getframe(1)\n",
        "import sys\nm = sys.modules\n",
        "def f():\n    pass\ng = f.__globals__\n",
        "c = (lambda: 0).__code__\n",
        "b = __builtins__\n",
        "m = __import__('torch')\n",
        "eval('1')\n",
        "exec('x = 1')\n",
        "code = compile('1', 'f', 'eval')\n",
        "fn = getattr(torch, 'soft' + 'max')\n",
        "from torch.utils._python_dispatch import _get_current_dispatch_mode\n",
        "with torch._C._DisableTorchDispatch():\n    pass\n",
    ],
    "static:precision": [  # TF32 in an fp32 task, hidden under a loose tolerance
        "torch.backends.cuda.matmul.allow_tf32 = True\n",
        "torch.backends.cudnn.allow_tf32 = True\n",
        "torch.set_float32_matmul_precision('high')\n",
        "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = True\n",
        "acc = tl.dot(a, b, input_precision='tf32')\n",
        "acc = tl.dot(a, b, allow_tf32=True)\n",
        "import os\nos.environ['TRITON_F32_DEFAULT'] = 'tf32'\n",
    ],
    "static:cuda_graph": [
        "g = torch.cuda.CUDAGraph()\n",
        "with torch.cuda.graph(g):\n    pass\n",
        "f = torch.cuda.make_graphed_callables(f, (x,))\n",
        "SRC = 'cudaGraphLaunch(exec, 0);'\n",
        "if torch.cuda.is_current_stream_capturing():\n    return x\n",
        "SRC = 'cudaStreamIsCapturing(at::cuda::getCurrentCUDAStream(), &status);'\n",
        "SRC = 'cudaStreamGetCaptureInfo_v2(s, &status, &id, 0, 0, 0);'\n",
    ],
    "static:rng": [
        "torch.manual_seed(42)\n",
        "torch.cuda.manual_seed_all(42)\n",
        "import numpy as np\nnp.random.seed(0)\n",
        "g = torch.Generator().manual_seed(0)\n",
        "torch.set_rng_state(state)\n",
    ],
    "static:file_io": [
        "f = open('/tmp/cache.pt', 'rb')\n",
        "import os\np = os.path.expanduser('~/.cache/kz')\n",
        "import os\nos.makedirs('/tmp/kz')\n",
        "y = torch.load('/tmp/y.pt')\n",
        "torch.save(y, '/tmp/y.pt')\n",
        "import pathlib\n",
        "import tempfile\n",
        "import pickle\n",
    ],
    "static:network": [
        "import socket\n",
        "import urllib.request\n",
        "import requests\n",
        "from pip._internal.cli.main import main\n",
        "m = torch.hub.load('a/b', 'c')\n",
        "CMD = 'pip install triton-nightly'\n",
    ],
    "static:obfuscation": [
        "import base64\n",
        "import codecs\n",
        "import builtins\nbuiltins.exec('x = 1')\n",
        "import builtins as b\nrun = b.eval\n",
        "from builtins import exec as run\n",
        "SRC = '#define CAT(a, b) a##b\\nCAT(cudaStream, Create)(&s);'\n",
    ],
    "static:streams": [
        "s = torch.cuda.Stream()\n",
        "with torch.cuda.stream(s):\n    pass\n",
        "SRC = 'cudaStream_t s; cudaStreamCreate(&s);'\n",
        "SRC = 'cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);'\n",
        "SRC = 'auto s = at::cuda::getStreamFromPool();'\n",
    ],
}


@pytest.mark.parametrize("guard,snippet", [(g, s) for g, snippets in HACKS.items() for s in snippets])
def test_hack_hits_its_guard(guard, snippet):
    assert hit(snippet) == guard


TRITON_RELU = """
@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, features=16):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(features))
        self.register_buffer("scale", torch.ones(1))
        self.cache_dict = self.__dict__

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        relu_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        for m in self.modules():
            pass
        return y
"""

CUDA_LOAD_INLINE = r'''
from torch.utils.cpp_extension import load_inline

cuda_src = """
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
__global__ void relu_kernel(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
torch::Tensor relu_cuda(torch::Tensor x) {
    auto y = torch::empty_like(x);
    int n = x.numel();
    auto stream = at::cuda::getCurrentCUDAStream();
    relu_kernel<<<(n + 255) / 256, 256, 0, stream>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
"""
cpp_src = "torch::Tensor relu_cuda(torch::Tensor x);"
ext = load_inline(name="relu_ext", cpp_sources=cpp_src, cuda_sources=cuda_src, functions=["relu_cuda"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.relu_cuda(x.contiguous())
'''


@pytest.mark.parametrize("source", [TRITON_RELU, CUDA_LOAD_INLINE], ids=["triton_relu", "cuda_load_inline"])
def test_legit_solutions_pass_every_static_guard(source):
    assert run_static(HEAD + source) is None


def test_op_family_normalises_overloads_and_inplace():
    assert op_family("aten::addmm.out") == op_family("mm") == op_family("bmm") == "gemm"
    assert op_family("relu_") == "relu" and op_family("_softmax") == "softmax"
    assert op_family("convolution") == op_family("_convolution") == "conv"
    assert op_family("__and__") == "__and__"


REF_SOFTMAX = {"_softmax": 4096}
REF_LINEAR_RELU = {"addmm": 3 * 1536, "relu": 3 * 1536, "t": 3 * 3072}


def test_library_op_policy():
    assert main_compute(REF_LINEAR_RELU) == {"gemm": 3 * 1536}  # GEMM present: the epilogue ops are not "main"
    assert "launched" in library_op_violation(REF_SOFTMAX, {}, 0)
    assert library_op_violation(REF_SOFTMAX, {"empty_like": 4096}, 1) is None  # a real kernel
    assert "softmax" in library_op_violation(REF_SOFTMAX, {"_softmax": 4096}, 1)  # decoy launch, torch does the work
    assert "softmax" in library_op_violation(REF_SOFTMAX, {"_softmax": 2048 + 2048}, 1)  # split in halves
    assert library_op_violation(REF_SOFTMAX, {"_softmax": 16}, 1) is None  # a small helper call is allowed
    mixed = {"mm": 3 * 1536, "empty": 1536}
    assert "gemm" in library_op_violation(REF_LINEAR_RELU, mixed, 1, "reject")
    assert library_op_violation(REF_LINEAR_RELU, mixed, 1, "allow_gemm") is None
    assert library_op_violation(REF_LINEAR_RELU, mixed, 0, "allow_gemm") is not None  # no epilogue kernel
    assert library_op_violation(REF_SOFTMAX, {"_softmax": 4096}, 1, "allow_gemm") is not None  # only GEMM/conv
    assert library_op_violation(REF_SOFTMAX, {}, None) is None  # launches not countable here: op check only


TOL = {"float32": 1e-4}


def test_degenerate_canaries():
    g = torch.Generator().manual_seed(0)
    real = [[torch.randn(4, 8, generator=g)] for _ in range(3)]
    assert degenerate_canary(real, [[None]] * 3, TOL, TOL) is None
    assert degenerate_canary([[torch.zeros(4, 8)]] * 3, [[None]] * 3, TOL, TOL) == "zeros"
    assert degenerate_canary([[torch.full((4, 8), 2.5)]] * 3, [[None]] * 3, TOL, TOL) == "mean"
    assert degenerate_canary(real, [[r[0].clone()] for r in real], TOL, TOL) == "input"  # identity task
    tiny = [[torch.randn(4, 8, generator=g) * 1e-6] for _ in range(3)]
    assert degenerate_canary(tiny, [[None]] * 3, TOL, TOL) == "zeros"  # below tolerance everywhere


class _Event:
    def __init__(self, name: str, device_type: str = "DeviceType.CUDA"):
        self.name, self.device_type = name, device_type


class _Trace:
    def events(self):
        return [
            _Event("void relu_kernel<float>(float const*, float*, int)"),  # templated, demangled
            _Event("(anonymous namespace)::k2(int)"),
            _Event("void at::native::vectorized_elementwise_kernel<4>(int)"),  # torch's own kernel
            _Event("relu_kernel", "DeviceType.CPU"),  # the host-side call, not a kernel
            _Event("my_relu_kernel2(float*)"),  # another name that merely contains it
        ]


def test_cuda_launch_count_matches_global_names_of_the_source():
    src = 'S = """__global__ void relu_kernel(float* x) {}\n__global__ __launch_bounds__(256) void k2(int n) {}"""'
    counter = LaunchCounter(src)
    assert counter.cuda_names == {"relu_kernel", "k2"}
    counter.count_cuda(_Trace())
    assert counter.count == 2


def test_replay_perturbation_is_deterministic_and_changes_signs():
    base = torch.randn(64, 32)
    a, b = [base.clone()], [base.clone()]
    perturb(torch, a, 1234, "cpu")
    perturb(torch, b, 1234, "cpu")
    assert torch.equal(a[0], b[0])  # reference and candidate workers see the same contents
    changed = (a[0] != base).nonzero()
    assert 1 <= len(changed) <= 2
    for i, j in changed.tolist():
        assert a[0][i, j].sign() != base[i, j].sign() and a[0][i, j].abs() >= 1
