"""The split build's launches (`judge/build/split.py`): each `k<<<...>>>(args)` in moved host code becomes a call of a
stub that makes the same launch; one that names no stream is given torch's current stream (the default stream
eagerly, the capturing one while the judge records a CUDA graph), one that names a stream keeps it."""

import sys
from pathlib import Path

import pytest

from kernelzero.judge.build.front_call import read_call
from kernelzero.judge.build.split import CURRENT_STREAM, split, split_call

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from throughput_cases.mix import mix  # noqa: E402

CU = """#include <torch/extension.h>
__global__ void twice(const float* x, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 2.f * x[i];
}
torch::Tensor twice_cuda(torch::Tensor x) {
    auto out = torch::empty_like(x);
    int n = x.numel();
    twice<<<LAUNCH>>>(x.data_ptr<float>(), out.data_ptr<float>(), n);
    return out;
}
"""


@pytest.mark.parametrize(
    "launch, shared, stream",
    [
        ("(n + 255) / 256, 256", "0", CURRENT_STREAM),  # no stream: torch's current one
        ("(n + 255) / 256, 256, 128", "128", CURRENT_STREAM),
        ("(n + 255) / 256, 256, 0, 0", "0", "0"),  # a stream named, even the default one: kept
        ("(n + 255) / 256, 256, 0, at::cuda::getCurrentCUDAStream()", "0", "at::cuda::getCurrentCUDAStream()"),
    ],
)
def test_a_launch_without_a_stream_is_given_torchs_current_one(launch, shared, stream):
    cpp, cuda = split(["torch::Tensor twice_cuda(torch::Tensor x);"], [CU.replace("LAUNCH", launch)])
    host, device = cpp[0], cuda[0]
    call = f"kz_launch_twice(dim3((n + 255) / 256), dim3(256), (size_t)({shared}), (cudaStream_t)({stream}), "
    assert call + "x.data_ptr<float>(), out.data_ptr<float>(), n);" in host
    assert "<<<" not in host and "torch" not in device
    # the stub launches exactly as written, on the stream it is handed
    assert "twice<<<kz_g, kz_b, kz_s, kz_st>>>(x, out, n);" in device


def test_the_mixs_cuda_candidates_launch_on_the_current_stream():
    """The realistic mix's correct CUDA candidates launch `k<<<g, b>>>`, as most model-written ones do: once split,
    every launch takes torch's current stream, so the judge's graph capture records them."""
    oks = [c for c in mix("cuda") if c.kind == "ok"]
    for case in oks:
        (cpp, _), _ = split_call(read_call(case.source))
        launches = [line for line in cpp[0].splitlines() if "kz_launch_" in line and "(dim3(" in line]
        assert launches and all(f"(cudaStream_t)({CURRENT_STREAM})" in line for line in launches), case.name
