"""The farm's front-check slots (judge/build/front.py `FrontSlots`) and the order a check takes them in: the host TU's
job first, at the more urgent priority, and a compile error certain there answered without the device TU's job; a
device TU that names something declared nowhere (`undeclared_names`) before every host TU."""

import sys
import threading
import time
from pathlib import Path

import pytest

from kernelzero.judge.build.front import (
    DEVICE_NEXT,
    HOST_CUT,
    HOST_END,
    HOST_FIRST,
    SUSPECT_FIRST,
    FrontCheck,
    FrontResult,
    FrontSlots,
    HeaderFacts,
    read_call,
    undeclared_names,
)


def _queued(slots: FrontSlots, n: int) -> None:
    """Waits until `n` takers are queued (the tests' one look inside: a taker's arrival is its place in line)."""
    deadline = time.monotonic() + 10
    while len(slots._waiting) < n:
        assert time.monotonic() < deadline, "a taker never queued"
        time.sleep(0.005)


def _in_thread(fn) -> threading.Thread:
    thread = threading.Thread(target=fn, daemon=True)
    thread.start()
    return thread


def test_a_more_urgent_waiter_goes_first_and_waiters_of_one_priority_in_arrival_order():
    slots, order, held, release = FrontSlots(1), [], threading.Event(), threading.Event()

    def hold():
        with slots.take(HOST_FIRST):
            held.set()
            release.wait(10)

    def take(name, priority):
        with slots.take(priority):
            order.append(name)

    threads = [_in_thread(hold)]
    assert held.wait(10)
    arrivals = [("device 1", DEVICE_NEXT), ("device 2", DEVICE_NEXT), ("host 1", HOST_FIRST), ("host 2", HOST_FIRST)]
    for k, (name, priority) in enumerate(arrivals):
        threads.append(_in_thread(lambda name=name, priority=priority: take(name, priority)))
        _queued(slots, k + 1)  # each queued before the next arrives
    release.set()
    for thread in threads:
        thread.join(10)
    assert order == ["host 1", "host 2", "device 1", "device 2"]  # the host checks queued later still went first


def test_n_slots_are_held_at_once_and_the_next_taker_waits_for_one_back():
    slots, got = FrontSlots(2), threading.Event()
    with slots.take(DEVICE_NEXT), slots.take(DEVICE_NEXT):  # both free: neither waits

        def take():
            with slots.take(HOST_FIRST):
                got.set()

        thread = _in_thread(take)
        _queued(slots, 1)
        assert not got.is_set()  # queued, and no slot free
    assert got.wait(10)
    thread.join(10)


def test_a_taker_interrupted_in_the_queue_leaves_it():
    slots, got = FrontSlots(1), threading.Event()

    def interrupted(timeout=None):
        raise KeyboardInterrupt

    def take():
        with slots.take(DEVICE_NEXT):
            got.set()

    with slots.take(HOST_FIRST):
        slots._turn.wait = interrupted  # the next taker's wait for the held slot is interrupted
        with pytest.raises(KeyboardInterrupt), slots.take(HOST_FIRST):
            pass
        del slots._turn.wait
        assert not slots._waiting
    _in_thread(take).join(10)
    assert got.is_set()  # the slot given back went to the next taker, not to the one that left


class Recording(FrontSlots):
    """FrontSlots that note each priority asked for."""

    def __init__(self, n: int) -> None:
        super().__init__(n)
        self.taken: list[int] = []

    def take(self, priority: int):
        self.taken.append(priority)
        return super().take(priority)


def _mix_source(flaw: str) -> str:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from throughput_cases.mix import mix

    return next(c.source for c in mix("cuda") if c.flaw == flaw)


@pytest.fixture
def front(tmp_path, monkeypatch):
    """A checker whose host TU is checked (a precompiled header named, never read: the jobs are stubbed), recording
    its jobs in `front.jobs`."""
    import torch.utils.cpp_extension as cpp

    monkeypatch.setattr(cpp, "CUDA_HOME", str(tmp_path / "cuda"))  # only named in the commands
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "9.0")
    checker = FrontCheck(host_pch=lambda flags: str(tmp_path / "pch"), max_headers=0)
    checker.jobs = []
    monkeypatch.setattr(FrontCheck, "_run", lambda self, *args, **kw: self.jobs.append("device") or (0, "", None))
    return checker


def test_a_certain_host_error_is_answered_from_the_host_tu_without_the_device_tus_job(front, monkeypatch):
    source = _mix_source("missing semicolon")
    tu, _ = front._host_job(read_call(source))
    n = 1 + next(i for i, line in enumerate(tu.splitlines()) if "long n = x.numel();" in line)
    log = f"host.cpp:{n}:5: error: expected ',' or ';' before 'long'\ncompilation terminated due to -Wfatal-errors.\n"
    monkeypatch.setattr(FrontCheck, "_run_host", lambda self, tu, cmd: self.jobs.append("host") or (1, log))
    slots = Recording(1)
    result = front.check(source, 1.0, slots)
    assert result.status == "compile_error" and f"main.cpp:{n}:5: error: expected ',' or ';'" in result.feedback
    assert front.jobs == ["host"] and slots.taken == [HOST_FIRST]


AT_END = f"host.cpp:30:1: error: static assertion failed: {HOST_END}\n"  # parsed clean: the device TU decides
NOT_DECLARED = "host.cpp:9:17: error: 'n' was not declared in this scope\n"  # not certain: unsure where it passes


@pytest.mark.parametrize(
    ("host_log", "status", "why"), [(AT_END, "passed", HOST_CUT), (NOT_DECLARED, "unsure", "error in host code")]
)
def test_otherwise_the_device_tu_is_checked_next_at_the_lower_priority(front, monkeypatch, host_log, status, why):
    monkeypatch.setattr(FrontCheck, "_run_host", lambda self, tu, cmd: self.jobs.append("host") or (1, host_log))
    slots = Recording(1)
    result = front.check(_mix_source("missing semicolon"), 1.0, slots)
    assert (result.status, front.jobs, slots.taken) == (status, ["host", "device"], [HOST_FIRST, DEVICE_NEXT])
    assert why in result.why


HEADERS = HeaderFacts.parse(["struct uint3 { unsigned x; }; extern uint3 blockIdx, blockDim, threadIdx;\n"
                             "float fmaxf(float, float); float expf(float); typedef int cudaStream_t;\n"])  # fmt: skip
KERNEL = """#include <cuda_runtime.h>
#define BLOCK 256
__global__ void relu_kernel(const float* __restrict__ x, float* out, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) { float v = x[i]; out[i] = fmaxf(v, 0.f) + 1e-5f * BLOCK; }
}
"""


@pytest.mark.parametrize(
    ("code", "names"),
    [
        (KERNEL, set()),  # parameters, locals, a macro, members and literals are declared or not names
        (KERNEL.replace("blockDim.x", "blockDimx"), {"blockDimx"}),  # a typo models make
        (KERNEL.replace("fmaxf(v, 0.f)", "fast_relu(v)"), {"fast_relu"}),  # a helper never written
        (KERNEL.replace("float v = x[i];", "").replace("fmaxf(v", "fmaxf(w"), {"w"}),
        (KERNEL.replace('out[i] = fmaxf(v, 0.f)', 'return; out[i] = v; "text stays unread"'), set()),
    ],
)
def test_undeclared_names_are_those_neither_the_code_nor_its_headers_declare(code, names):
    assert undeclared_names(code, HEADERS) == names


def test_a_suspect_device_tu_is_checked_before_any_host_tu_and_its_certain_error_is_the_answer(front, monkeypatch):
    source = _mix_source("undeclared identifier")
    monkeypatch.setattr(FrontCheck, "_known_facts", lambda self, *a: ("k", None, HEADERS))
    monkeypatch.setattr(FrontCheck, "_device", lambda self, *a: self.jobs.append("device") or FrontResult(
        "compile_error", feedback='identifier "blockDimx" is undefined'))  # fmt: skip
    monkeypatch.setattr(FrontCheck, "_run_host", lambda self, tu, cmd: self.jobs.append("host") or (1, AT_END))
    slots = Recording(1)
    result = front.check(source, 1.0, slots)
    assert result.status == "compile_error" and "blockDimx" in result.feedback
    assert front.jobs == ["device"] and slots.taken == [SUSPECT_FIRST]


def test_a_suspect_that_passes_its_device_tu_still_has_its_host_tu_checked_once(front, monkeypatch):
    monkeypatch.setattr(FrontCheck, "_known_facts", lambda self, *a: ("k", None, HEADERS))
    monkeypatch.setattr(FrontCheck, "_device", lambda self, *a: self.jobs.append("device") or FrontResult("passed"))
    monkeypatch.setattr(FrontCheck, "_run_host", lambda self, tu, cmd: self.jobs.append("host") or (1, NOT_DECLARED))
    slots = Recording(1)
    result = front.check(_mix_source("undefined helper"), 1.0, slots)
    assert (result.status, front.jobs, slots.taken) == ("unsure", ["device", "host"], [SUSPECT_FIRST, HOST_FIRST])
