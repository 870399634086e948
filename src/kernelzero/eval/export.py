"""The verified corpus of an eval folder: its correct attempts as rows of the training run's corpus schema.

`kernelzero export` takes a training run or an eval folder alike (the README calls both run directories). An eval
record holds the task's id and the judged code but not the task's source, so the tasks are read again from where
the eval took them (its pinned `tasks`); a row's `phase` is `eval`, `step` the turn and `index` the sample, `round`
0. Rows are written by `loop.export.write_corpus_rows`, so `kernelzero sft --pairs` reads either export.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from kernelzero.eval.evaluate import CONFIG, VERDICTS, read_records, task_id
from kernelzero.tasks import Task


def eval_tasks_spec(eval_dir: str | Path) -> str:
    """The `--tasks` the eval ran on (a path, or kernelbench:LEVEL)."""
    return json.loads((Path(eval_dir) / CONFIG).read_text(encoding="utf-8"))["tasks"]


def eval_corpus_rows(eval_dir: str | Path, tasks: Sequence[Task]) -> list[dict]:
    """One row per distinct correct (task, code) of the eval; KeyError names a recorded task missing from `tasks`."""
    by_id = {task_id(t): t for t in tasks}
    rows, seen = [], set()
    for r in read_records(Path(eval_dir) / VERDICTS):
        if not r.verdict.correct or not r.source or (r.task, r.source) in seen:
            continue
        seen.add((r.task, r.source))
        if r.task not in by_id:
            raise KeyError(f"task {r.task} of {eval_dir} is no longer among its tasks ({eval_tasks_spec(eval_dir)})")
        task = by_id[r.task]
        rows.append({
            "task_name": task.name, "task_source": task.source, "apis": list(task.apis), "backend": r.verdict.backend,
            "solution": r.source, "speedup": r.verdict.speedup_eager, "verdict": r.verdict.to_json(), "round": 0,
            "phase": "eval", "step": r.turn, "index": r.sample,
        })  # fmt: skip
    return rows
