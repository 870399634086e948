"""Batch judging from JSONL: one verdict line per input line, in input order, resumable; and human summaries."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from kernelzero.judge.options import BACKENDS, JudgeOptions
from kernelzero.judge.verdict import Verdict
from kernelzero.tasks import Task


def load_request(task_path: str | Path, solution_path: str | Path) -> tuple[Task, str]:
    """Read a task and a solution file; OSError/ValueError name the file that is missing or unreadable."""
    task_path, solution_path = Path(task_path), Path(solution_path)
    for label, p in (("task", task_path), ("solution", solution_path)):
        if not p.is_file():
            raise FileNotFoundError(f"{label} file not found: {p}")
    return Task.from_file(task_path), solution_path.read_text()


def describe(v: Verdict) -> str:
    line = f"{v.status}"
    if v.guard:
        line += f" [{v.guard}]"
    if v.timed and v.runtime:
        line += f"  {v.runtime.median_ms:.4f} ms (iqr {v.runtime.iqr_ms:.4f})"
        if v.speedup_eager:
            line += f"  speedup vs eager {v.speedup_eager:.2f}x"
        if v.speedup_compile:
            line += f", vs torch.compile {v.speedup_compile:.2f}x"
    elif v.correct:
        line += f"  ({v.trials} trials, max abs err {v.max_abs_err:.2g}; not timed on {v.device})"
    if v.feedback:
        line += "\n" + v.feedback
    return line


def _parse_line(lineno: int, line: str, in_path: Path) -> tuple[Task, str, str] | Verdict:
    """One input line -> a request, or the verdict that explains why it could not be judged."""
    where = f"{in_path}:{lineno}"
    try:
        item = json.loads(line)
        task_path, solution_path = item["task"], item["solution"]
        backend = item.get("backend", "triton")
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        return Verdict.fail("infra_error", f"{where}: malformed request line ({type(exc).__name__}: {exc})")
    if backend not in BACKENDS:
        return Verdict.fail("infra_error", f"{where}: backend must be one of {BACKENDS}, got {backend!r}")
    if not Path(task_path).is_file():
        return Verdict.fail("infra_error", f"{where}: task file not found: {task_path}", backend=backend)
    if not Path(solution_path).is_file():
        return Verdict.fail("format_error", f"{where}: solution file not found: {solution_path}", backend=backend)
    return Task.from_file(task_path), Path(solution_path).read_text(), backend


def run_batch(in_path: Path, out_path: Path, options: JudgeOptions, workers: int | None = None) -> Counter:
    """Judge every line of `in_path`; append verdicts to `out_path`, flushed one by one, skipping lines done before."""
    from kernelzero.judge.pool import JudgePool

    if not in_path.is_file():
        raise FileNotFoundError(f"batch file not found: {in_path}")
    lines = [ln for ln in in_path.read_text().splitlines() if ln.strip()]
    done = 0
    if out_path.exists():
        kept = []
        for ln in out_path.read_text().splitlines():
            try:
                Verdict.from_json(ln)
            except (ValueError, TypeError):
                break  # a torn last line from an interrupted run: judge that input again
            kept.append(ln)
        done = len(kept)
        out_path.write_text("".join(k + "\n" for k in kept))
    parsed = [_parse_line(i + 1, ln, in_path) for i, ln in enumerate(lines)][done:]
    requests = [p for p in parsed if not isinstance(p, Verdict)]
    counts: Counter = Counter()
    from rich.progress import Progress

    with JudgePool(options, workers) as pool, out_path.open("a") as out, Progress(transient=True) as bar:
        job = bar.add_task(f"judging {len(parsed)} candidates", total=len(parsed))
        verdicts = pool.imap(requests)
        for p in parsed:
            v = p if isinstance(p, Verdict) else next(verdicts)
            out.write(v.to_json() + "\n")
            out.flush()
            counts[v.status] += 1
            bar.advance(job)
    return counts
