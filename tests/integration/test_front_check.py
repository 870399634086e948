"""The front check (judge/build/front.py) with the real nvcc, on the realistic mix's CUDA candidates.

What this proves on CPU (nvcc compiles here; nothing built runs): the two device-side compile errors of the mix (an
undeclared identifier, a helper never defined) are answered `compile_error` with nvcc's message; the host-side ones
(a missing semicolon, a tensor passed for a pointer) are not concluded, and go to the normal build; buildable
candidates of every kind pass (a sample: bench/front_check.py runs all 45); a candidate the check cannot read
is built as before, and a certain error is the farm's result without a build. Where torch is a CPU wheel its
CUDA_HOME is None: the tests point it at the nvcc on PATH (they compile, never run).
"""

import shutil
import sys
import threading
from pathlib import Path

import pytest

from kernelzero.judge.build.farm import BuildFarm, BuildResult
from kernelzero.judge.build.front import HOST_CUT, FrontCheck, FrontResult

sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))
from throughput_cases.mix import mix  # noqa: E402

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
CASES = mix("cuda")


def first(kind: str, flaw: str = "", op: str = "") -> str:
    return next(c.source for c in CASES if c.kind == kind and c.flaw == flaw and op in c.name)


@pytest.fixture(scope="module")
def check():
    import torch.utils.cpp_extension as cpp

    saved = cpp.CUDA_HOME
    if saved is None:
        cpp.CUDA_HOME = str(Path(shutil.which("nvcc")).resolve().parents[1])
    yield FrontCheck(arch="9.0", timeout_s=120)
    cpp.CUDA_HOME = saved


@pytest.mark.parametrize(
    "flaw, op, name",
    [("undeclared identifier", "", "blockDimx"), ("undefined helper", "softmax", "fast_exp")],
)
def test_device_errors_are_answered_with_nvccs_message(check, flaw, op, name):
    r = check.check(first("compile", flaw, op))
    assert r.status == "compile_error", r.why
    assert f'error: identifier "{name}" is undefined' in r.feedback and r.feedback.startswith("Error building")


@pytest.mark.parametrize("flaw", ["missing semicolon", "tensor for a pointer"])
def test_host_errors_are_left_to_the_build(check, flaw):
    # the device TU is clean: the check passes, and the build (today's path) finds the error
    assert check.check(first("compile", flaw)).status == "passed"


@pytest.mark.parametrize(
    "kind, flaw, op",
    [
        ("ok", "", "softmax"),
        ("ok", "", "gelu"),
        ("wrong", "skips the last element", ""),
        ("hang", "kernel never ends", ""),
    ],
)
def test_buildable_candidates_pass(check, kind, flaw, op):
    r = check.check(first(kind, flaw, op))
    assert (r.status, r.feedback) == ("passed", "")


@pytest.fixture(scope="module")
def host_check():
    """A check of the host TU too, against torch/extension.h parsed each time (no precompiled header here: ~12 s a
    host error on 2 cores), with CUDA's headers from the toolkit beside nvcc."""
    import torch.utils.cpp_extension as cpp

    homes = [Path(shutil.which("nvcc")).resolve().parents[1], Path("/usr/local/cuda")]  # nvcc may be a wrapper
    home = next((h for h in homes if (h / "include" / "cuda.h").is_file()), None)
    if home is None:
        pytest.skip("no CUDA headers beside nvcc")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cpp, "CUDA_HOME", str(home))
        patch.setenv("TORCH_CUDA_ARCH_LIST", "9.0")  # as the farm's environment sets it (torch asks a GPU otherwise)
        yield FrontCheck(arch="9.0", timeout_s=120, host_without_pch=True)


def test_with_the_host_tu_a_host_error_is_answered_by_gxx_before_any_device_job(host_check, monkeypatch):
    device_jobs, run = [], FrontCheck._run
    monkeypatch.setattr(FrontCheck, "_run", lambda self, *a, **kw: device_jobs.append(a) or run(self, *a, **kw))
    r = host_check.check(first("compile", "missing semicolon"))
    assert r.status == "compile_error", r.why
    assert "main.cpp:9:5: error: expected ',' or ';' before 'long'" in r.feedback and device_jobs == []


def test_with_the_host_tu_a_correct_candidate_passes(host_check):
    """Its host TU compiles as the split writes it: the launch, written without a stream, takes torch's current one
    through c10's device-generic interface, which a CPU wheel's headers hold too."""
    r = host_check.check(first("ok", "", "gelu"))
    assert (r.status, r.feedback, r.why) == ("passed", "", "")


@pytest.mark.parametrize(
    "kind, flaw, status, feedback",
    [("compile", "undeclared identifier", "compile_error", 'identifier "blockDimx" is undefined'),
     ("ok", "", "passed", "")],
)  # fmt: skip
def test_with_the_host_tu_cut_the_device_tu_still_decides(host_check, kind, flaw, status, feedback):
    # cut at 1 CPU second, as the farm cuts it: here inside torch's header (not precompiled), read as parsed
    r = host_check.check(first(kind, flaw), host_cap_s=1.0)
    assert r.status == status and feedback in r.feedback and r.feedback.startswith(feedback and "Error building")
    assert r.why == ("" if status == "compile_error" else HOST_CUT)


def test_a_call_it_cannot_read_is_skipped(check):
    src = first("compile", "undeclared identifier").replace('cuda_src = r"""', 'cuda_src = str(r"""', 1)
    src = src.replace('"""\next = ', '""")\next = ', 1)
    r = check.check(src)
    assert r.status == "skipped" and r.why == "its load_inline call cannot be read"


def test_the_farm_answers_a_certain_error_without_building(tmp_path, monkeypatch):
    farm = BuildFarm(str(tmp_path), workers=1, pch=False)
    ran = []
    monkeypatch.setattr(farm, "_run", lambda source, key: ran.append(key) or BuildResult("built", "x"))
    verdicts = {"certain": FrontResult("compile_error", feedback="Error building extension: nvcc says"),
                "unsure": FrontResult("unsure", why="a syntax error")}  # fmt: skip
    monkeypatch.setattr(farm, "_front_check", lambda source: verdicts[source.split()[-1]])
    certain = farm.build("load_inline certain")
    assert (certain.status, certain.feedback, ran) == ("compile_error", "Error building extension: nvcc says", [])
    assert certain.front is verdicts["certain"] and farm.build("load_inline certain").hit  # cached as a build's
    unsure = farm.build("load_inline unsure")
    assert unsure.status == "built" and ran == [farm.key("load_inline unsure")] and unsure.front.status == "unsure"
    off = farm.build("load_inline certain but off", front=False)
    assert off.status == "built" and off.front is None and len(ran) == 2


def test_a_certain_error_does_not_wait_for_a_build_slot(tmp_path, monkeypatch):
    farm = BuildFarm(str(tmp_path), workers=1, pch=False)
    running, release = threading.Event(), threading.Event()

    def slow_build(source, key):  # holds the farm's only build slot until released
        running.set()
        release.wait(30)
        return BuildResult("built", "x")

    monkeypatch.setattr(farm, "_run", slow_build)
    verdicts = {"certain": FrontResult("compile_error", feedback="Error building extension: nvcc says"),
                "fine": FrontResult("passed")}  # fmt: skip
    monkeypatch.setattr(farm, "_front_check", lambda source: verdicts[source.split()[-1]])
    try:
        building = farm.submit("load_inline fine")
        assert running.wait(10)
        certain = farm.submit("load_inline certain").result(timeout=10)  # the slot is still held
        assert certain.status == "compile_error" and not building.done()
    finally:
        release.set()
    assert building.result(timeout=10).status == "built"
    farm.close()


def test_a_build_under_way_is_shared_not_asked_again(tmp_path, monkeypatch):
    """The pool and the judge thread both submit every CUDA candidate: the second gets the first one's future (no
    farm thread held waiting on the build's lock), and one finished asks afresh (then from the cache)."""
    farm = BuildFarm(str(tmp_path), workers=1, pch=False)
    running, release, ran = threading.Event(), threading.Event(), []

    def slow_build(source, key):  # a build, then its cache entry, as `_run` promotes one
        ran.append(key)
        running.set()
        release.wait(30)
        (tmp_path / key).mkdir()
        (tmp_path / key / "manifest.json").write_text('{"status": "built"}')
        return BuildResult("built", str(tmp_path / key))

    monkeypatch.setattr(farm, "_run", slow_build)
    monkeypatch.setattr(farm, "_front_check", lambda source: FrontResult("passed"))
    try:
        first = farm.submit("load_inline fine")
        assert running.wait(10)
        assert farm.submit("load_inline fine") is first
        other = farm.submit("load_inline fine", front=False)  # another question: its own build call
        assert other is not first
    finally:
        release.set()
    assert first.result(timeout=10).status == "built" and other.result(timeout=10).status == "built"
    assert ran == [farm.key("load_inline fine")]  # the third waited on the lock, then found the cache entry
    again = farm.submit("load_inline fine")
    assert again is not first and again.result(timeout=10).hit
    farm.close()
