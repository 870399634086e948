"""Test-only helpers: scripted fakes of the judge, a parser that lets random tiny-model text through, and a stand-in
clock for the worker's timing protocol.

TEST FIXTURES ONLY. `ScriptedJudge` returns verdicts chosen by the test, so the rewards TRL sees can be asserted
exactly; the tiny model itself comes from `kernelzero.generation.tiny` (the `tiny_model_dir` fixture in conftest.py).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from kernelzero.eval.evaluate import EvalRecord
from kernelzero.eval.report import write_report
from kernelzero.judge.verdict import Verdict
from kernelzero.roles.parsing import ParsedCode
from kernelzero.tasks import Task


def ok(speedup: float | None) -> Verdict:
    return Verdict(status="ok", correct=True, timed=speedup is not None, speedup_eager=speedup)


def fail(status: str) -> Verdict:
    return Verdict.fail(status, f"scripted {status}")


class ScriptedJudge:
    """A fake judge_fn: the k-th call for task `name` returns `script[name][k]`; every call is recorded.

    Within a batch the trainer starts one judge call per completion in row order, so the k-th call of a task is the
    k-th row of its group; `calls` lets a test check that instead of assuming it.
    """

    def __init__(self, script: dict[str, Sequence[Verdict]]):
        self.script = {k: list(v) for k, v in script.items()}
        self.calls: list[tuple[str, str, str]] = []  # (task name, candidate source, backend)
        self._next: dict[str, int] = defaultdict(int)

    async def __call__(self, task: Task, source: str, backend: str) -> Verdict:
        k = self._next[task.name]
        self._next[task.name] += 1
        self.calls.append((task.name, source, backend))
        return self.script[task.name][k % len(self.script[task.name])]


def accept_any_text(text: str):
    """A parser that takes the whole (random) completion as code, so tiny-model rollouts reach the fake judge."""
    return ParsedCode(text)


def eval_summary(path: Path, pass1: float, weights: str | None = None) -> None:
    """An eval folder's summary.json as the eval report writes it (`eval.report.write_report`, not a hand-made
    dict: a fixture once keyed fast_p by "1" where the report writes "1.0", and the GPU run's report crashed): 20
    tasks of one timed sample each, a share `pass1` of them correct, every other correct one twice as fast as eager."""
    path.mkdir(parents=True)
    n, records = 20, []
    for i in range(n):
        ok = i < round(pass1 * n)
        fast = ok and i % 2 == 0
        timing = {"speedup_eager": 2.0 if fast else 0.5, "speed_noise": 0.01} if ok else {}
        v = Verdict(status="ok", correct=True, timed=True, **timing) if ok else Verdict.fail("incorrect", "off")
        records.append(EvalRecord(f"t{i}", None, 0, 1, "code", v))
    write_report(path, records, [1], {"weights": weights}, plots=False)


def copy_clock():
    """The worker's real `Bound` on CPU with a stand-in clock (`timing.time_model` runs through it): a call's time is
    1 ms plus 0.1 ms per placed copy index of the input it read, which each call appends to `clock.calls` (the copy
    is read from the address, within the block `empty_bytes` made for the copies: `clock.copy_of`)."""
    import torch

    from kernelzero.judge.sandbox.harness import Bound
    from kernelzero.judge.timing import PAGE

    clock = Bound(torch)
    clock.copy_of = lambda ptr: None  # an input's address -> its copy's index
    clock.calls = []
    original = clock.empty_bytes

    def empty_bytes(n, device):  # each copy lies in its own stride of the block: learn the block
        arena = original(n, device)
        first, stride = arena.data_ptr() + (-arena.data_ptr() % PAGE), (n - PAGE) // 8
        clock.copy_of = lambda ptr: (ptr - first) // stride if ptr >= first else None
        return arena

    class _Event:
        def record(self):
            self.call = len(clock.calls)

    clock.empty_bytes = empty_bytes
    clock.event = lambda enable_timing=True: _Event()
    clock.elapsed = lambda start, end: 1.0 + 0.1 * (clock.copy_of(clock.calls[end.call - 1]) or 0)
    return clock
