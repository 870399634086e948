"""Solving one task: sample Coder solutions, judge them, refine over turns with the judge's feedback, keep the best.

`solve` is the loop behind `kernelzero solve`; the judge comes in as `judge_fn(task, code, backend) -> Verdict`, so
the loop can be driven by the real judge, a remote judge service, or a test stub. A completion that holds no usable
code gets a `format_error` verdict from the parser and never reaches the judge (`roles.coder.judge_completions`).
At turn t > 1 every sample's chat carries its own earlier answers and the judge's feedback on them
(`coder.Attempt`); samples never see each other.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kernelzero.generation.base import Completion, Policy, SamplingConfig
from kernelzero.judge.verdict import Verdict
from kernelzero.roles.coder import (
    Attempt,
    Judged,
    JudgeManyFn,
    coder_messages,
    feedback_from_verdict,
    judge_completions,
)
from kernelzero.tasks import Task

if TYPE_CHECKING:
    from rich.table import Table

JudgeFn = Callable[[Task, str, str], Verdict]  # (task, candidate source, backend) -> verdict

# How close a failure came to a solution; ranks the best rollout when none is correct. `rejected` (a cheat) is last.
_STATUS_RANK = {
    "ok": 8,
    "incorrect": 7,
    "runtime_error": 6,
    "timeout": 5,
    "crashed": 4,
    "compile_error": 3,
    "format_error": 2,
    "infra_error": 1,
    "rejected": 0,
}


@dataclass
class Rollout:
    """One judged completion: sample `sample` (0-based) at turn `turn` (1-based)."""

    sample: int
    turn: int
    completion: Completion
    code: str | None  # None when the completion held no usable code (then verdict.status == "format_error")
    verdict: Verdict

    @property
    def key(self) -> tuple[int, float]:
        """Larger is better: correct before incorrect, then speedup over eager (untimed counts as 0)."""
        return _STATUS_RANK[self.verdict.status], self.verdict.speedup_eager or 0.0


@dataclass
class SolveResult:
    """Every rollout of a `solve` run, in (turn, sample) order, and the best one."""

    task: str
    backend: str
    model: str
    rollouts: list[Rollout]

    @property
    def best(self) -> Rollout | None:
        """The highest-ranked rollout; ties go to the earliest (fewest turns, then lowest sample)."""
        return max(self.rollouts, key=lambda r: r.key, default=None)  # max keeps the first of equals

    @property
    def solved(self) -> bool:
        return any(r.verdict.correct for r in self.rollouts)


def solve(
    task: Task,
    policy: Policy,
    *,
    backend: str,
    judge_fn: JudgeFn,
    samples: int = 4,
    turns: int = 1,
    sampling: SamplingConfig | None = None,
    principles: Sequence[str] | None = None,
    on_rollout: Callable[[Rollout], None] | None = None,
    done: Mapping[tuple[int, int], Rollout] | None = None,
    judge_many: JudgeManyFn | None = None,
    brief: bool = False,
) -> SolveResult:
    """Run `turns` rounds of `samples` parallel refinement chains on `task` and judge every answer (`brief`: the
    Coder's brief prompt, `roles.coder.PROMPTS`).

    `done` maps (sample, turn) to rollouts judged by an earlier, interrupted run: they are replayed into their
    chain's history (and the result) without generating or judging again, and `on_rollout` is not called for them.
    With `judge_many`, each turn's parsed answers are judged in one batch (concurrently, in a pool) instead of one
    `judge_fn` call at a time.
    """
    if samples < 1 or turns < 1:
        raise ValueError(f"samples and turns must be >= 1, got samples={samples}, turns={turns}")
    sampling = sampling or SamplingConfig()
    done = done or {}
    history: list[list[Attempt]] = [[] for _ in range(samples)]
    rollouts: list[Rollout] = []
    for turn in range(1, turns + 1):
        todo = [s for s in range(samples) if (s, turn) not in done]
        fresh: list[Completion] = []
        if todo and turn == 1:  # one chat, n samples: backends batch or share the prompt's prefix
            chat = coder_messages(task.source, backend, principles=principles, brief=brief)
            fresh = policy.generate([chat], len(todo), sampling)[0]
        elif todo:
            chats = [coder_messages(task.source, backend, previous=history[s], principles=principles, brief=brief)
                     for s in todo]  # fmt: skip
            fresh = [c[0] for c in policy.generate(chats, 1, sampling)]
        generated = dict(zip(todo, fresh, strict=True))
        judged: dict[int, Judged] = {}
        if judge_many is not None:  # the turn's answers in one batch
            requests = [(task, c.text, backend) for c in generated.values()]
            judged = dict(zip(generated, judge_completions(requests, judge_many), strict=True))
        for sample in range(samples):
            if sample not in generated:  # resumed: replay the recorded answer and verdict
                old = done[(sample, turn)]
                history[sample].append(Attempt.of(old.completion.text, old.code, feedback_from_verdict(old.verdict)))
                rollouts.append(old)
                continue
            completion = generated[sample]
            if judge_many is None:  # one at a time, so `on_rollout` records each verdict as soon as it is known
                judged[sample] = judge_completions([(task, completion.text, backend)], _one_at_a_time(judge_fn))[0]
            j = judged[sample]
            history[sample].append(Attempt.of(completion.text, j.code, feedback_from_verdict(j.verdict)))
            rollout = Rollout(sample=sample, turn=turn, completion=completion, code=j.code, verdict=j.verdict)
            rollouts.append(rollout)
            if on_rollout is not None:
                on_rollout(rollout)
    return SolveResult(task=task.name, backend=backend, model=policy.name, rollouts=rollouts)


def _one_at_a_time(judge_fn: JudgeFn) -> JudgeManyFn:
    return lambda requests: [judge_fn(*r) for r in requests]


def write_solve_outputs(result: SolveResult, out_dir: str | Path) -> Path:
    """Write `solutions/`, `completions/`, `verdicts.jsonl`, `best.py` (when any code parsed) and `summary.json`."""
    out = Path(out_dir)
    (out / "solutions").mkdir(parents=True, exist_ok=True)
    (out / "completions").mkdir(exist_ok=True)
    with open(out / "verdicts.jsonl", "w", encoding="utf-8") as f:
        for r in result.rollouts:
            stem = f"s{r.sample:02d}_t{r.turn}"
            (out / "completions" / f"{stem}.txt").write_text(r.completion.text, encoding="utf-8")
            if r.code is not None:
                (out / "solutions" / f"{stem}.py").write_text(r.code, encoding="utf-8")
            row = {"sample": r.sample, "turn": r.turn, "finish_reason": r.completion.finish_reason}
            f.write(json.dumps({**row, "verdict": r.verdict.to_dict()}, sort_keys=True) + "\n")
    best = result.best
    if best is not None and best.code is not None:
        (out / "best.py").write_text(best.code, encoding="utf-8")
    statuses: dict[str, int] = {}
    for r in result.rollouts:
        statuses[r.verdict.status] = statuses.get(r.verdict.status, 0) + 1
    summary = {
        "task": result.task,
        "backend": result.backend,
        "model": result.model,
        "solved": result.solved,
        "rollouts": len(result.rollouts),
        "statuses": statuses,
        "best": None
        if best is None
        else {
            "sample": best.sample,
            "turn": best.turn,
            "status": best.verdict.status,
            "speedup_eager": best.verdict.speedup_eager,
            "speedup_compile": best.verdict.speedup_compile,
        },
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return out


def solve_table(result: SolveResult) -> Table:
    """A rich table of every rollout, the best one starred; full feedback is in verdicts.jsonl."""
    from rich.table import Table

    best = result.best
    table = Table(title=f"{result.task} ({result.backend}, {result.model})")
    for col in ("", "sample", "turn", "status", "speedup", "vs compile"):
        table.add_column(col, no_wrap=True)
    table.add_column("feedback")
    for r in result.rollouts:
        v = r.verdict
        table.add_row(
            "*" if r is best else "",
            str(r.sample),
            str(r.turn),
            v.status,
            _speed(v, v.speedup_eager),
            _speed(v, v.speedup_compile),
            _first_line(v.feedback, 60),
        )
    return table


def _speed(verdict: Verdict, x: float | None) -> str:
    if not verdict.correct:
        return "-"
    return "untimed" if x is None else f"{x:.2f}x"


def _first_line(text: str, width: int) -> str:
    line = (text.strip().splitlines() or [""])[0]
    return line if len(line) <= width else line[: width - 3] + "..."
