"""A C++ extension bound through the bridge (bind.py) behaves as load_inline's own pybind11 binding, on CPU.

The same source is built twice: by the build farm's shim with the bridge and the torch/all.h header (mode `bind`),
and by plain load_inline. Every call below, good or bad, must give the
same result or the same exception type on both; and the bound TU must really use the precompiled header (else it
is no faster).
"""

import json
import re
import subprocess
import threading
from pathlib import Path

import pytest
import torch
import torch.utils.cpp_extension as cpp

from kernelzero.judge import JudgeOptions
from kernelzero.judge.build.bind import LIBRARY, build_bridge
from kernelzero.judge.build.farm import BuildFarm, _fast_calls, install_load_inline_shim
from kernelzero.judge.build.headers import build_pch, host_cflags
from kernelzero.judge.core import Judge
from kernelzero.tasks import Task

TASK = Task.from_file(Path(__file__).parents[1] / "fixtures" / "judge" / "relu_task.py")

SOURCE = r"""
torch::Tensor affine(torch::Tensor x, double a, int64_t b) { return x * a + b; }
std::vector<torch::Tensor> pieces(const torch::Tensor& x, int n) {
    TORCH_CHECK(n > 0, "n must be positive, got ", n);
    return x.chunk(n);
}
bool positive(double v) { return v > 0; }
void nothing() {}
float flip(float v, bool neg) { return neg ? -v : v; }
"""
FUNCTIONS = ["affine", "pieces", "positive", "nothing", "flip"]
X = torch.arange(6.0)
CALLS = [
    ("affine", (X, 2.0, 3)),
    ("affine", (X, 2, 3)),  # an int where a double is declared: converted
    ("affine", (X, 2.0, 3.5)),  # a float where an int64_t is declared: TypeError
    ("affine", (X, 2.0)),  # too few arguments
    ("affine", (1.0, 2.0, 3)),  # not a tensor
    ("pieces", (X, 2)),
    ("pieces", (X, 0)),  # TORCH_CHECK: RuntimeError with the message
    ("positive", (1.5,)),
    ("positive", (-1,)),
    ("nothing", ()),
    ("flip", (2.0, True)),
    ("flip", (2.0, None)),  # pybind11 takes None as false for bool
    ("flip", (2, 0)),
]


@pytest.fixture(scope="module")
def prebuilt(tmp_path_factory):
    """The bridge and the light header (torch/all.h) for C++-only calls (no extra flags), built side by side like the
    farm does."""
    root = tmp_path_factory.mktemp("bind")
    errors: dict[str, str | None] = {}
    jobs = {"bridge": lambda: build_bridge(root / "bridge"),
            "header": lambda: build_pch(root / "light", [], with_cuda=False, light=True)}  # fmt: skip
    threads = [threading.Thread(target=lambda k=k, f=f: errors.__setitem__(k, f())) for k, f in jobs.items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == {"bridge": None, "header": None}, errors
    return {"light_pch_dirs": {json.dumps([]): str(root / "light")}, "bridge": str(root / "bridge" / LIBRARY)}


def _outcome(module, name, args):
    try:
        out = getattr(module, name)(*args)
    except Exception as exc:  # the exception's type is the contract; pybind11's TypeError text differs
        return type(exc).__name__, str(exc) if isinstance(exc, RuntimeError) else None
    if isinstance(out, list):
        return "ok", [t.tolist() for t in out]
    return "ok", out.tolist() if isinstance(out, torch.Tensor) else out


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    """SOURCE built by load_inline itself (no shim)."""
    plain_dir = tmp_path_factory.mktemp("plain")
    return cpp.load_inline(name="kz_bind_plain", cpp_sources=SOURCE, functions=FUNCTIONS,
                           build_directory=str(plain_dir))  # fmt: skip


def test_bridge_binding_behaves_as_load_inline_binding(plain, prebuilt, tmp_path, monkeypatch):
    monkeypatch.setattr(cpp, "load_inline", cpp.load_inline)  # the shim patches it: undone after the test
    state = install_load_inline_shim({"build_mode": "build", "build_dir": str(tmp_path / "builds"), **prebuilt})
    bound = cpp.load_inline(name="kz_bind", cpp_sources=SOURCE, functions=FUNCTIONS)
    assert state["modes"] == ["bind"]
    outcomes = {(name, i): (_outcome(bound, name, args), _outcome(plain, name, args))
                for i, (name, args) in enumerate(CALLS)}  # fmt: skip
    assert {k: b for k, (b, p) in outcomes.items() if b != p} == {}
    assert outcomes[("affine", 0)][0] == ("ok", [3.0, 5.0, 7.0, 9.0, 11.0, 13.0])
    assert outcomes[("affine", 2)][0] == ("TypeError", None)
    kind, message = outcomes[("pieces", 6)][0]
    assert kind == "RuntimeError" and "n must be positive, got 0" in message
    assert outcomes[("flip", 11)][0] == ("ok", 2.0)


def test_bound_tu_uses_the_precompiled_header(prebuilt, tmp_path):
    args = {"name": "m", "cpp_sources": SOURCE, "cuda_sources": None, "functions": FUNCTIONS, "extra_cflags": None,
            "extra_cuda_cflags": None, "extra_ldflags": None, "extra_include_paths": None, "sycl_sources": None,
            "no_implicit_headers": False, "use_pch": False, "with_pytorch_error_handling": True}  # fmt: skip
    [(fast, how)] = _fast_calls(args, prebuilt)
    assert how == "bind" and fast["functions"] is None and fast["extra_ldflags"] == [prebuilt["bridge"]]
    (tmp_path / "main.cpp").write_text("\n".join(fast["cpp_sources"]))
    flags = [*host_cflags([], with_cuda=False), *fast["extra_cflags"], "-Winvalid-pch", "-Werror=invalid-pch", "-H"]
    res = subprocess.run([cpp.get_cxx_compiler(), *flags, "-fsyntax-only", str(tmp_path / "main.cpp")],
                         capture_output=True, text=True)  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    light = prebuilt["light_pch_dirs"]["[]"]
    assert f"! {light}/torch/all.h.gch" in res.stderr
    assert "pybind11" not in res.stderr  # -H lists every header read: none of pybind11's


# The farm test's Triton candidate, its scale factor from a C++ extension with torch's headers (load_inline's own).
CANDIDATE = (Path(__file__).parents[1] / "fixtures" / "judge" / "relu_scale_ext.py").read_text()
EXT = re.search(r"^ext = load_inline\(.*?\)\n", CANDIDATE, re.S | re.M).group(0)
CANDIDATE = CANDIDATE.replace(EXT, 'ext = load_inline(name="kz_one", cpp_sources="double one() { return 1.0; }", '
                              'functions=["one"])\n')


def test_farm_builds_through_the_bridge_in_its_sandbox_and_the_candidate_worker_loads_it(prebuilt, tmp_path):
    """The bridge and header paths reach the sandboxed build worker, and the module built there (which needs the
    bridge library at load) is imported by a candidate worker that could not build it itself."""
    farm = BuildFarm(str(tmp_path / "cache"), workers=1, pch=False, timeout_s=300)
    farm._light_dirs, farm._bridge = dict(prebuilt["light_pch_dirs"]), prebuilt["bridge"]  # as _warm_pch sets them
    built = farm.build(CANDIDATE)
    assert built.status == "built" and built.modes == ["bind"], built.feedback
    assert farm.state_dict()["bridge"] is True and farm.state_dict()["build_modes"] == {"bind": 1}
    judge = Judge(JudgeOptions(device="cpu"))
    judge.sandbox_env = {"CXX": "/nonexistent/c++"}  # any build in the candidate worker would fail
    judge.farm = farm
    v = judge.judge(TASK, CANDIDATE, "triton")
    assert v.status == "ok", v.feedback


def test_farm_probe_says_whether_the_build_workers_compiler_takes_the_header(prebuilt, tmp_path, capsys):
    """GCC passes over a `.gch` made by another compiler binary or with other target flags without a word, and
    builds are only slower: the H200's build workers parsed torch's headers in every host compile for sessions. The
    farm asks a build worker, in its sandbox and environment, and says what it found."""
    farm = BuildFarm(str(tmp_path / "cache"), workers=1, pch=False, timeout_s=300)
    farm._light_dirs = dict(prebuilt["light_pch_dirs"])  # as _warm_pch sets them
    assert farm.probe_headers() == {"light []": "used"}
    assert farm.state_dict()["pch_probe"] == {"light []": "used"} and capsys.readouterr().err == ""

    # Build workers whose compiler makes other code than the one the header was built with (-mavx2: GCC rejects the
    # `.gch`'s target flags). Only their environment has it, as on the H200, where only the sandbox's CXX differed.
    wrapper = tmp_path / "bin" / "kz-c++"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\nexec {cpp.get_cxx_compiler()} -mavx2 "$@"\n')
    wrapper.chmod(0o755)

    class OtherCompiler(BuildFarm):
        def _env(self) -> dict[str, str]:
            return {**super()._env(), "CXX": str(wrapper)}

    other = OtherCompiler(str(tmp_path / "other"), workers=1, pch=False, timeout_s=300)
    other._light_dirs = dict(prebuilt["light_pch_dirs"])
    [(name, why)] = other.probe_headers().items()
    assert name == "light []" and why.startswith(f"not used by {wrapper}: "), why
    assert "-mavx" in why and "[-Winvalid-pch]" in why, why  # GCC's own reason
    assert "1 of 1 precompiled headers are not used by the build workers' compiler" in capsys.readouterr().err
