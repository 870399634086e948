"""Big outputs on the CPU path, scaled down: the minimal plan, `too_large` told apart at once, and big tasks' leases
in a pool that never deadlocks. (On the H200 the same code judged KernelBench's 6.4 GB Tanh and LogSoftmax `ok`.)"""

import gc
import threading
import time
from pathlib import Path

from kernelzero.judge import admission
from kernelzero.judge.core import Judge
from kernelzero.judge.options import JudgeOptions
from kernelzero.judge.pool import JudgePool
from kernelzero.tasks import Task

FIX = Path(__file__).parents[1] / "fixtures" / "judge"
RELU = (FIX / "relu_task.py").read_text()
OK = (FIX / "relu_triton_ok.py").read_text()


def _relu(rows: int, name: str) -> Task:
    return Task(name=name, source=RELU.replace("torch.randn(16, 64)", f"torch.randn({rows}, 64)"))


def test_a_task_past_the_kept_output_budget_runs_the_minimal_plan_and_still_judges():
    judge = Judge(JudgeOptions(device="cpu", kept_output_gb=1e-5))  # 10 KB: a 16 x 64 fp32 output is 4 KB
    v = judge.judge(_relu(16, "relu_small_budget"), OK, "triton")
    assert v.status == "ok" and v.trials == 2
    ref = next(iter(judge._refs.values()))
    assert (len(ref.seeds), len(ref.replay), len(ref.wide), len(ref.timing_seeds)) == (2, 1, 1, 1)
    assert ref.replay[0][0] == 1 and ref.replay[0][1] != 0  # the last trial's buffer, new contents
    wrong = OK.replace("tl.maximum(x, 0.0)", "tl.maximum(x, 0.5)")
    assert wrong != OK
    assert judge.judge(_relu(16, "relu_small_budget"), wrong, "triton").status == "incorrect"


def test_a_task_that_cannot_fit_is_too_large_at_once_and_never_scored():
    judge = Judge(JudgeOptions(device="cpu", host_memory_gb=3))  # a worker alone needs 2.5 GB beside its outputs
    t0 = time.monotonic()
    v = judge.judge(_relu(2**22, "relu_too_large"), OK, "triton")  # 1 GB outputs: 5 GB kept at the least
    assert v.status == "infra_error" and v.guard == "too_large" and not v.scored
    assert "host memory" in v.feedback and "outputs 1.0 GB" in v.feedback
    assert time.monotonic() - t0 < 30  # sized on the meta device: nothing allocated, no trial run


def test_big_tasks_leases_and_gpu_slots_never_deadlock_a_pool_and_give_their_memory_back(monkeypatch):
    """Each big task's reference reserves its candidate's share too (its lease). With room for one lease at a time and
    one GPU slot (set by hand: a CPU pool has none), three big tasks interleaved with three small ones all finish, and
    once the last big reference is gone nothing is held. A candidate that took its slot before its memory deadlocked
    this mix: it waited in the gate behind a big reference that needed the lease of a task whose candidate waited
    for that slot (the stall of a KernelBench level-1 sweep on the H200)."""
    monkeypatch.setattr(admission, "LEASE_BYTES", 100_000)  # 4096 x 64 fp32 outputs kept are over it, 16 x 64 not
    pool = JudgePool(JudgeOptions(device="cpu", timing=False, host_memory_gb=6), workers=6, warm=False)
    pool.judge_.gpu_slots = threading.BoundedSemaphore(1)
    try:
        tasks = []
        for k in range(3):
            tasks += [_relu(4096 + 64 * k, f"relu_lease_{k}"), _relu(16 + k, f"relu_small_{k}")]
        futures = [pool.submit(t, OK, "triton") for t in tasks]
        assert [f.result(timeout=400).status for f in futures] == ["ok"] * 6
        assert pool.gate.peak["host"] <= pool.gate.capacity["host"]
        assert pool.gate.peak["host"] > 5 * 2**30  # a big reference and its lease were held at once
        pool.judge_._drop_leases()
        gc.collect()
        assert pool.gate.held["host"] == 0
    finally:
        pool.close()
