"""A candidate or reference that runs out of GPU memory beside other workers is rerun with the GPU to itself, and a
big task's lease, sized before its reference ran, is topped up to the reference's measured peak."""

import contextlib

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


def _leased_judge(capacity_gb: int) -> tuple[Judge, MemoryGate, Reference]:
    judge = Judge(JudgeOptions(device="cpu"))
    judge.device = "cuda"
    gate = MemoryGate({"gpu": capacity_gb * GB, "host": 64 * GB})
    judge.set_gate(gate, "gpu")
    ref = Reference(init_seed=1, seeds=[1], timing_seeds=[2])
    ref.lease = gate.acquire({"gpu": 37 * GB, "host": 3 * GB})  # held by the reference, as `_settle` leaves it
    ref.gpu_peak = 81 * GB  # measured once the reference ran
    return judge, gate, ref


def test_a_lease_smaller_than_the_measured_peak_is_topped_up_and_the_top_up_returned():
    judge, gate, ref = _leased_judge(104)
    with contextlib.ExitStack() as admitted:
        need = judge._admit_candidate(ref, admitted)
        assert need["gpu"] == WORKER_GPU + 81 * GB
        assert gate.held["gpu"] == WORKER_GPU + 81 * GB and ref.lease_lock.locked()
    assert gate.held["gpu"] == 37 * GB and not ref.lease_lock.locked()  # the lease stays with its reference


def test_a_top_up_never_asks_more_than_the_lease_leaves_of_the_capacity():
    judge, gate, ref = _leased_judge(60)  # 82 GB measured, 60 GB in all: the candidate gets the whole GPU
    with contextlib.ExitStack() as admitted:
        need = judge._admit_candidate(ref, admitted)
        assert need["gpu"] == 60 * GB and gate.held["gpu"] == 60 * GB
    with contextlib.ExitStack() as admitted:  # alone: everything, through the lease
        assert judge._admit_candidate(ref, admitted, alone=True)["gpu"] == 60 * GB
    assert gate.held["gpu"] == 37 * GB
