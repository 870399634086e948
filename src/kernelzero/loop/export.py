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

from kernelzero.loop.runlog import read_records
from kernelzero.tasks import Task


def corpus_rows(run_dir: str | os.PathLike) -> list[dict]:
    rows, seen = [], set()
    for rec in read_records(Path(run_dir) / "verdicts.jsonl"):
        if not rec.get("correct") or not rec.get("solution"):
            continue
        ident = (rec["task"], rec["solution"])
        if ident in seen:
            continue
        seen.add(ident)
        r, phase, step, index = rec["key"]
        rows.append({
            "task_name": rec["task"], "task_source": rec["task_source"], "apis": list(rec.get("apis") or []),
            "backend": rec["backend"], "solution": rec["solution"], "speedup": rec["verdict"].get("speedup_eager"),
            "verdict": json.dumps(rec["verdict"], sort_keys=True), "round": r, "phase": phase, "step": step,
            "index": index,
        })  # fmt: skip
    return rows


def export_corpus(run_dir: str | os.PathLike, out: str | os.PathLike) -> int:
    """Write out/corpus.jsonl and out/dataset (datasets.save_to_disk); returns the number of rows."""
    from datasets import Dataset, Features, Sequence, Value

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rows = corpus_rows(run_dir)
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
