"""The front check's host TU: which of g++'s errors on the split's host code it takes for a certain compile error.

The logs are g++'s own output (C locale) on the realistic mix's candidates (bench/throughput_cases/mix.py), compiled
against torch/extension.h as the check compiles them; the compile itself runs on the GPU machine's farm.
"""

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from kernelzero.judge.build.farm import BuildFarm
from kernelzero.judge.build.front import (
    HOST_CUT,
    HOST_END,
    FrontCheck,
    FrontResult,
    check_with_headers,
    conclude_host,
    host_cut_command,
    host_parsed,
    read_call,
)
from kernelzero.judge.build.split import CURRENT_STREAM

HOST_TU = """#include <torch/extension.h>
torch::Tensor sigmoid_cuda(torch::Tensor x, torch::Tensor y);
#include <cuda.h>
#include <cuda_runtime.h>
void kz_launch_k(dim3 kz_g, dim3 kz_b, size_t kz_s, cudaStream_t kz_st, const float* x, float* out, long n);
torch::Tensor sigmoid_cuda(torch::Tensor x, torch::Tensor y) {
    auto out = torch::empty_like(x)
    long n = x.numel();
    TORCH_CHECK(n > 0, "empty");
    kz_launch_k(dim3((n + 255) / 256), dim3(256), (size_t)(0), (cudaStream_t)(@), x, out.data_ptr<float>(), n);
    return out;
}
""".replace("@", CURRENT_STREAM)  # a launch written without a stream, as the split writes it

MISSING = """host.cpp: In function 'at::Tensor sigmoid_cuda(at::Tensor, at::Tensor)':
host.cpp:8:5: error: expected ',' or ';' before 'long'
    8 |     long n = x.numel();
      |     ^~~~
host.cpp:9:17: error: 'n' was not declared in this scope; did you mean 'c10::attr::n'?
"""
TENSOR = """host.cpp: In function 'at::Tensor sigmoid_cuda(at::Tensor, at::Tensor)':
host.cpp:10:84: error: cannot convert 'at::Tensor' to 'const float*'
   10 |     kz_launch_k(dim3((n + 255) / 256), dim3(256), (size_t)(0), (cudaStream_t)(@), x, out.data_ptr<float>(), n);
      |                                                                                    ^
      |                                                                                    |
      |                                                                                    at::Tensor
compilation terminated due to -Wfatal-errors.
""".replace("@", CURRENT_STREAM)


def test_a_missing_token_between_plain_statements_is_certain():
    r = conclude_host(1, MISSING, HOST_TU)
    assert r.status == "compile_error"
    assert "main.cpp:8:5: error: expected ',' or ';' before 'long'" in r.feedback and "host.cpp" not in r.feedback
    assert "'n' was not declared" not in r.feedback  # the cascade after the first error is not shown


def test_a_tensor_passed_for_a_pointer_is_certain_and_told_as_the_launch_the_candidate_wrote():
    r = conclude_host(1, TENSOR, HOST_TU)
    assert r.status == "compile_error" and "kz_launch" not in r.feedback
    assert "cannot convert 'at::Tensor' to 'const float*'" in r.feedback
    assert "k<<<dim3((n + 255) / 256), dim3(256)" in r.feedback
    # nor the current stream the split gave a launch without one (whose `CUDA` would otherwise read as a macro)
    assert "(cudaStream_t)(0), x" in r.feedback and "native_handle" not in r.feedback


@pytest.mark.parametrize(
    "log, why",
    [
        ("host.cpp:9:17: error: 'n' was not declared in this scope\n", "does not conclude"),  # depends on headers
        ("host.cpp:9:5: error: expected ';' before 'return'\n", "plain code"),  # TORCH_CHECK on the line before
        ("host.cpp:5:5: error: expected ')' before 'kz_g'\n", "plain code"),  # a stub's declaration
        ("host.cpp:3:10: fatal error: cuda.h: No such file or directory\n", "does not conclude"),
        (MISSING.replace("    8 |", "note: in expansion of macro 'FOO'\n    8 |"), "macro"),
        ("host.cpp:99:5: error: expected ';' before 'long'\n", "plain code"),  # past the TU's end
    ],
)
def test_anything_else_is_unsure(log, why):
    r = conclude_host(1, log, HOST_TU)
    assert r.status == "unsure" and why in r.why


def test_a_clean_compile_passes_and_a_check_that_did_not_run_is_unsure():
    assert conclude_host(0, "", HOST_TU).status == "passed"
    assert conclude_host(-1, "the front check did not finish: TimeoutExpired", HOST_TU).status == "unsure"


def test_the_host_tu_is_checked_only_with_the_farms_precompiled_header(tmp_path, monkeypatch):
    import torch.utils.cpp_extension as cpp

    monkeypatch.setattr(cpp, "CUDA_HOME", str(tmp_path / "cuda"))  # only named in the command (a CPU wheel has none)
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "9.0")  # as the farm's environment sets it
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from throughput_cases.mix import mix

    a = read_call(next(c for c in mix("cuda") if c.kind == "ok").source)
    assert FrontCheck(host_pch=lambda flags: None)._host_job(a) is None  # not built yet: the build decides
    farm = BuildFarm(str(tmp_path), workers=1, pch=False)
    monkeypatch.setattr(FrontCheck, "check", lambda self, source, host_cap_s=None, slots=None: FrontResult("passed"))
    farm._front_check("")  # makes the farm's checker, which reads the farm's headers
    assert farm._front.host_pch(["-O3"]) is None
    farm._pch_dirs['["-O3"]'] = str(tmp_path / "pch")
    tu, cmd = farm._front._host_job(a)
    assert tu.startswith("#include <torch/extension.h>") and "kz_launch_relu_kernel(" in tu
    assert f"-I{tmp_path / 'pch'}" in cmd and cmd[-2:] == ["-fsyntax-only", "host.cpp"]
    farm.close()


@pytest.mark.parametrize("first", ["passed", "unsure", "compile_error"])
def test_a_check_made_before_the_precompiled_header_is_made_again_once_it_is_ready(tmp_path, monkeypatch, first):
    """A front check begun while torch/extension.h was still being precompiled could not check the host TU: unless it
    already found a compile error, it is made again once the header is ready, and that result stands."""
    farm = BuildFarm(str(tmp_path), workers=1, pch=True)
    monkeypatch.setattr(farm, "start_pch", lambda: None)  # the header "being built": ready when the test says
    seen = []

    def check(self, source, host_cap_s=None, slots=None):
        seen.append(farm.pch_ready.is_set())
        if not farm.pch_ready.is_set():
            farm.pch_ready.set()  # it becomes ready during the first check
            return FrontResult(first)
        return FrontResult("compile_error", feedback="host.cpp: error")

    monkeypatch.setattr(FrontCheck, "check", check)
    result = farm._front_check("source")
    assert seen == ([False] if first == "compile_error" else [False, True])
    assert result.status == "compile_error"
    assert farm._front_check("source").status == "compile_error" and seen[-1] is True  # ready: checked once
    assert len(seen) == (2 if first == "compile_error" else 3)
    farm.close()


def _mix_source(kind: str) -> str:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from throughput_cases.mix import mix

    return next(c for c in mix("cuda") if c.kind == kind).source


KILLED = "c++: fatal error: Killed signal terminated program cc1plus\ncompilation terminated.\n"
AT_END = f"host.cpp:14:15: error: static assertion failed: {HOST_END}\ncompilation terminated due to -Wfatal-errors.\n"


@pytest.mark.parametrize(("host_rc", "host_log", "device_rc", "status", "why"),
                         [(1, AT_END, 0, "passed", HOST_CUT), (1, KILLED, 0, "passed", HOST_CUT),
                          (137, "", 0, "passed", HOST_CUT), (0, "", 0, "passed", ""),
                          (1, AT_END, 1, "unsure", "device")])  # fmt: skip
def test_a_host_check_stopped_after_the_parse_is_passed_where_the_device_tu_passed(tmp_path, monkeypatch, host_rc,
                                                                                   host_log, device_rc, status, why):
    """The farm's host check stops once g++ has parsed the candidate's code without an error (it stops at the first,
    `-Wfatal-errors`): at the assertion appended after that code, or at a CPU-seconds limit (its compiler proper
    killed: the driver says so and exits 1; or the wall-clock backstop, 137): passed, saying so; a device TU that
    failed decides as before (here an error it is not certain of)."""
    import torch.utils.cpp_extension as cpp

    monkeypatch.setattr(cpp, "CUDA_HOME", str(tmp_path / "cuda"))
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "9.0")
    runs = []
    log = "device.cu(3): error: expected a \";\"" if device_rc else ""
    monkeypatch.setattr(FrontCheck, "_run", lambda self, *args, **kw: (device_rc, log, None))
    monkeypatch.setattr(FrontCheck, "_run_host", lambda self, tu, cmd: runs.append((tu, cmd)) or (host_rc, host_log))
    front = FrontCheck(host_pch=lambda flags: str(tmp_path / "pch"), max_headers=0)
    result = front.check(_mix_source("ok"), host_cap_s=1.0)
    tu, command = runs[0]
    assert command[:7] == ["timeout", "-s", "KILL", "20", "sh", "-c", 'ulimit -t 1; exec "$@"']
    assert command[-3:] == ["-Wfatal-errors", "-fsyntax-only", "host.cpp"]  # g++ stops at the first error
    assert tu.rstrip().endswith(f'static_assert(false, "{HOST_END}");')  # after all of the candidate's code
    assert result.status == status and (result.why == why if why != "device" else result.why != HOST_CUT)


def test_the_host_cut_counts_cpu_seconds_and_is_told_from_a_compile_error(tmp_path):
    """A real g++ (no torch: a constexpr loop of billions of steps) run under `host_cut_command` is killed once it
    has spent 1 CPU second, however long that takes on a loaded machine, and the run reads as cut; g++ reporting the
    candidate's own error does not."""
    import shutil

    gxx = shutil.which("g++") or shutil.which("c++")
    if gxx is None:
        pytest.skip("no C++ compiler")
    (tmp_path / "spin.cpp").write_text(
        "constexpr long spin() { long s = 0; for (long i = 0; i < 40000000000L; ++i) s += i % 7; return s; }\n"
        "static_assert(spin() != 1);\n")  # fmt: skip
    (tmp_path / "bad.cpp").write_text("int f() { return undeclared_name; }\n")
    limits = ["-fconstexpr-loop-limit=2147483647", "-fconstexpr-ops-limit=4611686018427387904"]
    runs = {}
    for name in ("spin", "bad"):
        cmd = host_cut_command([gxx, *limits, "-Wfatal-errors", "-fsyntax-only", f"{name}.cpp"], 1.0)
        done = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=60)
        runs[name] = (done.returncode, done.stderr)
    assert host_parsed(*runs["spin"]), runs["spin"]
    assert runs["bad"][0] == 1 and "undeclared_name" in runs["bad"][1] and not host_parsed(*runs["bad"])


def test_the_end_marker_is_reported_only_after_the_candidates_code_parsed_clean(tmp_path):
    """Real g++ (no torch), first error fatal, as the farm runs it: a clean TU stops at the assertion appended after
    it (read as parsed), a TU with an error stops at that error (not read as parsed: conclude_host decides)."""
    import shutil

    from kernelzero.judge.build.front import _HOST_END_DECL

    gxx = shutil.which("g++") or shutil.which("c++")
    if gxx is None:
        pytest.skip("no C++ compiler")
    runs = {}
    for name, code in (("clean", "int f(int x) { return x + 1; }\n"), ("bad", "int f(int x) { return x + y; }\n")):
        (tmp_path / f"{name}.cpp").write_text(code + _HOST_END_DECL)
        cmd = host_cut_command([gxx, "-Wfatal-errors", "-fsyntax-only", f"{name}.cpp"], 1.0)
        done = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=60,
                              env={**os.environ, "LC_ALL": "C"})  # fmt: skip
        runs[name] = (done.returncode, done.stderr)
    assert runs["clean"][0] == 1 and HOST_END in runs["clean"][1] and host_parsed(*runs["clean"])
    assert "'y' was not declared" in runs["bad"][1] and HOST_END not in runs["bad"][1]
    assert not host_parsed(*runs["bad"])


def test_a_check_waits_for_a_slot_and_its_seconds_and_waits_are_told_apart(tmp_path, monkeypatch):
    """The farm's check takes one of its slots for each job; `seconds` counts the checks, `waited` the time before
    (here the only slot, a plain semaphore as the farm's was, is held for a while by another check)."""
    import torch.utils.cpp_extension as cpp

    monkeypatch.setattr(cpp, "CUDA_HOME", str(tmp_path / "cuda"))
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "9.0")
    slots, ready, jobs = threading.BoundedSemaphore(1), threading.Event(), []
    ready.set()
    monkeypatch.setattr(FrontCheck, "_run_host", lambda self, tu, command: jobs.append("host") or (1, AT_END))
    monkeypatch.setattr(FrontCheck, "_run", lambda self, *args, **kw: jobs.append("device") or (0, "", None))
    front = FrontCheck(host_pch=lambda flags: str(tmp_path / "pch"), max_headers=0)
    slots.acquire()
    threading.Timer(0.3, slots.release).start()
    result = check_with_headers(front, _mix_source("ok"), slots, ready, 1.0, 1.5)
    assert jobs == ["host", "device"] and (result.status, result.why) == ("passed", HOST_CUT)
    assert result.waited >= 0.2 and slots.acquire(blocking=False)  # both jobs gave their slot back
