"""The build farm's precompiled torch/extension.h is really used by the host TU of a split build (on CPU, g++).

Two ways it silently was not, before: a split TU includes torch/extension.h twice (load_inline's include, then the
moved host code's own), and GCC, having taken the `.gch`, looked for the header itself beside it for the second
include and failed, so every split build fell back to the plain one; and builds started before the header was
built never used it. `-Werror=invalid-pch` makes an unusable header an error here instead of a slow build.
"""

import json
import subprocess
import time
from pathlib import Path

import pytest

from kernelzero.judge.build.farm import BuildFarm, _fast_calls
from kernelzero.judge.build.headers import build_pch, host_cflags

# What load_inline writes for a split candidate: its own include, then the moved host code with the candidate's.
HOST_TU = """#include <torch/extension.h>
torch::Tensor scale_cuda(torch::Tensor x);
#include <torch/extension.h>
torch::Tensor scale_cuda(torch::Tensor x) { return x * 2.5 + 0.5; }
"""


@pytest.fixture(scope="module")
def pch(tmp_path_factory):
    out = tmp_path_factory.mktemp("pch") / "o3"
    assert build_pch(out, ["-O3"], with_cuda=False) is None
    return out


def test_split_host_tu_compiles_with_the_precompiled_header(pch, tmp_path):
    import torch.utils.cpp_extension as cpp

    (tmp_path / "main.cpp").write_text(HOST_TU)
    flags = [*host_cflags(["-O3"], with_cuda=False), f"-I{pch}", "-Winvalid-pch", "-Werror=invalid-pch", "-H"]
    res = subprocess.run([cpp.get_cxx_compiler(), *flags, "-fsyntax-only", str(tmp_path / "main.cpp")],
                         capture_output=True, text=True)  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    # -H marks a precompiled header it used with "!"
    assert f"! {pch}/torch/extension.h.gch" in res.stderr


def test_farm_probe_finds_its_build_workers_use_the_header(pch, tmp_path):
    """The farm's probe (a build worker compiling `#include <torch/extension.h>` with -H) sees the `.gch` used."""
    farm = BuildFarm(str(tmp_path), workers=1, pch=False, timeout_s=300)
    farm._pch_dirs = {json.dumps(["-O3"]): str(pch)}  # as _warm_pch sets them
    assert farm.probe_headers() == {'pch ["-O3"]': "used"}


def test_pch_flags_differ_by_optimisation_level():
    assert host_cflags(["-O3"], with_cuda=False)[-1] == "-O3"
    assert "-O3" not in host_cflags([], with_cuda=False)
    assert not any(f.startswith("-DTORCH_EXTENSION_NAME") for f in host_cflags([], with_cuda=False))


def _call(extra_cflags, extra_cuda_cflags):
    cuda = ("__global__ void k(float* p) { p[0] = 1.f; }\n"
            "torch::Tensor f(torch::Tensor x) { k<<<1, 1>>>(x.data_ptr<float>()); return x; }")
    return {"name": "m", "cpp_sources": "torch::Tensor f(torch::Tensor x);", "cuda_sources": cuda,
            "functions": ["f"], "extra_cflags": extra_cflags, "extra_cuda_cflags": extra_cuda_cflags,
            "extra_ldflags": None, "extra_include_paths": None, "no_implicit_headers": False, "sycl_sources": None,
            "use_pch": False, "with_pytorch_error_handling": True}  # fmt: skip


@pytest.mark.parametrize("cflags, cuda_cflags", [(None, ["-O3"]), (["-O3"], ["-O3"]), (["-O3"], None)])
def test_split_call_takes_the_o3_header_once(cflags, cuda_cflags):
    """KernelBench candidates often pass -O3 to both compilers: the host TU gets it once and the -O3 header."""
    [(fast, how)] = _fast_calls(_call(cflags, cuda_cflags), {"pch_dirs": {json.dumps(["-O3"]): "/pch/o3"}})
    assert fast["extra_cflags"] == ["-O3", "-I/pch/o3"] and how == "split+pch"
    # with the bridge and a torch/all.h header: bound through the bridge first, the split with pybind11 next
    job = {"pch_dirs": {'["-O3"]': "/pch/o3"}, "light_pch_dirs": {'["-O3"]': "/pch/all-o3"}, "bridge": "/b/lib.so"}
    (bound, first), (fast, second) = _fast_calls(_call(cflags, cuda_cflags), job)
    assert (first, second) == ("split+bind", "split+pch") and fast["extra_cflags"] == ["-O3", "-I/pch/o3"]
    assert bound["extra_cflags"] == ["-O3", "-I/pch/all-o3"] and bound["extra_ldflags"] == ["/b/lib.so"]
    assert bound["functions"] is None and bound["cpp_sources"][0].startswith("#include <torch/all.h>")
    assert 'kz_bridge_module("m", kz_fns, 1, 1)' in bound["cpp_sources"][0]


def test_all_headers_are_built_and_announced_once_ready(tmp_path, monkeypatch):
    """Headers are built when the first build starts, all flag sets at once; `pch_ready` is set after every flag set
    has its header (builds wait on it, bounded by pch_wait_s)."""
    import kernelzero.judge.build.bind as bind
    import kernelzero.judge.build.farm as build

    def slow(out, flags, with_cuda, light=False):
        time.sleep(0.5)
        (out / "torch").mkdir(parents=True)
        (out / ("torch/all.h.gch" if light else "torch/extension.h.gch")).write_text("")

    def bridge(out):
        out.mkdir(parents=True)
        (out / bind.LIBRARY).write_text("")

    monkeypatch.setattr(build, "build_pch", slow)
    monkeypatch.setattr(build, "build_bridge", bridge)  # the farm binds the name at import
    probed: list[bool] = []  # (these headers are empty files: the real probe is tested in test_bind.py)
    monkeypatch.setattr(BuildFarm, "probe_headers", lambda self: probed.append(self.pch_ready.is_set()))
    farm = BuildFarm(str(tmp_path), workers=1)
    time.sleep(0.6)
    assert not farm.pch_ready.is_set() and not farm._pch_dirs  # not before a build needs them (Triton-only runs)
    farm.start_pch()
    farm.start_pch()  # once
    assert farm.pch_ready.wait(30)
    assert sorted(json.loads(k) for k in farm._pch_dirs) == sorted(build.PCH_FLAG_SETS)
    assert sorted(json.loads(k) for k in farm._light_dirs) == sorted(build.PCH_FLAG_SETS)
    assert farm._bridge.endswith(bind.LIBRARY) and set(farm._light_dirs.values()).isdisjoint(farm._pch_dirs.values())
    assert all((Path(d) / "torch/all.h.gch").is_file() for d in farm._light_dirs.values())
    deadline = time.monotonic() + 30
    while not probed and time.monotonic() < deadline:
        time.sleep(0.05)
    assert probed == [True]  # the probe runs once, after builds may go on (`pch_ready` set)


def test_build_jobs_carry_the_bridge_unless_bind_is_off(tmp_path, monkeypatch):
    """`bind=False` (the throughput bench's A/B) gives build workers no bridge, so builds keep pybind11."""
    farm = BuildFarm(str(tmp_path), workers=1, pch=False)
    farm._light_dirs, farm._bridge = {"[]": "/light"}, "/bridge/libkzbridge.so"
    jobs = []

    def take(job):
        jobs.append(job)
        raise RuntimeError("no worker in this test")

    monkeypatch.setattr(farm, "_sandbox", take)
    for bind in (True, False):
        farm.bind = bind
        with pytest.raises(RuntimeError, match="no worker"):
            farm._run(f"source {bind}", f"key {bind}")
    assert farm.state_dict()["bridge"] is False  # what the bench prints: builds now keep pybind11
    assert [(j["bridge"], j["light_pch_dirs"]) for j in jobs] == [("/bridge/libkzbridge.so", {"[]": "/light"}),
                                                                  (None, {"[]": "/light"})]  # fmt: skip
