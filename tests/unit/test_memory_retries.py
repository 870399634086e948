"""A candidate or reference that runs out of GPU memory beside other workers is rerun with the GPU to itself, and a
big task's lease, sized before its reference ran, is topped up to the reference's measured peak."""

import contextlib
import gc
import threading
import time

from kernelzero.judge import JudgeOptions
from kernelzero.judge.core import Judge, Reference, StageFailure, out_of_memory
from kernelzero.judge.footprint import GB, WORKER_GPU, MemoryGate
from kernelzero.judge.verdict import Verdict
from kernelzero.tasks import Task

TASK = Task(name="t", source="import torch\n")
OOM = ("forward failed: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 16.00 GiB. GPU 0 has a total "
       "capacity of 139.80 GiB of which 9.80 GiB is free.")  # fmt: skip


def test_out_of_memory_is_told_from_other_failures():
    assert out_of_memory(OOM)
    assert out_of_memory("harness: DeviceMemoryError: cuMemCreate failed with CUDA error 2 (out of memory)")
    assert not out_of_memory("forward failed: RuntimeError: shape '[4, 4]' is invalid for input of size 3")
    assert not out_of_memory("the task needs about 113 GB of GPU memory, more than the 104 GB one job may use")


def _judge(monkeypatch, results: list) -> tuple[Judge, list]:
    """A judge that believes it has a GPU, whose reference is ready and whose candidate runs return `results`."""
    judge = Judge(JudgeOptions(device="cpu"))
    judge.device = "cuda"
    calls: list[bool] = []
    monkeypatch.setattr(judge, "reference", lambda task: Reference(init_seed=1, seeds=[1], timing_seeds=[2]))

    def candidate(task, source, ref, base, build, alone=False):
        calls.append(alone)
        status, feedback = results[len(calls) - 1]
        if status == "ok":
            return Verdict(status="ok", correct=True, trials=1, **base)
        raise StageFailure(Verdict.fail(status, feedback, guard="forward", **base))

    monkeypatch.setattr(judge, "_candidate", candidate)
    return judge, calls


def test_a_candidate_out_of_memory_beside_others_is_rerun_alone_once(monkeypatch):
    judge, calls = _judge(monkeypatch, [("runtime_error", OOM), ("ok", "")])
    v = judge.judge(TASK, "class ModelNew: pass\n", "triton")
    assert calls == [False, True] and v.status == "ok"
    assert "alone" in v.env["rerun"]


def test_out_of_memory_alone_is_the_candidates_own_and_other_errors_are_not_rerun(monkeypatch):
    judge, calls = _judge(monkeypatch, [("runtime_error", OOM), ("runtime_error", OOM)])
    v = judge.judge(TASK, "class ModelNew: pass\n", "triton")
    assert calls == [False, True] and v.status == "runtime_error" and out_of_memory(v.feedback)

    judge, calls = _judge(monkeypatch, [("runtime_error", "forward failed: IndexError: index 9 is out of bounds")])
    v = judge.judge(TASK, "class ModelNew: pass\n", "triton")
    assert calls == [False] and v.status == "runtime_error" and "rerun" not in v.env


def test_the_judges_own_shortage_alone_is_an_infra_error_not_the_candidates(monkeypatch):
    """Out of memory loading or comparing the outputs happens in the judge's process: rerun alone first, and if it
    is still short there, `infra_error` (left out of rewards), never a kernel's runtime_error."""
    for guard in ("compare", "load", "forward"):
        judge = Judge(JudgeOptions(device="cpu"))
        judge.device = "cuda"
        monkeypatch.setattr(judge, "reference", lambda task: Reference(init_seed=1, seeds=[1], timing_seeds=[2]))
        calls: list[bool] = []

        def candidate(task, source, ref, base, build, alone=False, guard=guard, calls=calls):
            calls.append(alone)
            raise StageFailure(Verdict.fail("runtime_error", f"judge out of GPU memory: {OOM}", guard, **base))

        monkeypatch.setattr(judge, "_candidate", candidate)
        v = judge.judge(TASK, "class ModelNew: pass\n", "triton")
        assert calls == [False, True] and v.guard == guard
        assert v.status == ("runtime_error" if guard == "forward" else "infra_error")


def _leased(judge: Judge, gate: MemoryGate) -> Reference:
    """A big task's reference as `_settle` leaves it: holding a 37 GB lease sized from its footprint (released when it
    dies), its measured peak 81 GB."""
    ref = Reference(init_seed=1, seeds=[1], timing_seeds=[2])
    ref.lease = {"gpu": 37 * GB, "host": 3 * GB}
    held = gate.acquire({"gpu": 47 * GB, "host": 8 * GB})  # the reference worker's own need, and the lease
    judge._settle(ref, held)
    ref.gpu_peak = 81 * GB
    return ref


def _judge_with_gate(capacity_gb: int) -> tuple[Judge, MemoryGate]:
    judge = Judge(JudgeOptions(device="cpu"))
    judge.device = "cuda"
    gate = MemoryGate({"gpu": capacity_gb * GB, "host": 64 * GB})
    judge.set_gate(gate, "gpu")
    return judge, gate


def test_a_lease_smaller_than_the_measured_peak_is_topped_up_when_that_fits_and_the_top_up_returned():
    judge, gate = _judge_with_gate(104)
    ref = _leased(judge, gate)
    assert gate.held["gpu"] == 37 * GB
    with contextlib.ExitStack() as admitted:
        need = judge._admit_candidate(ref, admitted)
        assert need["gpu"] == WORKER_GPU + 81 * GB == gate.held["gpu"] and ref.lease_lock.locked()
    assert gate.held["gpu"] == 37 * GB and not ref.lease_lock.locked()  # the lease stays with its reference
    with contextlib.ExitStack() as admitted:  # alone: the whole GPU, through the lease
        assert judge._admit_candidate(ref, admitted, alone=True)["gpu"] == 104 * GB == gate.held["gpu"]
    del ref
    gc.collect()
    assert gate.held["gpu"] == 0


def test_a_lease_that_cannot_be_topped_up_now_is_given_up_never_held_while_waiting():
    judge, gate = _judge_with_gate(130)
    a, b = _leased(judge, gate), _leased(judge, gate)  # 74 GB of leases: room for one 45 GB top-up, not two
    judge._refs.update(a=a, b=b)
    with contextlib.ExitStack() as first:
        assert judge._admit_candidate(a, first)["gpu"] == WORKER_GPU + 81 * GB  # 37 + 45 more beside b's 37
        assert gate.held["gpu"] == WORKER_GPU + 81 * GB + 37 * GB  # a's lease and top-up, b's lease
        admitted_b, done = contextlib.ExitStack(), threading.Event()

        def candidate(ref):
            judge._admit_candidate(ref, admitted_b)
            done.set()

        t = threading.Thread(target=candidate, args=(b,))
        t.start()
        time.sleep(0.5)
        assert not done.is_set() and b.lease is None  # it gave its lease back and waits with nothing held
        assert list(judge._refs) == ["a"]  # and left the cache: it lives while its candidates are judged
        assert gate.held["gpu"] == WORKER_GPU + 81 * GB
    t.join(timeout=10)
    assert done.is_set() and gate.held["gpu"] == 37 * GB + WORKER_GPU + 81 * GB  # a's lease, b's own need
    admitted_b.close()
    judge._drop_leases()  # `a`, idle, leaves the cache: its lease goes with it
    del a, b
    gc.collect()
    assert gate.held == {"gpu": 0, "host": 0}


def test_leased_candidates_admitted_at_once_all_run():
    """Each holding its lease and waiting for its top-up deadlocked the pool on the H200."""
    judge, gate = _judge_with_gate(160)
    refs = [_leased(judge, gate) for _ in range(4)]  # 148 of 160 GB in leases: no top-up fits beside them
    ran = []

    def candidate(ref):
        with contextlib.ExitStack() as admitted:
            ran.append(judge._admit_candidate(ref, admitted)["gpu"])
            time.sleep(0.05)

    threads = [threading.Thread(target=candidate, args=(r,)) for r in refs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=20)
    assert len(ran) == 4 and all(g == WORKER_GPU + 81 * GB for g in ran)


def test_a_candidate_never_waits_for_the_gpu_its_own_reference_keeps():
    """A big task's reference keeps its outputs on the GPU (20 GB here) while its candidates run; a candidate whose
    need reaches the whole GPU (measured peak 99 GB of 100) is admitted beside them, after a small task's 10 GB come
    back, instead of waiting forever for memory its own reference holds."""
    judge, gate = _judge_with_gate(100)
    ref = Reference(init_seed=1, seeds=[1], timing_seeds=[2])
    ref.lease = {"gpu": 30 * GB, "host": 3 * GB}
    ref.holds = {"gpu": 50 * GB, "host": 3 * GB}  # the lease, and 20 GB of outputs kept on the GPU
    gate.acquire(dict(ref.holds))
    ref.gpu_peak = 99 * GB
    small = gate.acquire({"gpu": 10 * GB})
    admitted, done = contextlib.ExitStack(), threading.Event()

    def candidate():
        judge._admit_candidate(ref, admitted)
        done.set()

    t = threading.Thread(target=candidate, daemon=True)  # a deadlock fails the test, not the run
    t.start()
    time.sleep(0.5)
    assert not done.is_set() and ref.lease is None  # the top-up did not fit beside the small task: lease given back
    gate.release(small)
    t.join(timeout=10)
    assert done.is_set() and gate.held["gpu"] == 100 * GB  # its 80 GB beside its reference's 20
    admitted.close()


def test_one_big_tasks_reference_lives_at_a_time():
    """The gate's `big:` token: a second big task's reference is admitted only once the first is gone (here: a
    candidate still judged against it, then done). Eight kept at once held the H200 machine's whole memory."""
    from kernelzero.judge.footprint import Footprint

    judge, gate = _judge_with_gate(100)
    gate = MemoryGate({**gate.capacity, "big:gpu": 1})
    judge.set_gate(gate, "gpu")
    plan = judge._full_plan()

    def big() -> Reference:
        ref = Reference(init_seed=1, seeds=[1], timing_seeds=[2])
        ref.footprint, ref.plan = Footprint(GB // 4, GB // 4, 0), plan  # kept outputs: plan.sets x 0.25 GB > 1 GB
        return ref

    a = big()
    judge._settle(a, judge._admit_reference(a, alone=False))
    assert a.holds["big:gpu"] == 1 and gate.held["big:gpu"] == 1
    b, done = big(), threading.Event()

    def reference(ref):
        judge._settle(ref, judge._admit_reference(ref, alone=False))
        done.set()

    t = threading.Thread(target=reference, args=(b,), daemon=True)
    t.start()
    time.sleep(0.5)
    assert not done.is_set()  # `a` lives (its candidate holds it), with its token
    del a
    gc.collect()
    t.join(timeout=10)
    assert done.is_set() and b.holds["big:gpu"] == 1
    del b
    gc.collect()
    assert gate.held["big:gpu"] == 0


def test_the_big_tasks_candidate_goes_before_the_next_big_reference_that_waits_for_it():
    """The next big task's reference waits at the head of the queue for the token the current one holds until its
    candidates end; the current one's candidate, whose top-up does not fit beside a small task, waits ahead of it,
    not behind it (where each would wait for the other forever)."""
    from kernelzero.judge.footprint import Footprint

    judge, gate = _judge_with_gate(100)
    gate = MemoryGate({**gate.capacity, "big:gpu": 1})
    judge.set_gate(gate, "gpu")

    def big() -> Reference:
        ref = Reference(init_seed=1, seeds=[1], timing_seeds=[2])
        ref.footprint, ref.plan = Footprint(GB // 4, GB // 4, 0), judge._full_plan()
        return ref

    a = big()
    judge._settle(a, judge._admit_reference(a, alone=False))
    a.gpu_peak = 60 * GB  # measured: more than its lease, sized from the footprint
    small = gate.acquire({"gpu": 50 * GB})
    b, order = big(), []

    def reference(ref):
        judge._settle(ref, judge._admit_reference(ref, alone=False))
        order.append("b")

    admitted = contextlib.ExitStack()

    def candidate(ref):
        judge._admit_candidate(ref, admitted)
        order.append("a's candidate")

    threads = [threading.Thread(target=reference, args=(b,), daemon=True)]
    threads[0].start()
    time.sleep(0.3)
    threads.append(threading.Thread(target=candidate, args=(a,), daemon=True))
    threads[1].start()
    time.sleep(0.3)
    assert order == [] and a.lease is None  # the top-up did not fit: the lease went back, both wait
    gate.release(small)
    threads[1].join(timeout=10)
    assert order == ["a's candidate"]
    admitted.close()
    del a
    gc.collect()
    threads[0].join(timeout=10)
    assert order == ["a's candidate", "b"]
