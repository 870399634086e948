"""A worker that forges its messages or its outputs. The channel key lives in the worker's memory, so code that
reaches it can send anything: the judge must turn every such shape into a verdict (`rejected`, guard `channel`),
never into an exception or an `ok`.

The reference is real (a CPU worker); the candidate's worker is replaced by a script of messages and crafted output
memfds, which is exactly what a forging candidate controls.
"""

import fcntl
import os
import shutil
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from kernelzero.judge import JudgeOptions
from kernelzero.judge.core import Judge
from kernelzero.judge.sandbox import pack
from kernelzero.judge.sandbox.process import OUTPUTS, SEALS, WorkerExit, load_sealed
from kernelzero.tasks import Task

FIX = Path(__file__).parents[1] / "fixtures" / "judge"


def memfd(obj=None, seal: bool = True) -> int:
    """A memfd holding `obj` as a pack (nothing when None), sealed as the harness seals its outputs."""
    fd = os.memfd_create("kz-forged", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    if obj is not None:
        pack.pack(fd, torch, obj)
    if seal:
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, SEALS)
    return fd


class ForgedSandbox:
    """Stands in for the candidate's Sandbox: replays `messages`; its output memfds hold `files` (name -> object),
    sealed unless `sealed` is False, and are empty and unsealed for names not given."""

    def __init__(self, job: dict, messages: list[dict], files: dict[str, object], sealed: bool = True):
        self.job = job
        self.scratch = Path(tempfile.mkdtemp(prefix="kz-forged-"))
        self.fds = {n: memfd(files[n], sealed) if n in files else memfd(seal=False) for n in OUTPUTS}
        self.messages = messages
        self.forked = False  # as a Sandbox says whether a template forked its worker (recorded in the verdict)

    def load_output(self, name: str, device: str | None = None):
        return load_sealed(self.fds[name], name)

    def output_bytes(self) -> int:
        return sum(os.fstat(fd).st_size for fd in self.fds.values())

    def start(self) -> None: ...

    def send(self, msg: dict) -> None: ...

    def recv(self, deadline: float):
        return self.messages.pop(0) if self.messages else None

    def finish(self, timed_out: bool = False) -> WorkerExit:
        return WorkerExit(returncode=0, timed_out=timed_out, log_tail="")

    def cleanup(self) -> None:  # as the real one: the memfds and the scratch go
        for fd in self.fds.values():
            os.close(fd)
        shutil.rmtree(self.scratch, ignore_errors=True)


@pytest.fixture(scope="module")
def judge_and_ref():
    judge = Judge(JudgeOptions(device="cpu", trials=2))
    task = Task.from_file(FIX / "relu_task.py")
    return judge, task, judge.reference(task)


def _judge_forged(judge_and_ref, monkeypatch, outputs_msg: dict, files: dict, sealed: bool = True):
    judge, task, ref = judge_and_ref
    real = judge._sandbox

    def sandbox(job):
        if job["kind"] != "candidate":
            return real(job)
        messages = [{"event": "started"}, {"event": "built"}, outputs_msg, {"event": "done"}]
        return ForgedSandbox(job, messages, files, sealed)

    monkeypatch.setattr(judge, "_sandbox", sandbox)
    return judge.judge(task, (FIX / "relu_triton_ok.py").read_text(), "triton")


def _outputs_msg(ref, **over) -> dict:
    """The message a worker sends with its outputs."""
    return {"event": "outputs", "structures": ref.structures, "checksums": ref.checksums, "ops": {}, "launches": 1,
            **over}  # fmt: skip


def test_the_honest_shape_passes(judge_and_ref, monkeypatch):
    """Control: the right outputs in the right shape are `ok`, so the rejections below come from the shapes."""
    _, _, ref = judge_and_ref
    files = {"out": {"outputs": ref.outputs, "replay": ref.replay_outputs, "wide": ref.wide_outputs}}
    v = _judge_forged(judge_and_ref, monkeypatch, _outputs_msg(ref), files)
    assert v.status == "ok", v.feedback


def test_an_outputs_file_with_no_trials_is_rejected(judge_and_ref, monkeypatch):
    """Before the length check, the comparison zipped trials: an empty file compared nothing and was `ok`."""
    _, _, ref = judge_and_ref
    v = _judge_forged(judge_and_ref, monkeypatch, _outputs_msg(ref), {"out": {"outputs": [], "replay": []}})
    assert (v.status, v.guard) == ("rejected", "channel"), v.feedback
    assert "does not hold 2 trials" in v.feedback


@pytest.mark.parametrize(
    "over, files",
    [
        ({"structures": 3}, {}),  # used to raise TypeError inside the judge
        ({"launches": "many"}, {}),
    ],
    ids=["wrong-type", "launches-type"],
)
def test_malformed_outputs_messages_are_rejected(judge_and_ref, monkeypatch, over, files):
    _, _, ref = judge_and_ref
    v = _judge_forged(judge_and_ref, monkeypatch, _outputs_msg(ref, **over), files)
    assert (v.status, v.guard) == ("rejected", "channel"), v.feedback


def test_an_outputs_file_that_is_not_a_dict_is_rejected(judge_and_ref, monkeypatch):
    _, _, ref = judge_and_ref
    v = _judge_forged(judge_and_ref, monkeypatch, _outputs_msg(ref), {"out": [1, 2, 3]})
    assert (v.status, v.guard) == ("rejected", "channel"), v.feedback


def test_outputs_the_worker_did_not_seal_are_rejected(judge_and_ref, monkeypatch):
    """An unsealed memfd could still change after the judge checked it (candidate code running after the harness's
    write, tests/fixtures/judge/rewrite_outputs_signal.py): the judge reads none, even right outputs."""
    _, _, ref = judge_and_ref
    files = {"out": {"outputs": ref.outputs, "replay": ref.replay_outputs, "wide": ref.wide_outputs}}
    v = _judge_forged(judge_and_ref, monkeypatch, _outputs_msg(ref), files, sealed=False)
    assert (v.status, v.guard) == ("rejected", "channel"), v.feedback
    assert "did not seal its out outputs" in v.feedback


def test_a_sealed_but_empty_outputs_memfd_is_rejected(judge_and_ref, monkeypatch):
    _, _, ref = judge_and_ref
    v = _judge_forged(judge_and_ref, monkeypatch, _outputs_msg(ref), {"out": None})
    assert (v.status, v.guard) == ("rejected", "channel"), v.feedback
    assert "wrote no out outputs" in v.feedback


def test_a_sealed_memfd_refuses_writes():
    """What the harness relies on: after F_SEAL_WRITE nobody (this process included) can change the contents."""
    fd = memfd({"x": torch.ones(3)})
    with pytest.raises(PermissionError), open(f"/proc/self/fd/{fd}", "r+b") as f:
        f.write(b"forged")
    assert torch.equal(load_sealed(fd, "out")["x"], torch.ones(3))
    os.close(fd)


def test_a_signal_handler_rewriting_the_outputs_file_never_passes():
    """The real exploit (tests/fixtures/judge/rewrite_outputs_signal.py): rejected statically for its signal
    handler; with the static rules off its rewrite hits a sealed memfd, so the judge reads the kernel's own (wrong)
    outputs: `incorrect`."""
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
    assert outcomes == {("incorrect", "value")}, outcomes


def test_a_forged_reference_message_is_the_tasks_fault(monkeypatch):
    """Task code runs in the reference's worker too, with its key: a message of the wrong shape makes the task's
    reference fail (`infra_error`, guard `reference`), never an exception in the judge (a missing field was a
    KeyError before the protocol was typed)."""
    judge = Judge(JudgeOptions(device="cpu", trials=2))
    task = Task.from_file(FIX / "relu_task.py")
    messages = [{"event": "started"}, {"event": "outputs", "checksums": [["ab"]]}]
    files = {"out": {"outputs": [], "replay": [], "identity": []}}
    monkeypatch.setattr(judge, "_sandbox", lambda job: ForgedSandbox(job, messages, files))
    v = judge.judge(task, (FIX / "relu_triton_ok.py").read_text(), "triton")
    assert (v.status, v.guard) == ("infra_error", "reference"), v.feedback
    assert "malformed `outputs` message: field `structures`" in v.feedback


def test_a_forward_the_worker_reports_hung_is_a_timeout(judge_and_ref, monkeypatch):
    """A worker whose hang watch reports a forward past it (`hung`) is killed and judged `timeout` at once, not after
    the run timeout; the run command carries the watch (none on CPU)."""
    judge, task, ref = judge_and_ref
    real, sent = judge._sandbox, []

    def sandbox(job):
        if job["kind"] != "candidate":
            return real(job)
        forged = ForgedSandbox(job, [{"event": "started"}, {"event": "built"}, {"event": "hung", "seconds": 5.3}], {})
        forged.send = sent.append
        return forged

    monkeypatch.setattr(judge, "_sandbox", sandbox)
    v = judge.judge(task, (FIX / "relu_triton_ok.py").read_text(), "triton")
    assert [c["hang_s"] for c in sent if c.get("cmd") == "run"] == [0.0]
    assert (v.status, v.guard) == ("timeout", "run") and "a forward ran 5.3 s" in v.feedback, v.feedback


@pytest.mark.parametrize(("device", "source", "ref_ms", "hang_s"),
                         [("cuda", "x", 0.004, 5.0), ("cuda", "x", 7.5, 7.5), ("cuda", "torch.compile(f)", 0.004, 0.0),
                          ("cpu", "x", 0.004, 0.0)])  # fmt: skip
def test_the_hang_watch_is_the_floor_or_1000_reference_calls(judge_and_ref, monkeypatch, device, source, ref_ms,
                                                             hang_s):  # fmt: skip
    judge, _, _ = judge_and_ref
    monkeypatch.setattr(judge, "device", device)
    ref = SimpleNamespace(eager={"events": {"median_ms": ref_ms}})
    assert judge._hang_after(ref, source) == hang_s
