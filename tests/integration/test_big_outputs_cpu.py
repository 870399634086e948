"""Big outputs on the CPU path, scaled down: the minimal plan, `too_large` told apart at once, and big tasks' leases
in a pool that never deadlocks. (On the H200 the same code judged KernelBench's 6.4 GB Tanh and LogSoftmax `ok`.)"""

import gc
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


def test_big_tasks_leases_never_deadlock_a_pool_and_give_their_memory_back(monkeypatch):
    """Each big task's reference reserves its candidate's share too; with room for one at a time, three big tasks
    and a small one all finish, and once the last big reference is gone nothing is held."""
    monkeypatch.setattr(admission, "LEASE_BYTES", 1)
    pool = JudgePool(JudgeOptions(device="cpu", timing=False, host_memory_gb=6), workers=3, warm=False)
    try:
        tasks = [_relu(16 * (k + 1), f"relu_lease_{k}") for k in range(3)]
        futures = [pool.submit(t, OK, "triton") for t in tasks]
        futures.append(pool.submit(_relu(8, "relu_after"), OK, "triton"))
        assert [f.result(timeout=300).status for f in futures] == ["ok"] * 4
        assert pool.gate.peak["host"] <= pool.gate.capacity["host"]
        pool.judge_._drop_leases()
        gc.collect()
        assert pool.gate.held["host"] == 0
    finally:
        pool.close()
