"""The CUDA build farm's cache logic, on CPU: a C++-only `load_inline` extension stands in for a CUDA one.

What this proves on CPU: the build job runs in a sandbox and its output is promoted into the cache; a repeated
candidate is a cache hit that schedules no build job; the candidate worker loads the cached module instead of
building (it is given a compiler that does not exist, and still passes); compile errors are cached as such; a
killed build leaves nothing behind; a candidate that cannot be built on CPU falls back. What it does not prove:
that nvcc output loads on a GPU (the GPU suite and bench/judge_throughput.py check that on the H200).
"""

import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kernelzero.judge import JudgeOptions
from kernelzero.judge.build.farm import BUILD_NICE, BuildFarm
from kernelzero.judge.core import Judge
from kernelzero.tasks import Task

FIX = Path(__file__).parents[1] / "fixtures" / "judge"
TASK = Task.from_file(FIX / "relu_task.py")

# pybind11 only (no torch headers), so the build takes seconds on a 2-core CPU; the kernel itself is Triton.
CANDIDATE = (FIX / "relu_scale_ext.py").read_text()


@pytest.fixture(scope="module")
def farm(tmp_path_factory):
    return BuildFarm(str(tmp_path_factory.mktemp("cache")), arch="9.0", workers=1, pch=False, timeout_s=300)


@pytest.fixture(scope="module")
def first(farm):
    return farm.build(CANDIDATE)


def test_build_is_promoted_into_the_cache(farm, first):
    assert first.status == "built" and not first.hit, first.feedback
    entry = Path(first.path)
    assert entry.parent == farm.root and (entry / "manifest.json").is_file()
    assert len(list(entry.glob("*/kz_scale_*.so"))) == 1  # name made unique by content
    assert not list(farm.root.glob(".tmp-*"))
    # no cuda_sources, so no split: built as written, and the farm counts it so (the H200 figures need this)
    assert first.modes == ["plain"] and farm.state_dict()["build_modes"] == {"plain": 1}
    # where the build's time went, from torch's .ninja_log: one C++ object and the link, no nvcc step
    assert set(first.steps) == {"host", "link"} and first.steps["host"] > 0, first.steps
    assert farm.state_dict()["build_step_median_s"] == first.steps


def test_build_workers_compile_with_the_judges_cxx(tmp_path, monkeypatch):
    """The farm's headers are precompiled with CXX, and GCC passes over a `.gch` another compiler binary made without
    a word: the build workers must get CXX too (on the H200, CXX=/opt/gcc/bin/g++ and PATH's c++, both GCC
    13.3, and every host compile parsed torch's headers again, 11.1 s instead of 3.8 s)."""
    wrapper = tmp_path / "bin" / "kz-c++"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\nexec {shutil.which("c++")} "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("CXX", str(wrapper))
    farm = BuildFarm(str(tmp_path / "cache"), workers=1, pch=False, timeout_s=300)
    built = farm.build(CANDIDATE)
    assert built.status == "built" and not built.hit, built.feedback
    ninja = next(Path(built.path).rglob("build.ninja")).read_text()  # torch's own record of the compiler it ran
    assert re.search(r"^cxx = (.*)$", ninja, re.M).group(1) == str(wrapper)


def test_ninja_steps_sums_seconds_per_step_kind(tmp_path):
    from kernelzero.judge.build.farm import ninja_steps

    log = "# ninja log v5\n0\t4200\t0\tmain.o\tab\n10\t9010\t0\tcuda.cuda.o\tcd\n9010\t9510\t0\tx.so\tef\n"
    (tmp_path / "a" / "split").mkdir(parents=True)
    (tmp_path / "a" / "split" / ".ninja_log").write_text(log)
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / ".ninja_log").write_text(log + "garbage line\n")
    assert ninja_steps(tmp_path) == {"host": 8.4, "nvcc": 18.0, "link": 1.0}


def test_repeated_candidate_is_a_hit_without_a_build_job(farm, first):
    started = farm.builds_started
    again = farm.build(CANDIDATE)
    assert again.hit and again.status == "built" and again.path == first.path
    assert farm.builds_started == started


def test_candidate_worker_loads_the_cached_module(farm, first):
    judge = Judge(JudgeOptions(device="cpu"))
    judge.sandbox_env = {"CXX": "/nonexistent/c++"}  # any build in the candidate worker would fail
    judge.farm = farm
    v = judge.judge(TASK, CANDIDATE, "triton")
    assert v.status == "ok", v.feedback
    assert "build_farm" in v.stage_s
    judge.farm = None  # control: without the farm, the same worker must build and so fails
    v = judge.judge(TASK, CANDIDATE, "triton")
    assert v.status == "compile_error"


def test_the_build_starts_before_the_reference_is_computed(monkeypatch):
    """A cold task's reference takes 10-20 s on a GPU: the farm builds meanwhile instead of after it."""
    from concurrent.futures import Future

    from kernelzero.judge.build.farm import BuildResult

    order = []
    built = Future()  # the build ends once the reference has been asked for

    class Farm:
        def submit(self, source, front=True):
            order.append("build")
            return built

    def reference(task):
        order.append("reference")
        built.set_result(BuildResult("compile_error", feedback="nvcc: error"))
        return real(task)

    judge = Judge(JudgeOptions(device="cpu"))
    judge.farm = Farm()
    real = judge.reference
    monkeypatch.setattr(judge, "reference", reference)
    v = judge.judge(TASK, CANDIDATE, "triton")
    assert order == ["build", "reference"]
    assert v.status == "compile_error" and "nvcc: error" in v.feedback


def test_compile_error_is_cached(farm):
    broken = CANDIDATE.replace("return 1.0;", "return 1.0 +;")
    r = farm.build(broken)
    assert r.status == "compile_error" and "Error building extension" in r.feedback
    started = farm.builds_started
    assert farm.build(broken).hit and farm.builds_started == started


def test_killed_build_leaves_nothing(tmp_path):
    slow = "import time\ntime.sleep(60)\nfrom torch.utils.cpp_extension import load_inline\n"
    farm = BuildFarm(str(tmp_path), workers=1, pch=False, timeout_s=2)
    r = farm.build(slow)
    assert r.status == "fallback" and r.path is None
    assert [p.name for p in tmp_path.iterdir()] == []


def test_stale_promotion_is_cleaned_and_cpu_unbuildable_falls_back(tmp_path):
    (tmp_path / ".tmp-leftover").mkdir()
    farm = BuildFarm(str(tmp_path), workers=1, pch=False)
    assert not (tmp_path / ".tmp-leftover").exists()
    touches_cuda = "import torch\ntorch.cuda.current_device()\nfrom torch.utils.cpp_extension import load_inline\n"
    r = farm.build(touches_cuda)
    assert r.status == "fallback" and r.path is None and r.feedback


def test_warm_farm_builds_in_a_prespawned_worker_and_closes(tmp_path):
    """`warm=True` (what JudgePool uses): build jobs go to workers spawned ahead with torch imported, each replaced
    after its one job; none is spawned before the first build; close() stops them all."""
    farm = BuildFarm(str(tmp_path), workers=1, pch=False, warm=True)
    assert farm._warm is None  # a Triton-only run never spawns build workers

    def ready():
        deadline = time.monotonic() + 60
        while not farm._warm._ready and time.monotonic() < deadline:  # refilled in the background
            time.sleep(0.1)
        return list(farm._warm._ready)

    r = farm.build("raise RuntimeError('stop here')  # load_inline\n")
    assert r.status == "fallback" and "stop here" in r.feedback and farm.builds_started == 1
    (waiting,) = ready()
    r = farm.build("raise RuntimeError('again')  # load_inline\n")
    assert r.status == "fallback" and "again" in r.feedback and farm.builds_started == 2
    assert not waiting.alive()  # that pre-spawned worker ran the second build, and a worker serves one job
    (refill,) = ready()
    assert refill is not waiting and refill.alive()
    farm.close()
    assert not refill.alive()


def test_farm_defaults_to_one_build_per_core_and_resizes(tmp_path, monkeypatch):
    """One build per core by default (a build is one long host compile); a resize applies to new builds, and a
    build running across it gives its slot back to the semaphore it took it from."""
    monkeypatch.setattr("os.cpu_count", lambda: 16)
    farm = BuildFarm(str(tmp_path), pch=False)
    assert farm.workers == 16
    old = farm._slots
    assert old.acquire(blocking=False)  # a build holding a slot of the old size
    farm.resize(3)
    assert farm.workers == 3
    taken = [farm._slots.acquire(blocking=False) for _ in range(4)]
    assert taken == [True, True, True, False]
    old.release()  # the running build finishes: back to its own semaphore, not the new one
    for _ in range(3):
        farm._slots.release()
    with pytest.raises(ValueError):  # the new semaphore is bounded at 3: nothing from the old one reached it
        farm._slots.release()
    monkeypatch.setattr("os.cpu_count", lambda: None)
    assert BuildFarm(str(tmp_path / "unknown"), pch=False).workers == 2


def test_builds_run_niced_and_the_front_check_does_not(tmp_path):
    """Builds take every core in a batch: they yield it to the front check (a compile error answered in about a
    second) and to the GPU workers' host threads. The worker applies KZ_NICE to itself and so to its compilers."""
    farm = BuildFarm(str(tmp_path), workers=1, pch=False)
    assert farm._env()["KZ_NICE"] == str(BUILD_NICE) and "KZ_NICE" not in farm._env(0)
    script = ("import os; from kernelzero.judge.sandbox.worker import apply_nice; before = os.nice(0); "
              "apply_nice('3'); apply_nice(''); print(os.nice(0) - before); "
              "print(open('/proc/self/autogroup').read().split()[-1] if os.path.exists('/proc/self/autogroup') "
              "else 'none')")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True,
                         start_new_session=True)  # a session of its own, as a sandboxed worker  # fmt: skip
    relative, group = out.stdout.split()
    assert relative == "3" and group in ("3", "none")  # with autogroup scheduling, the session's niceness too
