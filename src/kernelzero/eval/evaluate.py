"""Running an evaluation: generate (or read) solutions for a task set, judge them, and record every verdict, resumably.

Two modes share one record format and one report (`kernelzero.eval.report`):
- `run_eval`: N samples per task and up to T refinement turns, through `kernelzero.eval.solve.solve_many` (the same
  loop as `kernelzero solve`, so turn t > 1 sees the judge's feedback on the same sample's turn t - 1);
- `run_solutions`: one existing solution file per task (`DIR/NAME.py` or `DIR/levelL/NAME.py`), judged as sample 0,
  turn 1; a task with no file gets a `format_error` record with guard `missing_solution` (counted as not solved).

Resume: `verdicts.jsonl` in the output directory is append-only, one `EvalRecord` per line keyed by
(task, sample, turn), flushed as each verdict arrives. A rerun reads it, drops a torn last line (an interrupted
write), and neither regenerates nor re-judges any key it holds; refinement chains are rebuilt from the recorded
completions. `eval_config.json` pins the settings a resumed run must share.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from kernelzero.eval.solve import JudgeFn, JudgeManyFn, Rollout, serial_judge, solve_many
from kernelzero.generation.base import Completion, Policy, SamplingConfig
from kernelzero.judge.verdict import Verdict
from kernelzero.tasks import Task

VERDICTS = "verdicts.jsonl"
CONFIG = "eval_config.json"
MISSING_GUARD = "missing_solution"


def task_id(task: Task) -> str:
    """The task's key in records: `levelL/NAME` (KernelBench reuses names across levels) or `NAME`."""
    return task.name if task.level is None else f"level{task.level}/{task.name}"


@dataclass
class EvalRecord:
    """One judged attempt: sample `sample` (0-based) of task `task` at turn `turn` (1-based)."""

    task: str
    level: int | None
    sample: int
    turn: int
    source: str | None  # the code the judge saw; None when there was none (unparsable completion, missing file)
    verdict: Verdict
    completion: str | None = None  # the raw completion (generation mode), kept to rebuild chains on resume
    finish_reason: str = ""

    @property
    def key(self) -> tuple[str, int, int]:
        return self.task, self.sample, self.turn

    def to_json(self) -> str:
        d = {
            "task": self.task,
            "level": self.level,
            "sample": self.sample,
            "turn": self.turn,
            "source": self.source,
            "completion": self.completion,
            "finish_reason": self.finish_reason,
            "verdict": self.verdict.to_dict(),
        }
        return json.dumps(d, sort_keys=True)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> EvalRecord:
        return cls(
            task=d["task"],
            level=d.get("level"),
            sample=int(d["sample"]),
            turn=int(d["turn"]),
            source=d.get("source"),
            verdict=Verdict.from_dict(d["verdict"]),
            completion=d.get("completion"),
            finish_reason=d.get("finish_reason") or "",
        )


def read_records(path: str | Path, repair: bool = False) -> list[EvalRecord]:
    """Records of a verdicts file; [] if it does not exist. The last line may be torn (no newline, or bad JSON):
    it is dropped, and with `repair` cut from the file so appends start on a clean line. A bad line anywhere else
    is corruption, not an interruption: ValueError naming the line. A repeated key keeps its first record."""
    p = Path(path)
    if not p.exists():
        return []
    data = p.read_bytes()
    lines = data.split(b"\n")
    complete, tail = lines[:-1], lines[-1]  # `tail` is what follows the last newline: b"" when the file is whole
    records: list[EvalRecord] = []
    good_bytes = 0
    for i, raw in enumerate(complete, start=1):
        try:
            if raw.strip():
                records.append(EvalRecord.from_dict(json.loads(raw)))
        except (ValueError, KeyError, TypeError) as e:
            if i == len(complete) and not tail:
                break  # the last line is torn but a newline made it out
            raise ValueError(f"{p}:{i}: not an eval record ({e}); the file is corrupt, not just interrupted") from e
        good_bytes += len(raw) + 1
    if repair and good_bytes != len(data):
        with open(p, "r+b") as f:
            f.truncate(good_bytes)
    seen: dict[tuple[str, int, int], EvalRecord] = {}
    for r in records:
        seen.setdefault(r.key, r)
    return list(seen.values())


class RecordLog:
    """The append-only verdicts file: `append` writes one line and flushes it to disk before returning."""

    def __init__(self, out_dir: str | Path):
        self.path = Path(out_dir) / VERDICTS
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.records = read_records(self.path, repair=True)
        self.keys = {r.key for r in self.records}
        self._f: IO[str] = open(self.path, "a", encoding="utf-8")

    def append(self, record: EvalRecord) -> None:
        if record.key in self.keys:
            raise ValueError(f"record {record.key} is already in {self.path}")
        self._f.write(record.to_json() + "\n")
        self._f.flush()
        os.fsync(self._f.fileno())
        self.keys.add(record.key)
        self.records.append(record)

    def close(self) -> None:
        self._f.close()

    def __enter__(self) -> RecordLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def pin_config(out_dir: str | Path, config: dict[str, Any]) -> None:
    """Write `eval_config.json`, or check that a resumed run uses the settings the directory was started with.

    The pin binds only once a verdict is recorded: a run that stopped before its first one (a bad --model, an
    interrupt during start-up) has nothing to keep consistent, so the next command's settings replace it."""
    p = Path(out_dir) / CONFIG
    p.parent.mkdir(parents=True, exist_ok=True)
    if p.exists() and read_records(Path(out_dir) / VERDICTS):
        old = json.loads(p.read_text(encoding="utf-8"))
        diff = {k: (old.get(k), v) for k, v in config.items() if old.get(k) != v}
        if diff:
            what = ", ".join(f"{k}: {a!r} there, {b!r} now" for k, (a, b) in sorted(diff.items()))
            raise ValueError(f"{out_dir} holds an eval with other settings ({what}); use a new --out to start afresh")
        return
    p.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def run_eval(
    tasks: Sequence[Task],
    policy: Policy,
    *,
    backend: str,
    judge_fn: JudgeFn,
    out_dir: str | Path,
    samples: int,
    turns: int = 1,
    sampling: SamplingConfig | None = None,
    principles: Sequence[str] | None = None,
    on_record: Callable[[EvalRecord], None] | None = None,
    judge_many: JudgeManyFn | None = None,
    brief: bool = False,
) -> list[EvalRecord]:
    """Generate and judge `samples` x `turns` attempts per task, resuming from `out_dir`; every record, in order.
    `brief`: the Coder's brief prompt (`roles.coder.PROMPTS`).

    With `judge_many` (a pool), each turn's answers of every pending task are judged in one batch (concurrently),
    each recorded as `judge_many`'s iterable gives its verdict (`JudgePool.imap`: as judged, in request order); else
    task by task, one `judge_fn` call at a time.
    """
    with RecordLog(out_dir) as log:
        by_task: dict[str, dict[tuple[int, int], Rollout]] = {}
        for r in log.records:
            rollout = Rollout(r.sample, r.turn, Completion(r.completion or "", r.finish_reason), r.source, r.verdict)
            by_task.setdefault(r.task, {})[(r.sample, r.turn)] = rollout
        pending: list[tuple[Task, dict[tuple[int, int], Rollout]]] = []
        for task in tasks:
            done = {k: v for k, v in by_task.get(task_id(task), {}).items() if k[0] < samples and k[1] <= turns}
            if len(done) < samples * turns:
                pending.append((task, done))
        # With a pool, every pending task in one `solve_many`: each turn is one batch over all tasks, in flight at
        # once. Without one, task by task, so nothing waits unrecorded for the other tasks' answers to be generated.
        groups = [pending] if judge_many is not None else [[p] for p in pending]
        for group in groups:
            group_tasks = [task for task, _ in group]

            def record(i: int, r: Rollout, group_tasks: list[Task] = group_tasks) -> None:
                task = group_tasks[i]
                rec = EvalRecord(task_id(task), task.level, r.sample, r.turn, r.code, r.verdict, r.completion.text,
                                 r.completion.finish_reason)  # fmt: skip
                log.append(rec)
                if on_record is not None:
                    on_record(rec)

            solve_many(
                group_tasks,
                policy,
                backend=backend,
                judge_many=judge_many or serial_judge(judge_fn),
                samples=samples,
                turns=turns,
                sampling=sampling,
                principles=principles,
                on_rollout=record,
                done=[done for _, done in group],
                brief=brief,
            )
        return _ordered(log.records, tasks)


def find_solution(task: Task, solutions_dir: str | Path) -> Path | None:
    """`DIR/levelL/NAME.py` (for a task of level L), else `DIR/NAME.py`; None when neither exists."""
    root = Path(solutions_dir)
    candidates = ([root / f"level{task.level}" / f"{task.name}.py"] if task.level is not None else []) + [
        root / f"{task.name}.py"
    ]
    return next((c for c in candidates if c.is_file()), None)


def run_solutions(
    tasks: Sequence[Task],
    solutions_dir: str | Path,
    *,
    backend: str,
    judge_many: JudgeManyFn,
    out_dir: str | Path,
    on_record: Callable[[EvalRecord], None] | None = None,
) -> list[EvalRecord]:
    """Judge one existing solution per task (sample 0, turn 1), resuming from `out_dir`; every record, in order."""
    with RecordLog(out_dir) as log:
        pending: list[tuple[Task, str]] = []
        for task in tasks:
            tid = task_id(task)
            if (tid, 0, 1) in log.keys:
                continue
            path = find_solution(task, solutions_dir)
            if path is None:
                v = Verdict.fail(
                    "format_error",
                    f"no solution file for {task.name} under {solutions_dir}",
                    guard=MISSING_GUARD,
                    backend=backend,
                    task=task.name,
                )
                log.append(EvalRecord(tid, task.level, 0, 1, None, v))
                continue
            pending.append((task, path.read_text(encoding="utf-8")))
        verdicts = judge_many([(t, src, backend) for t, src in pending])
        for (task, src), v in zip(pending, verdicts, strict=True):
            rec = EvalRecord(task_id(task), task.level, 0, 1, src, v)
            log.append(rec)
            if on_record is not None:
                on_record(rec)
        return _ordered(log.records, tasks)


def _ordered(records: Iterable[EvalRecord], tasks: Sequence[Task]) -> list[EvalRecord]:
    """This run's records (tasks of other runs in the same file are left out), in task, turn, sample order."""
    rank = {task_id(t): i for i, t in enumerate(tasks)}
    mine = [r for r in records if r.task in rank]
    return sorted(mine, key=lambda r: (rank[r.task], r.turn, r.sample))
