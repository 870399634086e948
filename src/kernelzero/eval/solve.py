"""Solving tasks: sample Coder solutions, judge them, refine over turns with the judge's feedback, keep the best.

`solve` is the loop behind `kernelzero solve`; `solve_many` runs it on many tasks at once, each turn one generation
and one judging batch over every task (what `run_eval` and l(m) use). The judge comes in as
`judge_fn(task, code, backend) -> Verdict` or `judge_many(requests) -> verdicts`, so the loop can be driven by the real
judge, a remote judge service, or a test stub. A completion that holds no usable
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
    JudgeManyFn,
    coder_messages,
    feedback_from_verdict,
    iter_judged,
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
    Coder's brief prompt, `roles.coder.PROMPTS`): `solve_many` on one task.

    `done` maps (sample, turn) to rollouts judged by an earlier, interrupted run: they are replayed into their
    chain's history (and the result) without generating or judging again, and `on_rollout` is not called for them.
    With `judge_many`, each turn's parsed answers are judged in one batch (concurrently, in a pool); else one
    `judge_fn` call at a time, each verdict reaching `on_rollout` before the next judging starts.
    """
    report = None if on_rollout is None else (lambda _i, r: on_rollout(r))
    return solve_many([task], policy, backend=backend, judge_many=judge_many or serial_judge(judge_fn),
                      samples=samples, turns=turns, sampling=sampling, principles=principles, on_rollout=report,
                      done=None if done is None else [done], brief=brief)[0]  # fmt: skip


def solve_many(
    tasks: Sequence[Task],
    policy: Policy,
    *,
    backend: str,
    judge_many: JudgeManyFn,
    samples: int = 4,
    turns: int = 1,
    sampling: SamplingConfig | Sequence[SamplingConfig] | None = None,
    principles: Sequence[str] | None = None,
    on_rollout: Callable[[int, Rollout], None] | None = None,
    done: Sequence[Mapping[tuple[int, int], Rollout]] | None = None,
    brief: bool = False,
) -> list[SolveResult]:
    """`solve` on every task at once: per turn, one `generate` over every task's chats and one `judge_many` batch
    over every answer of the turn, so a pool judges all tasks' samples concurrently instead of one task's at a time
    (an H100 evaluation judged task by task kept its GPU mostly idle). One result per task, in task order.

    `sampling`: one config for every task, or one per task. Tasks are generated together only where their config
    (and, at turn 1, their count of samples still to do) is the same: a backend seeds a whole `generate` call, so a
    task with a seed of its own keeps a call of its own and samples exactly as it would alone. `done[i]` is task i's
    `done` (see `solve`); `on_rollout(i, rollout)` is called for each new rollout of task i as its verdict arrives
    (as `judge_many`'s iterable gives it: `JudgePool.imap` streams, `JudgePool.judge_many` gives the batch at once).
    """
    if samples < 1 or turns < 1:
        raise ValueError(f"samples and turns must be >= 1, got samples={samples}, turns={turns}")
    configs = _per_task(sampling or SamplingConfig(), len(tasks))
    dones = list(done) if done is not None else [{} for _ in tasks]
    if len(dones) != len(tasks):
        raise ValueError(f"done holds {len(dones)} entries for {len(tasks)} tasks")
    history: list[list[list[Attempt]]] = [[[] for _ in range(samples)] for _ in tasks]  # [task][sample]
    rollouts: list[list[Rollout]] = [[] for _ in tasks]
    for turn in range(1, turns + 1):
        todo = [[s for s in range(samples) if (s, turn) not in d] for d in dones]
        generated = _generate_turn(tasks, policy, backend, turn, todo, history, configs, principles, brief)
        # resumed rollouts replay the recorded answer and verdict; new ones join them as their verdicts arrive
        this_turn = [{s: d[(s, turn)] for s in range(samples) if (s, turn) in d} for d in dones]
        requests = [(tasks[i], c.text, backend) for (i, _), c in generated.items()]
        for (i, s), j in zip(generated, iter_judged(requests, judge_many), strict=True):
            rollout = Rollout(sample=s, turn=turn, completion=generated[(i, s)], code=j.code, verdict=j.verdict)
            this_turn[i][s] = rollout
            if on_rollout is not None:
                on_rollout(i, rollout)
        for i, by_sample in enumerate(this_turn):
            for s in range(samples):
                r = by_sample[s]
                history[i][s].append(Attempt.of(r.completion.text, r.code, feedback_from_verdict(r.verdict)))
                rollouts[i].append(r)
    return [SolveResult(t.name, backend, policy.name, r) for t, r in zip(tasks, rollouts, strict=True)]


def _generate_turn(
    tasks: Sequence[Task],
    policy: Policy,
    backend: str,
    turn: int,
    todo: list[list[int]],
    history: list[list[list[Attempt]]],
    configs: list[SamplingConfig],
    principles: Sequence[str] | None,
    brief: bool,
) -> dict[tuple[int, int], Completion]:
    """One turn's new answers, keyed (task, sample) in task then sample order; one `generate` call per group of
    tasks that share a sampling config (and at turn 1 a sample count)."""
    groups: dict[tuple[SamplingConfig, int], list[tuple[int, list[int]]]] = {}  # -> [(task, samples)], one chat each
    for i, pending in enumerate(todo):
        if not pending:
            continue
        if turn == 1:  # one chat, n samples: backends batch or share the prompt's prefix
            groups.setdefault((configs[i], len(pending)), []).append((i, pending))
        else:  # one chat per chain, each carrying its own earlier answers and feedback
            groups.setdefault((configs[i], 1), []).extend((i, [s]) for s in pending)
    fresh: dict[tuple[int, int], Completion] = {}
    for (config, n), chats in groups.items():
        # at turn 1 every history is empty: the task's chat
        prompts = [
            coder_messages(tasks[i].source, backend, previous=history[i][ss[0]], principles=principles, brief=brief)
            for i, ss in chats
        ]
        for (i, ss), completions in zip(chats, policy.generate(prompts, n, config), strict=True):
            fresh.update(zip([(i, s) for s in ss], completions, strict=True))
    return {key: fresh[key] for key in sorted(fresh)}


def _per_task(sampling: SamplingConfig | Sequence[SamplingConfig], n_tasks: int) -> list[SamplingConfig]:
    if isinstance(sampling, SamplingConfig):
        return [sampling] * n_tasks
    if len(sampling) != n_tasks:
        raise ValueError(f"sampling holds {len(sampling)} configs for {n_tasks} tasks")
    return list(sampling)


def serial_judge(judge_fn: JudgeFn) -> JudgeManyFn:
    """A `judge_many` that judges lazily, one request at a time: a streaming caller (`solve_many`) records each
    verdict before the next judging starts."""
    return lambda requests: (judge_fn(*r) for r in requests)


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
