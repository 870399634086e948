"""The verified corpus: every correct (task, solution, verdict) of a run, as JSONL and a `datasets` dataset for SFT.

A row is one judged solution the judge passed (status `ok`), from any phase (Coder rollouts, the frozen Coder's l(m)
samples): `task_name`, `task_source`, `apis`, `backend`, `solution` (full source defining ModelNew), `speedup`
(None when untimed), `verdict` (JSON), and where it came from (`round`, `phase`, `step`, `index`). Duplicate
(task, solution) pairs are kept once. `load_pairs` turns an export back into the `SolutionPair`s `run_sft` takes.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from kernelzero.loop.records import read_verdict_records
from kernelzero.tasks import Task


def corpus_rows(run_dir: str | os.PathLike) -> list[dict]:
    rows, seen = [], set()
    for v in read_verdict_records(run_dir):
        if not v.verdict.correct or not v.solution:
            continue
        ident = (v.task, v.solution)
        if ident in seen:
            continue
        seen.add(ident)
        rows.append({
            "task_name": v.task, "task_source": v.task_source, "apis": list(v.apis), "backend": v.backend,
            "solution": v.solution, "speedup": v.verdict.speedup_eager, "verdict": v.verdict.to_json(),
            "round": v.round, "phase": v.phase, "step": v.step, "index": v.index,
        })  # fmt: skip
    return rows


def export_corpus(run_dir: str | os.PathLike, out: str | os.PathLike) -> int:
    """Write out/corpus.jsonl and out/dataset (datasets.save_to_disk); returns the number of rows."""
    return write_corpus_rows(corpus_rows(run_dir), out)


def write_corpus_rows(rows: list[dict], out: str | os.PathLike) -> int:
    """Write rows of the corpus schema (a run's, or an eval folder's: `eval.export`) as out/corpus.jsonl and
    out/dataset; returns the number of rows."""
    from datasets import Dataset, Features, Sequence, Value

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    with (out / "corpus.jsonl").open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    features = Features({"task_name": Value("string"), "task_source": Value("string"),
                         "apis": Sequence(Value("string")), "backend": Value("string"), "solution": Value("string"),
                         "speedup": Value("float64"), "verdict": Value("string"), "round": Value("int64"),
                         "phase": Value("string"), "step": Value("int64"), "index": Value("int64")})  # fmt: skip
    columns = {name: [row[name] for row in rows] for name in features}  # from_dict: an empty corpus keeps its schema
    Dataset.from_dict(columns, features=features).save_to_disk(str(out / "dataset"))
    return len(rows)


def load_pairs(export_dir: str | os.PathLike):
    """The exported rows as `SolutionPair`s (task, solution, backend), the input of `trainers.sft.run_sft`."""
    from kernelzero.trainers.sft import SolutionPair

    pairs = []
    for line in (Path(export_dir) / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        task = Task(name=row["task_name"], source=row["task_source"], origin="proposed", apis=tuple(row["apis"]))
        pairs.append(SolutionPair(task, row["solution"], row["backend"]))
    return pairs
