"""The run's records, one type per file: `TaskRecord` (a line of tasks.jsonl) and `VerdictRecord` (a line of
verdicts.jsonl). The loop writes them, once each under their key (`runlog.KeyedLog`); the frontier, the report and
the export read them back as these types, never as loose dicts.

tasks.jsonl holds every proposed task, from both places tasks are proposed: rollouts of the Proposer phase (phase
`proposer`, one line per generated task of each step) and the trained Proposer's batch (phase `tasks`). Both are a
`curriculum.proposals.Proposal` under one schema. verdicts.jsonl holds every judged Coder solution: the frozen Coder's
l(m) samples (phases `proposer` and `tasks`) and the Coder phase's rollouts (phase `coder`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from kernelzero.curriculum.proposals import Proposal
from kernelzero.judge.verdict import Verdict
from kernelzero.loop.runlog import Key, read_records
from kernelzero.roles.coder import Judged
from kernelzero.tasks import Task

TASKS_FILE, VERDICTS_FILE = "tasks.jsonl", "verdicts.jsonl"


@dataclass(frozen=True)
class TaskRecord:
    """One proposed task in the run: where it was proposed (round, phase, step, index) and the proposal itself."""

    round: int
    phase: str  # "proposer" (a rollout of the Proposer phase) or "tasks" (the trained Proposer's batch)
    step: int
    index: int
    proposal: Proposal
    reward_raw: float | None = None
    """Proposer phase only: the reward function's r_P or rho, before the batch's repetition penalty (the final reward
    is `proposal.reward`)."""

    @property
    def key(self) -> Key:
        return self.round, self.phase, self.step, self.index

    def to_dict(self) -> dict:
        """The line's fields (KeyedLog adds `key`); the proposal's fields are the line's own."""
        return {"round": self.round, "phase": self.phase, "step": self.step, **self.proposal.to_dict(),
                "reward_raw": self.reward_raw}  # fmt: skip

    @classmethod
    def from_dict(cls, d: dict) -> TaskRecord:
        r, phase, step, index = d["key"]
        return cls(int(r), str(phase), int(step), int(index), Proposal.from_dict(d), d.get("reward_raw"))


@dataclass(frozen=True)
class VerdictRecord:
    """One judged Coder solution in the run: where, the task it answers, the completion, the code parsed from it
    (None: the completion held none, and the verdict is `format_error`) and the judge's full verdict."""

    round: int
    phase: str  # "proposer" / "tasks": an l(m) sample of the frozen Coder; "coder": a Coder phase rollout
    step: int
    index: int
    task: str
    task_source: str
    apis: tuple[str, ...]
    backend: str
    completion: str
    solution: str | None
    verdict: Verdict

    @classmethod
    def of(cls, key: Key, task: Task, judged: Judged, backend: str) -> VerdictRecord:
        """The record of `judged` on `task`; `backend` where the verdict names none (a format_error's may not)."""
        r, phase, step, index = key
        return cls(r, phase, step, index, task.name, task.source, tuple(task.apis), judged.verdict.backend or backend,
                   judged.completion, judged.code, judged.verdict)  # fmt: skip

    @property
    def key(self) -> Key:
        return self.round, self.phase, self.step, self.index

    def to_dict(self) -> dict:
        """The line's fields (KeyedLog adds `key`); `status` and `correct` repeat the verdict's for readers of the file
        (`from_dict` takes them from the verdict)."""
        return {"round": self.round, "phase": self.phase, "step": self.step, "task": self.task,
                "task_source": self.task_source, "apis": list(self.apis), "backend": self.backend,
                "completion": self.completion, "solution": self.solution, "status": self.verdict.status,
                "correct": self.verdict.correct, "verdict": self.verdict.to_dict()}  # fmt: skip

    @classmethod
    def from_dict(cls, d: dict) -> VerdictRecord:
        r, phase, step, index = d["key"]
        return cls(int(r), str(phase), int(step), int(index), d["task"], d["task_source"], tuple(d.get("apis") or ()),
                   d["backend"], d["completion"], d["solution"], Verdict.from_dict(d["verdict"]))  # fmt: skip


def read_task_records(run_dir: str | os.PathLike) -> Iterator[TaskRecord]:
    """Every whole line of run_dir/tasks.jsonl, in file order."""
    return (TaskRecord.from_dict(d) for d in read_records(Path(run_dir) / TASKS_FILE))


def read_verdict_records(run_dir: str | os.PathLike) -> Iterator[VerdictRecord]:
    """Every whole line of run_dir/verdicts.jsonl, in file order."""
    return (VerdictRecord.from_dict(d) for d in read_records(Path(run_dir) / VERDICTS_FILE))


__all__ = ["TASKS_FILE", "VERDICTS_FILE", "TaskRecord", "VerdictRecord", "read_task_records", "read_verdict_records"]
