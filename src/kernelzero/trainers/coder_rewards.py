"""The Coder's reward columns, `correct` and `speedup`: async clients of the judge that share one verdict per rollout.

TRL runs async reward functions concurrently on its own event loop (one `asyncio.gather` per batch, in
`GRPOTrainer._calculate_rewards`). Both columns need the same verdict, so a `VerdictLedger` judges each completion of
the batch once, the first column to ask starts the work and the second awaits the same future. The trainer resets
the ledger before each batch and reads the verdicts back afterwards for its logs.

Column values, one per completion on this process (TRL gathers them across processes afterwards):
    correct: 1.0 / 0.0; None for `infra_error` (TRL turns it into NaN and leaves the rollout out of the reward)
    speedup: the raw speedup over eager for a correct, timed rollout; None when correct but untimed (CPU judge) or
             unscored; 0.0 for a wrong rollout. The gate and f() are applied later, on the gathered matrix.
A completion the parser rejects never reaches the judge: it is a `format_error` verdict, scored 0.

Event loop: TRL runs these coroutines on its own loop in a daemon thread, not the caller's. A judge client must
therefore not hold asyncio objects bound to another loop; `JudgePool.ajudge` (a thread-pool executor looked up from
the running loop) is fine.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from kernelzero.judge.verdict import Verdict
from kernelzero.roles.coder import Judged, judge_completions
from kernelzero.roles.parsing import ParseResult
from kernelzero.tasks import Task
from kernelzero.trainers.common import completion_text

JudgeFn = Callable[[Task, str, str], Awaitable[Verdict]]
"""`await judge_fn(task, candidate_source, backend) -> Verdict`, e.g. `pool.ajudge` of kernelzero.judge."""
CodeParser = Callable[[str], ParseResult]
"""A completion parser such as `kernelzero.roles.coder.parse_coder_completion`."""


def correct_value(v: Verdict) -> float | None:
    return float(v.correct) if v.scored else None


def speedup_value(v: Verdict) -> float | None:
    if not v.scored:
        return None
    if not v.correct:
        return 0.0
    if v.speed_noisy:  # closer to the reference's speed than its own spread: as fast as eager, no more, no less
        return 1.0
    return v.speedup_eager  # None when the judge could not time it


class VerdictLedger:
    """Judges one batch of completions once, for every reward column that asks; reset by the trainer per batch."""

    def __init__(self, judge_fn: JudgeFn, parse_fn: CodeParser, tasks: Mapping[str, Task] | None = None):
        """tasks: the Task records by name, so the judge gets the caller's record (origin, level, apis) rather than
        one rebuilt from the dataset's name and source columns."""
        self.judge_fn = judge_fn
        self.parse_fn = parse_fn
        self.tasks = dict(tasks or {})
        self._batch: asyncio.Future | None = None
        self._size = 0
        self.judged: list[Judged] | None = None  # the last batch: completion, parsed code, verdict, in order

    @property
    def verdicts(self) -> list[Verdict] | None:
        return None if self.judged is None else [j.verdict for j in self.judged]

    def reset(self) -> None:
        self._batch, self._size, self.judged = None, 0, None

    async def judge_batch(
        self, completions: Sequence[Any], names: Sequence[str], sources: Sequence[str], backends: Sequence[str]
    ) -> list[Verdict]:
        if self._batch is None:
            self._size = len(completions)
            requests = [
                (self._task(n, s), completion_text(c), b)
                for c, n, s, b in zip(completions, names, sources, backends, strict=True)
            ]
            self._batch = asyncio.ensure_future(self._judge(requests))
        elif len(completions) != self._size:
            raise RuntimeError("VerdictLedger was not reset between batches (trainer bug)")
        self.judged = list(await self._batch)
        return [j.verdict for j in self.judged]

    def _task(self, name: str, source: str) -> Task:
        task = self.tasks.get(name)
        return task if task is not None and task.source == source else Task(name=name, source=source)

    async def _judge(self, requests: list[tuple[Task, str, str]]) -> list[Judged]:
        """`judge_completions` (the one completion -> verdict path, which is synchronous) in a worker thread, so the
        parsing does not hold up this loop; its judge calls come back to this loop and run concurrently."""
        loop = asyncio.get_running_loop()

        def judge_many(calls: Sequence[tuple[Task, str, str]]) -> list[Verdict]:
            async def all_calls() -> list[Verdict]:
                return list(await asyncio.gather(*(self.judge_fn(*c) for c in calls)))

            return asyncio.run_coroutine_threadsafe(all_calls(), loop).result()

        return await asyncio.to_thread(judge_completions, requests, judge_many, self.parse_fn)


def make_coder_reward_funcs(ledger: VerdictLedger) -> list[Callable[..., Awaitable[list[float | None]]]]:
    """The two TRL reward functions, in column order [correct, speedup] (TRL names columns by `__name__`).

    They read the dataset's extra columns `name`, `source` and `backend`, which TRL passes as keyword lists.
    """

    async def correct(prompts, completions, name, source, backend, log_extra=None, **_: Any):
        verdicts = await ledger.judge_batch(completions, name, source, backend)
        if log_extra is not None:  # extra columns of TRL's sample-completions table
            log_extra("task", list(name))
            log_extra("status", [v.status for v in verdicts])
            log_extra("speedup_eager", [v.speedup_eager for v in verdicts])
            log_extra("feedback", [v.feedback[:200] for v in verdicts])
        return [correct_value(v) for v in verdicts]

    async def speedup(prompts, completions, name, source, backend, **_: Any):
        verdicts = await ledger.judge_batch(completions, name, source, backend)
        return [speedup_value(v) for v in verdicts]

    return [correct, speedup]
