"""The judge: sandboxed build, correctness check and timing of CUDA and Triton candidates.

    from kernelzero.judge import judge, JudgeOptions
    verdict = judge(task, candidate_source, backend="triton", options=JudgeOptions(device="auto"))

Modules: `verdict` (the output record), `options`, `sandbox` (isolation and the signed channel), `worker` (the only
place untrusted code runs), `check` (comparison), `timing`, `core` (the decision), `pool` (many at once, async).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kernelzero.judge.options import JudgeOptions
from kernelzero.judge.verdict import STATUSES, Timing, Verdict

if TYPE_CHECKING:
    from kernelzero.tasks import Task


def judge(task: Task, candidate_source: str, backend: str = "triton", options: JudgeOptions | None = None) -> Verdict:
    """Judge one candidate. For many, or from async code, use `kernelzero.judge.pool.JudgePool`."""
    from kernelzero.judge.core import Judge

    return Judge(options).judge(task, candidate_source, backend)


__all__ = ["JudgeOptions", "STATUSES", "Timing", "Verdict", "judge"]
