"""A compile error the build farm finds before the task's reference is ready is answered at once (the front check
takes about a second, a cold reference 10-20 s on a GPU); the reference is computed on, once, for the task's other
candidates. A candidate that builds waits for the reference as before."""

import threading
import time
from concurrent.futures import Future
from pathlib import Path

from kernelzero.judge import JudgeOptions
from kernelzero.judge.build.farm import BuildResult
from kernelzero.judge.core import Judge, Reference
from kernelzero.judge.verdict import Verdict
from kernelzero.tasks import Task

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TASK = Task(name="relu", source=(FIXTURES / "judge" / "relu_task.py").read_text())
CANDIDATE = (FIXTURES / "gpu" / "relu_cuda_ok.py").read_text()


class _Farm:
    """A build farm whose builds end with `result` after `delay_s`."""

    def __init__(self, result: BuildResult, delay_s: float):
        self.result, self.delay_s = result, delay_s

    def submit(self, source: str, front: bool = True) -> Future:
        done: Future = Future()
        threading.Timer(self.delay_s, done.set_result, args=(self.result,)).start()
        return done


def _judge(monkeypatch, result: BuildResult, ready: threading.Event) -> tuple[Judge, list]:
    """A judge that believes it has a GPU, whose task reference is ready once `ready` is set."""
    judge = Judge(JudgeOptions(device="cpu"))
    judge.device = "cuda"
    judge.farm = _Farm(result, 0.1)
    runs: list[str] = []

    def run_reference(task, alone=False):
        runs.append(task.name)
        assert ready.wait(10)
        return Reference(init_seed=1, seeds=[1], timing_seeds=[2])

    monkeypatch.setattr(judge, "_run_reference", run_reference)
    return judge, runs


def test_a_compile_error_is_answered_before_the_reference_is_ready(monkeypatch):
    ready = threading.Event()
    failed = BuildResult("compile_error", seconds=0.1, feedback="error: 'x' undeclared")
    judge, runs = _judge(monkeypatch, failed, ready)
    v = judge.judge(TASK, CANDIDATE, "cuda")
    assert v.status == "compile_error" and v.guard == "import" and "'x' undeclared" in v.feedback
    assert not ready.is_set() and v.stage_s == {"build_farm": 0.1}  # the reference still computing
    ready.set()  # the reference, started in the background, finishes and is kept for the next candidate
    deadline = time.monotonic() + 5
    while not judge._refs and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(judge._refs) == 1 and runs == ["relu"]


def test_a_candidate_that_builds_is_judged_against_the_reference_computed_once(monkeypatch):
    ready = threading.Event()
    judge, runs = _judge(monkeypatch, BuildResult("built", seconds=0.1), ready)
    seen: list[Reference] = []

    def attempt(task, source, ref, base, build, alone):
        seen.append(ref)
        return Verdict(status="ok", correct=True, trials=1, **base)

    monkeypatch.setattr(judge, "_attempt", attempt)
    threading.Timer(0.5, ready.set).start()  # after the build: the candidate waits for the reference
    v = judge.judge(TASK, CANDIDATE, "cuda")
    assert v.status == "ok" and seen == list(judge._refs.values()) and runs == ["relu"]
