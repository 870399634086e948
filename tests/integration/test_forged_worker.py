"""A worker that forges its messages or its outputs file. The channel key lives in the worker's memory, so code that
reaches it can send anything: the judge must turn every such shape into a verdict (`rejected`, guard `channel`),
never into an exception or an `ok`.

The reference is real (a CPU worker); the candidate's worker is replaced by a script of messages and a crafted
scratch directory, which is exactly what a forging candidate controls.
"""

import tempfile
from pathlib import Path

import pytest
import torch

from kernelzero.judge import JudgeOptions
from kernelzero.judge.core import Judge
from kernelzero.judge.sandbox import WorkerExit
from kernelzero.tasks import Task

FIX = Path(__file__).parents[1] / "fixtures" / "judge"


class ForgedSandbox:
    """Stands in for the candidate's Sandbox: replays `messages`, with `files` already in its scratch."""

    def __init__(self, job: dict, messages: list[dict], files: dict[str, object]):
        self.job = job
        self.scratch = Path(tempfile.mkdtemp(prefix="kz-forged-"))
        for name, obj in files.items():
            torch.save(obj, self.scratch / name)
        self.messages = list(messages)

    def start(self) -> None: ...

    def send(self, msg: dict) -> None: ...

    def recv(self, deadline: float):
        return self.messages.pop(0) if self.messages else None

    def finish(self, timed_out: bool = False) -> WorkerExit:
        return WorkerExit(returncode=0, timed_out=timed_out, log_tail="")

    def cleanup(self) -> None: ...


@pytest.fixture(scope="module")
def judge_and_ref():
    judge = Judge(JudgeOptions(device="cpu", trials=2))
    task = Task.from_file(FIX / "relu_task.py")
    return judge, task, judge.reference(task)


def _judge_forged(judge_and_ref, monkeypatch, outputs_msg: dict, files: dict):
    judge, task, ref = judge_and_ref
    real = judge._sandbox

    def sandbox(job):
        if job["kind"] != "candidate":
            return real(job)
        return ForgedSandbox(job, [{"event": "started"}, {"event": "built"}, outputs_msg, {"event": "done"}], files)

    monkeypatch.setattr(judge, "_sandbox", sandbox)
    return judge.judge(task, (FIX / "relu_triton_ok.py").read_text(), "triton")


def _outputs_msg(ref, **over) -> dict:
    return {"event": "outputs", "file": "out.pt", "structures": ref.structures, "checksums": ref.checksums,
            "ops": {}, "launches": 1, **over}  # fmt: skip


def test_the_honest_shape_passes(judge_and_ref, monkeypatch):
    """Control: the right outputs in the right shape are `ok`, so the rejections below come from the shapes."""
    _, _, ref = judge_and_ref
    files = {"out.pt": {"outputs": ref.outputs, "replay": ref.replay_outputs}}
    v = _judge_forged(judge_and_ref, monkeypatch, _outputs_msg(ref), files)
    assert v.status == "ok", v.feedback


def test_an_outputs_file_with_no_trials_is_rejected(judge_and_ref, monkeypatch):
    """Before the length check, the comparison zipped trials: an empty file compared nothing and was `ok`."""
    _, _, ref = judge_and_ref
    v = _judge_forged(judge_and_ref, monkeypatch, _outputs_msg(ref), {"out.pt": {"outputs": [], "replay": []}})
    assert (v.status, v.guard) == ("rejected", "channel"), v.feedback
    assert "does not hold 2 trials" in v.feedback


@pytest.mark.parametrize(
    "over, files",
    [
        ({"structures": 3}, {}),  # used to raise TypeError inside the judge
        ({"file": "../out.pt"}, {}),  # a file outside the job's scratch
        ({"launches": "many"}, {}),
    ],
    ids=["wrong-type", "path-escape", "launches-type"],
)
def test_malformed_outputs_messages_are_rejected(judge_and_ref, monkeypatch, over, files):
    _, _, ref = judge_and_ref
    v = _judge_forged(judge_and_ref, monkeypatch, _outputs_msg(ref, **over), files)
    assert (v.status, v.guard) == ("rejected", "channel"), v.feedback


def test_an_outputs_file_that_is_not_a_dict_is_rejected(judge_and_ref, monkeypatch):
    _, _, ref = judge_and_ref
    v = _judge_forged(judge_and_ref, monkeypatch, _outputs_msg(ref), {"out.pt": [1, 2, 3]})
    assert (v.status, v.guard) == ("rejected", "channel"), v.feedback
