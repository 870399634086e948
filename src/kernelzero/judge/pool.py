"""Judging many candidates at once: a thread pool over sandboxed workers, a batch runner, and an async client."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor

from kernelzero.judge.core import Judge
from kernelzero.judge.options import JudgeOptions
from kernelzero.judge.verdict import Verdict
from kernelzero.tasks import Task


class JudgePool:
    """Runs `Judge.judge` for many (task, source, backend) requests concurrently, each in its own worker process.

    Every request gets exactly one Verdict, in request order, whatever its candidate does. Concurrency is bounded by
    `workers` (default: the CPU count on CPU; 4 on GPU, where builds overlap and timing is serialised by a lock).
    """

    def __init__(self, options: JudgeOptions | None = None, workers: int | None = None):
        self.judge_ = Judge(options)
        default = max(1, (os.cpu_count() or 2)) if self.judge_.device == "cpu" else 4
        self.workers = workers or default
        self._executor = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="kz-judge")

    def judge(self, task: Task, source: str, backend: str) -> Verdict:
        return self.judge_.judge(task, source, backend)

    def judge_many(self, requests: Sequence[tuple[Task, str, str]], progress: bool = False) -> list[Verdict]:
        futures = [self._executor.submit(self.judge_.judge, *r) for r in requests]
        if progress:
            from rich.progress import Progress

            with Progress(transient=True) as bar:
                job = bar.add_task("judging", total=len(futures))
                for f in futures:
                    f.result()
                    bar.advance(job)
        return [f.result() for f in futures]

    def imap(self, requests: Iterable[tuple[Task, str, str]]):
        """Verdicts in request order as they complete, for writers that must flush each line."""
        futures = [self._executor.submit(self.judge_.judge, *r) for r in requests]
        for f in futures:
            yield f.result()

    async def ajudge(self, task: Task, source: str, backend: str, timeout_s: float | None = None) -> Verdict:
        """Async client for reward functions. A request past `timeout_s` is `infra_error` (not scored)."""
        loop = asyncio.get_running_loop()
        fut = loop.run_in_executor(self._executor, self.judge_.judge, task, source, backend)
        try:
            return await asyncio.wait_for(fut, timeout_s)
        except TimeoutError:
            return Verdict.fail("infra_error", f"judge request exceeded {timeout_s} s", guard="request_timeout",
                                backend=backend, task=task.name)  # fmt: skip

    def close(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> JudgePool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
