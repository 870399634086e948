"""JudgePool's client side: dedupe of identical requests, cached copies, back-pressure, async timeouts.

The judge is stubbed (it is not under test here): a counting function that returns a verdict after a delay.
"""

import asyncio
import threading
import time
from concurrent.futures import Future

import pytest

from kernelzero.judge import JudgeOptions
from kernelzero.judge.pool import JudgePool
from kernelzero.judge.verdict import Verdict
from kernelzero.tasks import Task

TASK_SRC = "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x\n"


class StubJudge:
    def __init__(self, delay: float = 0.2, status: str = "ok"):
        self.calls, self.delay, self.status, self.lock = [], delay, status, threading.Lock()
        self.release = threading.Event()
        self.release.set()

    def static_check(self, source, backend):  # nothing is answered before judging
        return None

    def judge(self, task, source, backend):
        with self.lock:
            self.calls.append(source)
        self.release.wait()
        time.sleep(self.delay)
        if self.status == "ok":
            return Verdict(status="ok", correct=True, backend=backend, task=task.name)
        return Verdict.fail(self.status, "stub", backend=backend, task=task.name)


@pytest.fixture
def task(tmp_path):
    p = tmp_path / "t.py"
    p.write_text(TASK_SRC)
    return Task.from_file(p)


def make_pool(stub, **kw):
    pool = JudgePool(JudgeOptions(device="cpu"), workers=4, **kw)
    pool.judges = [stub]
    pool._load = [0]
    return pool


def test_concurrent_duplicates_share_one_judgement_and_get_copies(task):
    stub = StubJudge()
    with make_pool(stub) as pool:
        futures = [pool.submit(task, "same", "triton") for _ in range(4)] + [pool.submit(task, "other", "triton")]
        verdicts = [f.result() for f in futures]
        assert sorted(stub.calls) == ["other", "same"]
        assert all(v.status == "ok" for v in verdicts)
        assert len({id(v) for v in verdicts}) == 5  # every caller owns its record
        verdicts[0].feedback = "mutated"
        later = pool.judge(task, "same", "triton")  # served from the verdict cache, not judged again
        assert later.feedback == "" and stub.calls.count("same") == 1
        assert pool.stats == {"submitted": 6, "judged": 2, "deduped": 3, "cached": 1}
        assert pool.judge(task, "same", "cuda") and stub.calls.count("same") == 2  # backend is part of the key


def test_infra_errors_are_not_cached(task):
    stub = StubJudge(delay=0, status="infra_error")
    with make_pool(stub) as pool:
        pool.judge(task, "x", "triton")
        pool.judge(task, "x", "triton")
        assert len(stub.calls) == 2


def test_back_pressure_blocks_submit(task):
    stub = StubJudge(delay=0)
    stub.release.clear()
    with make_pool(stub, max_pending=1) as pool:
        first = pool.submit(task, "a", "triton")
        got = []
        t = threading.Thread(target=lambda: got.append(pool.submit(task, "b", "triton")))
        t.start()
        t.join(0.3)
        assert t.is_alive() and not got  # blocked: one request is pending
        stub.release.set()
        t.join(5)
        assert first.result().status == "ok" and got[0].result().status == "ok"


def test_ajudge_timeout_is_infra_error_and_the_work_carries_on(task):
    stub = StubJudge(delay=0.5)
    with make_pool(stub) as pool:

        async def go():
            return await asyncio.gather(
                pool.ajudge(task, "s", "triton", timeout_s=0.05), pool.ajudge(task, "s", "triton", timeout_s=5)
            )

        short, long = asyncio.run(go())
        assert short.status == "infra_error" and short.guard == "request_timeout" and not short.scored
        assert long.status == "ok" and stub.calls == ["s"]  # the timed-out caller did not cancel the shared work


def test_state_dict_round_trip(task):
    with make_pool(StubJudge(delay=0)) as pool:
        pool.judge(task, "s", "triton")
        state = pool.state_dict()
    stub = StubJudge(delay=0)
    with make_pool(stub) as pool:
        pool.load_state_dict(state)
        assert pool.judge(task, "s", "triton").status == "ok" and stub.calls == []


def test_shared_exclusive_lock_keeps_trials_out_of_timing():
    from kernelzero.judge.sandbox.gpulock import SharedExclusiveLock

    lock, events = SharedExclusiveLock(), []
    with lock.shared(), lock.shared():  # trials share
        t = threading.Thread(target=lambda: (lock.__enter__(), events.append("timed"), lock.__exit__()))
        t.start()
        t.join(0.2)
        assert events == []  # timing waits for running trials
    t.join(5)
    assert events == ["timed"]


def test_shared_lock_lets_trials_past_a_waiting_timing_only_while_a_holder_is_stuck():
    from kernelzero.judge.sandbox.gpulock import SharedExclusiveLock

    now = [0.0]
    lock, events = SharedExclusiveLock(lapse_s=0.1, clock=lambda: now[0]), []
    entered = {name: threading.Event() for name in ("b", "c")}
    leave = {name: threading.Event() for name in ("a", "b", "c")}

    def trial(name):
        with lock.shared():
            events.append(name)
            entered.get(name, threading.Event()).set()
            leave[name].wait(5)

    def timing():
        with lock:
            events.append("timed")

    a = threading.Thread(target=trial, args=("a",))
    a.start()
    while not events:
        time.sleep(0.01)
    w = threading.Thread(target=timing)
    w.start()
    while lock._waiting == 0:  # the timing is queued behind `a`
        time.sleep(0.01)
    b = threading.Thread(target=trial, args=("b",))
    b.start()
    assert not entered["b"].wait(0.3)  # `a` is young: the waiting timing keeps new trials out
    now[0] = 0.5  # `a` has now held the GPU past the lapse (a hang): `b` goes in beside it
    assert entered["b"].wait(5)
    leave["a"].set()
    a.join(5)
    c = threading.Thread(target=trial, args=("c",))
    c.start()
    assert not entered["c"].wait(0.3)  # `b` is young again: the preference holds, `c` waits for the timing
    assert events == ["a", "b"]
    leave["b"].set()
    w.join(5)
    assert entered["c"].wait(5)
    leave["c"].set()
    b.join(5), c.join(5)
    assert events == ["a", "b", "timed", "c"]


def test_select_gpus_picks_by_index_and_keeps_the_process_numbering():
    from kernelzero.judge.pool import select_gpus

    ids = ["3", "5", "6"]  # CUDA_VISIBLE_DEVICES=3,5,6: this process calls them cuda:0, cuda:1, cuda:2
    assert select_gpus(ids, None, None) == ([0, 1, 2], ["3", "5", "6"])
    assert select_gpus(ids, None, 1) == ([0], ["3"])
    assert select_gpus(ids, [1], None) == ([1], ["5"])  # LOCAL_RANK 1: compare on cuda:1, workers see GPU 5
    with pytest.raises(ValueError, match="must index the 3 visible"):
        select_gpus(ids, [3], None)
    with pytest.raises(ValueError, match="must index"):
        select_gpus(ids, [], None)


# cores, GPUs, GiB per GPU -> slots: H200, H100, a 24 GB card, 8 x H200, 8 GPUs on 32 cores, 4 cores
SLOT_CASES = [(16, 1, 139.8, 8), (16, 1, 79.2, 4), (16, 1, 22.0, 2), (128, 8, 139.8, 8), (32, 8, 79.2, 2),
              (4, 1, 139.8, 2)]  # fmt: skip


@pytest.mark.parametrize("cores, gpus, mem_gib, slots", SLOT_CASES)
def test_default_slots_per_gpu_follows_cores_and_gpu_memory(monkeypatch, cores, gpus, mem_gib, slots):
    import types

    import torch

    from kernelzero.judge import pool

    monkeypatch.setattr(pool.os, "cpu_count", lambda: cores)
    props = types.SimpleNamespace(total_memory=int(mem_gib * 2**30))
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda index: props)
    assert pool.default_slots_per_gpu(gpus) == slots


def test_resize_slots_applies_to_new_candidates_and_a_cpu_pool_has_none(task):
    with make_pool(StubJudge()) as pool:
        with pytest.raises(RuntimeError, match="no GPU slots"):
            pool.resize_slots(4)
        stub = pool.judges[0]
        pool.slots_per_gpu, stub.gpu_slots = 2, threading.BoundedSemaphore(2)  # as a GPU pool sets them up
        old = stub.gpu_slots
        assert old.acquire(blocking=False)  # a candidate holding a slot across the resize
        pool.resize_slots(3)
        assert pool.slots_per_gpu == 3 and stub.gpu_slots is not old
        assert [stub.gpu_slots.acquire(blocking=False) for _ in range(4)] == [True, True, True, False]
        old.release()  # the running candidate gives its slot back to the semaphore it came from
        with pytest.raises(ValueError):
            old.release()


class StubFarm:
    """A farm whose build of a source marked `broken` is a compile error, answered at once; others never finish."""

    def __init__(self):
        self.submitted, self.never = [], Future()

    def close(self):
        pass

    @staticmethod
    def applies(source):
        return "load_inline" in source

    def submit(self, source, front=True):
        from kernelzero.judge.build.farm import BuildResult

        self.submitted.append((source, front))
        if "broken" not in source:
            return self.never
        done = Future()
        done.set_result(BuildResult("compile_error", feedback="Error building extension: nvcc says"))
        return done


class FarmReadingJudge(StubJudge):
    """The judge's side: the verdict a build decides (core.Judge.answer_from_build's contract)."""

    options = JudgeOptions(device="cpu")

    def answer_from_build(self, task, source, backend, built):
        if built.status != "compile_error":
            return None
        return Verdict.fail("compile_error", built.feedback, backend=backend, task=task.name)


def test_a_compile_error_the_farm_finds_is_answered_before_a_judge_thread_is_free(task):
    stub = FarmReadingJudge()
    stub.release.clear()  # every judge thread stays busy
    farm = StubFarm()
    with make_pool(stub) as pool:
        pool.farm = farm
        busy = [pool.submit(task, f"load_inline ok {i}", "cuda") for i in range(4)]
        broken = pool.submit(task, "load_inline broken", "cuda")
        verdict = broken.result(timeout=5)  # the stub judge is still held: this answer came from the build
        assert (verdict.status, verdict.feedback) == ("compile_error", "Error building extension: nvcc says")
        assert not any(f.done() for f in busy)
        # a Triton candidate, or a CUDA source without load_inline, is not sent to the farm
        pool.submit(task, "triton source", "triton")
        pool.submit(task, "no extension here", "cuda")
        assert [s for s, _ in farm.submitted] == [f"load_inline ok {i}" for i in range(4)] + ["load_inline broken"]
        stub.release.set()
        assert all(f.result(timeout=5).status == "ok" for f in busy)  # the judge's verdict when the build is silent


def test_the_judges_verdict_stands_when_it_comes_first(task):
    stub = FarmReadingJudge(delay=0.0, status="incorrect")
    with make_pool(stub) as pool:
        pool.farm = StubFarm()
        assert pool.submit(task, "load_inline ok", "cuda").result(timeout=5).status == "incorrect"
