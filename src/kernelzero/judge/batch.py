"""Batch judging from JSONL, keyed by input: one record per input line naming what was judged, resumable, and an
input that changed (a fixed path, an edited file) is judged again. Also the reading of one task and solution pair.

Input: one JSON object per line, `{"task": PATH, "solution": PATH, "backend": "triton" | "cuda"}` (backend optional:
the command's --backend). Output: one `BatchRecord` per input line, in input order once the batch is complete:
`{"line", "task", "solution", "backend", "key", "verdict", "error"}`. `key` hashes the task source, the candidate
code and the backend, so a record is reused on a rerun only for exactly the input it judged. A line that cannot be
judged (malformed JSON, a missing file, a malformed task) has `verdict: null` and `error` saying why: it is an input
error, not a verdict on a candidate, and it is looked at again on every rerun.

Resume: records are appended (flushed one by one) while the batch runs, so an interrupted batch keeps what it judged;
a rerun reuses every record whose key matches an input line and whose verdict may be scored (an `infra_error` says
nothing about the candidate, so it is judged again), and the finished batch rewrites the file in input order.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelzero.judge.options import BACKENDS
from kernelzero.judge.verdict import Verdict
from kernelzero.roles.coder import parse_coder_completion
from kernelzero.roles.parsing import ParsedCode
from kernelzero.syntax import parse
from kernelzero.tasks import Task, check_source

INPUT_ERROR = "input_error"  # the count of lines that could not be judged, beside the verdict statuses


def candidate_code(text: str) -> str:
    """The code of a solution file: the file itself when it parses as Python, else the last ```python block that
    defines `class ModelNew` (a saved model completion), as `eval` and `solve` take it from a completion. Neither:
    the text as it is, and the judge says what is wrong with it (format_error)."""
    try:
        parse(text)
        return text
    except (SyntaxError, ValueError):
        pass
    parsed = parse_coder_completion(text)
    return parsed.code if isinstance(parsed, ParsedCode) else text


def load_request(task_path: str | Path, solution_path: str | Path) -> tuple[Task, str]:
    """A task and the candidate code of a solution file. FileNotFoundError names the missing file; TaskFormatError
    (a ValueError, one line `FILE:LINE: what is wrong`) a task the worker could not even load: checked here, in a
    millisecond, rather than by a sandboxed reference seconds later."""
    task_path, solution_path = Path(task_path), Path(solution_path)
    for label, p in (("task", task_path), ("solution", solution_path)):
        if not p.is_file():
            raise FileNotFoundError(f"{label} file not found: {p}" if not p.exists() else f"{label} {p}: not a file")
    task = Task.from_file(task_path)
    check_source(task.source, str(task_path))
    return task, candidate_code(solution_path.read_text(encoding="utf-8", errors="replace"))


def request_key(task: Task, code: str, backend: str) -> str:
    """What a record judged: the task source, the candidate code and the backend (paths are not part of it)."""
    h = hashlib.sha256()
    for part in (task.source, code, backend):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:24]


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


@dataclass
class BatchRecord:
    """One input line and what became of it: a verdict, or the input error that kept it from being judged."""

    line: int  # 1-based line number in the input file
    task: str | None  # the paths as the input line gives them
    solution: str | None
    backend: str | None
    key: str = ""  # request_key of what was judged; "" for an input error
    verdict: Verdict | None = None
    error: str = ""  # why the line could not be judged (then verdict is None)

    def to_json(self) -> str:
        d: dict[str, Any] = {"line": self.line, "task": self.task, "solution": self.solution, "backend": self.backend,
                             "key": self.key, "verdict": self.verdict.to_dict() if self.verdict else None,
                             "error": self.error}  # fmt: skip
        return json.dumps(d, sort_keys=True)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> BatchRecord:
        v = d.get("verdict")
        return cls(line=int(d["line"]), task=d.get("task"), solution=d.get("solution"), backend=d.get("backend"),
                   key=d.get("key") or "", verdict=Verdict.from_dict(v) if isinstance(v, dict) else None,
                   error=d.get("error") or "")  # fmt: skip

    @property
    def status(self) -> str:
        return self.verdict.status if self.verdict is not None else INPUT_ERROR


@dataclass
class BatchItem:
    """One input line, read: the record it will become, and the request to judge (None for an input error)."""

    record: BatchRecord
    request: tuple[Task, str, str] | None = None


@dataclass
class BatchPlan:
    """What a run of `in_path` into `out_path` has to do: every input line, and the verdicts kept from before."""

    items: list[BatchItem]
    reused: dict[int, Verdict] = field(default_factory=dict)  # input line -> verdict kept from the output file
    earlier: int = 0  # batch records the output file held
    unkeyed: int = 0  # bare verdict lines (the format before records named their input): judged again
    foreign: int = 0  # lines that are neither (a torn last line; more than one: not a batch output at all)

    @property
    def todo(self) -> list[BatchItem]:
        return [it for it in self.items if it.request is not None and it.record.line not in self.reused]


def read_item(lineno: int, text: str, default_backend: str = "triton") -> BatchItem:
    """One input line -> the request it asks for, or the record of why it cannot be judged."""
    try:
        item = json.loads(text)
        task_path, solution_path = str(item["task"]), str(item["solution"])
        backend = item.get("backend", default_backend)
    except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as exc:
        what = f"missing field {exc}" if isinstance(exc, KeyError) else f"{type(exc).__name__}: {exc}"
        return BatchItem(BatchRecord(lineno, None, None, None, error=f'malformed request line ({what}); expected '
                                     '{"task": PATH, "solution": PATH, "backend": "triton"}'))  # fmt: skip
    record = BatchRecord(lineno, task_path, solution_path, backend)
    if backend not in BACKENDS:
        record.error = f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}"
        return BatchItem(record)
    try:
        task, code = load_request(task_path, solution_path)
    except (OSError, ValueError) as exc:  # a missing file, a malformed task, an unreadable one
        record.error = str(exc)
        return BatchItem(record)
    record.key = request_key(task, code, backend)
    return BatchItem(record, (task, code, backend))


def read_records(out_path: Path) -> tuple[list[BatchRecord], int, int]:
    """The batch records of an output file; how many lines are bare verdicts (older format); how many neither."""
    if not out_path.exists():
        return [], 0, 0
    records, bare, other = [], 0, 0
    for ln in out_path.read_text(encoding="utf-8", errors="replace").splitlines():
        if not ln.strip():
            continue
        try:
            d = json.loads(ln)
        except ValueError:
            other += 1
            continue
        if isinstance(d, dict) and "line" in d and "verdict" in d:
            try:
                records.append(BatchRecord.from_dict(d))
                continue
            except (ValueError, KeyError, TypeError):
                pass
        bare += isinstance(d, dict) and "status" in d
        other += not (isinstance(d, dict) and "status" in d)
    return records, bare, other


def plan_batch(in_path: Path, out_path: Path, default_backend: str = "triton") -> BatchPlan:
    """Read every input line and the output file; keep the verdicts that still match their input exactly."""
    lines = in_path.read_text(encoding="utf-8", errors="replace").splitlines()
    items = [read_item(i, ln, default_backend) for i, ln in enumerate(lines, start=1) if ln.strip()]
    records, bare, other = read_records(out_path)
    by_key = {r.key: r.verdict for r in records if r.key and r.verdict is not None and r.verdict.scored}
    reused = {it.record.line: by_key[it.record.key] for it in items if it.request and it.record.key in by_key}
    return BatchPlan(items, reused, earlier=len(records), unkeyed=bare, foreign=other)


def run_batch(
    plan: BatchPlan,
    out_path: Path,
    judge_many: Callable[[list[tuple[Task, str, str]]], Iterable[Verdict]] | None,
    on_record: Callable[[BatchRecord, bool], None] | None = None,
) -> list[BatchRecord]:
    """Judge what `plan` left to do, appending each record to `out_path` as it comes (flushed), then rewrite the
    file with one record per input line, in input order. `judge_many` yields verdicts in request order (a pool's
    `imap`); it may be None when nothing is left to judge. `on_record(record, reused)` sees every line in order.
    Returns the records, one per input line."""
    out_path.parent.mkdir(parents=True, exist_ok=True)
    todo = plan.todo
    verdicts: Iterator[Verdict] = iter(judge_many([it.request for it in todo]) if todo and judge_many else ())
    final: list[BatchRecord] = []
    torn = False  # a last line cut short (killed mid-write) must not swallow the next record
    if out_path.exists() and out_path.stat().st_size:
        with out_path.open("rb") as f:
            f.seek(-1, os.SEEK_END)
            torn = f.read(1) != b"\n"
    with out_path.open("a", encoding="utf-8") as out:
        if torn:
            out.write("\n")
        for it in plan.items:
            record = it.record
            reused = record.line in plan.reused
            if reused:
                record.verdict = plan.reused[record.line]
            elif it.request is not None:
                record.verdict = next(verdicts)
                out.write(record.to_json() + "\n")
                out.flush()
            final.append(record)
            if on_record is not None:
                on_record(record, reused)
    tmp = out_path.with_name(out_path.name + ".tmp")
    tmp.write_text("".join(r.to_json() + "\n" for r in final), encoding="utf-8")
    os.replace(tmp, out_path)
    return final
