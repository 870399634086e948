"""The timing stage end to end on CPU (`timing_on_cpu`, host clocks): the protocol a GPU judge runs, in CI.

Reference and candidate workers time the module, keep one timed call's output per timing input set, and the
parent checks them (guard `replay`) before it attaches runtimes. CPU figures say nothing about speed; what is
asserted is the protocol and the guard.
"""

import os
import threading
from pathlib import Path

import pytest

from kernelzero.judge import JudgeOptions
from kernelzero.judge.core import Judge
from kernelzero.judge.wide import wide_plan
from kernelzero.tasks import Task

FIX = Path(__file__).parents[1] / "fixtures" / "judge"
TRIALS, REPLAYS = 2, 5  # JudgeOptions.trials, and len(core._replay_plan(trials))
WIDE = len(wide_plan((FIX / "relu_task.py").read_text(), [0, 1]))  # the wide trials after the replays (judge/wide.py)

# Honest for every call of the correctness stage (trials, replays, wide trials), stale for every call after: the timed
# ones.
HONEST_UNTIL_TIMED = f'''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0
        self.last = None

    def forward(self, x):
        self.calls += 1
        if self.calls > {TRIALS + REPLAYS + WIDE} and self.last is not None:
            return self.last.clone()
        y = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 256),)](x, y, x.numel(), BLOCK=256)
        self.last = y
        return y
'''


@pytest.fixture(scope="module")
def judge():
    from kernelzero.judge.core import _replay_plan

    assert len(_replay_plan(TRIALS)) == REPLAYS
    opts = JudgeOptions(device="cpu", trials=TRIALS, timing_on_cpu=True, compile_baseline=False, warmup=1,
                        min_calls=6, max_calls=6, budget_s=0.01)  # fmt: skip
    return Judge(opts)


@pytest.fixture(scope="module")
def task():
    return Task.from_file(FIX / "relu_task.py")


def test_honest_kernel_is_timed_through_the_whole_protocol(judge, task):
    v = judge.judge(task, (FIX / "relu_triton_ok.py").read_text(), "triton")
    assert v.status == "ok", v.feedback
    assert v.timed and v.runtime.n == 6 and v.ref_runtime.n == 6
    assert v.speedup_eager == pytest.approx(v.ref_runtime.median_ms / v.runtime.median_ms)
    assert v.compile_runtime is None  # baseline off
    # where the time went (bench/judge_throughput.py prints these): lock waits and the worker's own split of stages
    assert {"wait_trials", "wait_timing", "run.first_call", "run.trials", "run.save", "time.timing", "timed_save",
            "timed_save.save", "wait_timed_check", "timed_check"} <= set(v.stage_s)
    assert 0 < v.stage_s["run.first_call"] <= v.stage_s["run.trials"] <= v.stage_s["run"]
    # the reference's too (its verdict carries them): the worker's start apart, then its split of the run, whose
    # parts lie inside the parent's measure of it
    ref = {k: x for k, x in v.stage_s.items() if k.startswith("ref.run.") and k.count(".") == 2}
    assert set(ref) == {f"ref.run.{p}" for p in ("model", "trials", "replay", "canaries", "wide", "seal")}
    assert 0 < v.stage_s["ref.run.trials"] and sum(ref.values()) <= v.stage_s["ref.run"] + 0.01
    first = v.stage_s["ref.run.trials.first_inputs"], v.stage_s["ref.run.trials.first_call"]  # the first trial's
    assert 0 < first[0] <= first[1] <= v.stage_s["ref.run.trials"]
    assert {"ref.start", "ref.sized.import", "ref.sized.meta"} <= set(v.stage_s)
    assert "ref.start.cuda_init" not in v.stage_s and "start.cuda_init" not in v.stage_s  # on a GPU only


class _LockSpy:
    """The judge's timing lock, noting at each release how many bytes the newest worker's `timed` memfd holds."""

    def __init__(self, boxes: list):
        self.boxes, self.lock, self.timed_bytes_at_release = boxes, threading.Lock(), []

    def __enter__(self):
        self.lock.acquire()

    def __exit__(self, *exc):
        self.timed_bytes_at_release.append(os.fstat(self.boxes[-1]._outputs["timed"]).st_size)
        self.lock.release()

    def locked(self) -> bool:
        return self.lock.locked()


def test_timed_outputs_leave_the_worker_and_are_checked_after_the_timing_lock_is_let_go(judge, task, monkeypatch):
    """The copy of the timed outputs off the device, their save and their check are shared GPU work; the
    timing lock (the GPU for one module alone) is held for the timed calls only."""
    boxes, held, sandbox, check = [], [], Judge._sandbox, Judge._check_timed_outputs
    monkeypatch.setattr(Judge, "_sandbox", lambda self, job: boxes.append(sandbox(self, job)) or boxes[-1])
    monkeypatch.setattr(Judge, "_check_timed_outputs", lambda self, sb, ref: held.append(self.timing_lock.locked())
                        or check(self, sb, ref))  # fmt: skip
    monkeypatch.setattr(judge, "timing_lock", _LockSpy(boxes))
    v = judge.judge(task, (FIX / "relu_triton_ok.py").read_text(), "triton")
    assert v.status == "ok" and v.timed, v.feedback
    assert judge.timing_lock.timed_bytes_at_release[-1] == 0  # the candidate's release: nothing saved yet
    assert held == [False] and v.stage_s["timed_save.save"] > 0


def test_module_honest_only_until_timed_is_rejected(judge, task):
    v = judge.judge(task, HONEST_UNTIL_TIMED, "triton")
    assert (v.status, v.guard) == ("rejected", "replay"), v.feedback
    assert "a timed call on input set" in v.feedback


def test_the_same_module_passes_a_judge_that_does_not_time(task):
    """The cheat is invisible to correctness checks alone: what catches it is the check of timed outputs."""
    v = Judge(JudgeOptions(device="cpu", trials=TRIALS)).judge(task, HONEST_UNTIL_TIMED, "triton")
    assert v.status == "ok", v.feedback
