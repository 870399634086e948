"""Admission by memory under a KernelBench-like load, on the gate alone: eight threads judge a level-1-shaped mix
(big 6.4 GB activations, 8.6 GB reductions, mid-size and small tasks; references keeping their outputs on the GPU,
candidates whose measured peak exceeds their lease) through the judge's real admission steps (`_admit_reference`,
`_settle`, `_keep`, the cache, `_admit_candidate`) with a GPU stand-in (the meta device). Every task must finish
(two designs deadlocked on the H200: candidates holding leases while waiting for more, and candidates queued behind
the next big reference that waited for their end), and everything must be given back at the end."""

import contextlib
import gc
import random
import threading
import time

import pytest
import torch

from kernelzero.judge import JudgeOptions
from kernelzero.judge.core import Judge, Reference
from kernelzero.judge.footprint import GB, Footprint, MemoryGate


def _mix(seed: int) -> list[tuple[str, Footprint, float]]:
    """(name, footprint, the reference's measured peak as a multiple of its inputs and outputs)."""
    rng = random.Random(seed)
    tasks = [(f"act{i}", Footprint(int(6.4 * GB), int(6.4 * GB), 0), 3.5) for i in range(8)]
    tasks += [(f"sum{i}", Footprint(int(8.6 * GB), int(0.03 * GB), 0), 4.5) for i in range(3)]
    tasks += [(f"mid{i}", Footprint(int(rng.uniform(0.5, 3) * GB), int(rng.uniform(0.3, 2) * GB), 0), 2.0)
              for i in range(12)]  # fmt: skip
    tasks += [(f"small{i}", Footprint(int(0.05 * GB), int(0.05 * GB), 0), 2.0) for i in range(25)]
    rng.shuffle(tasks)
    return tasks


def _judge() -> Judge:
    judge = Judge(JudgeOptions(device="cpu"))
    judge.device, judge.compare_device = "cuda", "meta"
    judge.set_gate(MemoryGate({"gpu": int(103.8 * GB), "refs:gpu": 32 * GB, "host": 72 * GB, "big:gpu": 1}), "gpu")
    return judge


def _judge_one(judge: Judge, name: str, fp: Footprint, peak: float) -> None:
    ref = Reference(init_seed=1, seeds=[1] * 5, timing_seeds=[2] * 3)
    ref.footprint = fp
    judge._plan(ref)
    held = judge._admit_reference(ref, alone=False)
    time.sleep(0.002)  # the worker runs
    n = max(1, fp.out_bytes // 4)
    ref.outputs = [[torch.empty(n, device="meta")] for _ in range(ref.plan.trials)]  # came over on the GPU
    ref.gpu_peak = int(peak * (fp.in_bytes + fp.out_bytes))
    judge._settle(ref, held)
    judge._keep(ref)
    # every byte it keeps is counted: in the references' budget, under its own hold, or (a small one's) in host
    # memory bounded by the cache; the judge's uncounted host copies of big ones filled the H200 machine's 125 GB
    kept = ref.nbytes
    counted = ref.on_device or judge._own_gpu(ref) >= kept or (ref.lease is None and kept <= GB)
    assert counted, f"{name}: {kept / GB:.1f} GB kept, holds {ref.holds}, lease {ref.lease}"
    with judge._lock:
        judge._refs[name] = ref
        judge._evict()
    with contextlib.ExitStack() as admitted:
        judge._admit_candidate(ref, admitted)
        time.sleep(0.005)  # the candidate runs


def _run(judge: Judge, tasks: list, workers: int = 8, timeout_s: float = 60.0) -> tuple[int, list]:
    """Judge `tasks` on `workers` daemon threads (a deadlock fails the test without holding up the run's exit):
    (tasks left unfinished at the timeout, errors raised)."""
    todo, errors, lock = list(tasks), [], threading.Lock()
    left = [len(tasks)]

    def worker() -> None:
        while True:
            with lock:
                if not todo:
                    return
                task = todo.pop()
            try:
                _judge_one(judge, *task)
            except Exception as exc:  # noqa: BLE001 (reported by the test)
                errors.append(exc)
            with lock:
                left[0] -= 1

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(workers)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + timeout_s
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    return left[0], errors


@pytest.mark.parametrize("seed", range(3))
def test_a_level_one_shaped_mix_never_deadlocks_and_gives_everything_back(seed):
    judge = _judge()
    tasks = _mix(seed)
    stuck, errors = _run(judge, tasks)
    gate = judge.gate()
    assert stuck == 0, f"{stuck} of {len(tasks)} tasks stuck; {gate.describe()}"
    assert not errors, errors[0]
    assert gate.peak["big:gpu"] == 1 and gate.peak["gpu"] <= gate.capacity["gpu"]
    judge._refs.clear()
    gc.collect()
    assert gate.held == {"gpu": 0, "refs:gpu": 0, "host": 0, "big:gpu": 0}
