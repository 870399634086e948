"""A worker that forges its messages or its outputs file. The channel key lives in the worker's memory, so code that
reaches it can send anything: the judge must turn every such shape into a verdict (`rejected`, guard `channel`),
never into an exception or an `ok`.

The reference is real (a CPU worker); the candidate's worker is replaced by a script of messages and a crafted
scratch directory, which is exactly what a forging candidate controls.
"""

import hashlib
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
        self.messages = [{**m, "sha256": _sha(self.scratch / m["file"])} if m.get("sha256") == "auto" else m
                         for m in messages]  # fmt: skip

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


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "0" * 64


def _outputs_msg(ref, **over) -> dict:
    """The message a worker sends; sha256 "auto": the digest of the file as it is in the scratch directory."""
    return {"event": "outputs", "file": "out.pt", "structures": ref.structures, "checksums": ref.checksums,
            "ops": {}, "launches": 1, "sha256": "auto", **over}  # fmt: skip


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


def test_an_outputs_file_rewritten_after_the_worker_wrote_it_is_rejected(judge_and_ref, monkeypatch):
    """The worker's digest is of the bytes it serialised; the file holds other (here: the right) outputs, as left
    by candidate code running after the harness's write (tests/adversarial/cases/triton_rewrite_outputs_file.py)."""
    _, _, ref = judge_and_ref
    files = {"out.pt": {"outputs": ref.outputs, "replay": ref.replay_outputs}}
    v = _judge_forged(judge_and_ref, monkeypatch, _outputs_msg(ref, sha256="ab" * 32), files)
    assert (v.status, v.guard) == ("rejected", "channel"), v.feedback
    assert "changed after the worker wrote it" in v.feedback


def test_a_signal_handler_rewriting_the_outputs_file_never_passes():
    """The real exploit (tests/fixtures/judge/rewrite_outputs_signal.py): rejected statically for its signal
    handler; with the static rules off it races the parent's read, and loses either way: `channel` when its rewrite
    lands first (the digest), `incorrect` when the parent reads first. The judge before the digest said `ok` when
    the rewrite landed first."""
    import kernelzero.judge.core as core

    task = Task.from_file(Path(__file__).parents[1] / "adversarial" / "tasks" / "relu_small.py")
    source = (FIX / "rewrite_outputs_signal.py").read_text()
    judge = Judge(JudgeOptions(device="cpu", trials=2))
    v = judge.judge(task, source, "triton")
    assert (v.status, v.guard) == ("rejected", "static:threads"), v.feedback
    saved = list(core.STATIC_CHECKS)
    core.STATIC_CHECKS.clear()
    try:
        outcomes = {(v.status, v.guard) for v in (judge.judge(task, source, "triton") for _ in range(3))}
    finally:
        core.STATIC_CHECKS.extend(saved)
    assert outcomes <= {("rejected", "channel"), ("incorrect", "value")}, outcomes
