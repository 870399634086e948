"""The study's cold-start corpus: writer solutions of training-pair tasks, kept only when the judge says `ok`, stored
in the `kernelzero export` format; and the leak check that a corpus holds no test pair.

The corpus is what the from-scratch Coder is fine-tuned on before RL, so two things must hold. Every pair is
correct by the real judge (on the GPU for the study; under the Triton interpreter in CI), not by the writer's word:
`build_corpus` keeps a solution only when its verdict's status is `ok`. And no test pair leaks into it, or test
pass@1 measures memory: `build_corpus` refuses a test task before judging anything, and `check_corpus` re-reads a
written corpus and looks for test pairs in each row's recorded API set *and* in the APIs its task source really
uses (a row that misrecords its set is still caught).

Rows are the schema of `loop.export` (`task_name`, `task_source`, `apis`, `backend`, `solution`, `speedup`,
`verdict`, `round`, `phase`, `step`, `index`), written by its `write_corpus_rows`, so `kernelzero sft --pairs` and
`loop.export.load_pairs` read a study corpus like any run's export. `phase` is `study`, `step` the task's index.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kernelzero.apis import extract_apis, vocab_apis
from kernelzero.judge.verdict import Verdict
from kernelzero.loop.export import write_corpus_rows
from kernelzero.study.family import TEST_PAIRS, FamilyTask, api_pairs, is_test_set
from kernelzero.study.writer import write_solution
from kernelzero.tasks import Task

PHASE = "study"
"""The `phase` of every corpus row: written by the study's writer, not by a policy of a run."""
BACKEND = "triton"

JudgeMany = Callable[[Sequence[tuple[Task, str, str]]], Iterable[Verdict]]
"""(task, solution source, backend) requests -> their verdicts, in order (`JudgePool.judge_many`)."""


@dataclass
class CorpusSummary:
    """One `build_corpus`: how many tasks were judged, how many pairs were kept, the verdicts' statuses."""

    path: Path
    judged: int
    kept: int
    statuses: Counter = field(default_factory=Counter)
    failures: list[tuple[str, str, str]] = field(default_factory=list)
    """(task name, status, feedback) of every solution the judge did not pass: each is a writer bug to look at."""


@dataclass(frozen=True)
class Leak:
    """A corpus row whose API set holds test pairs."""

    line: int
    task_name: str
    pairs: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class CorpusCheck:
    """The leak check's record of one corpus file."""

    path: Path
    rows: int
    leaks: tuple[Leak, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.leaks


def solution_rows(tasks: Sequence[FamilyTask], judge_many: JudgeMany) -> tuple[list[dict], list[Verdict]]:
    """Write and judge a solution for each training task; the corpus rows of those judged `ok`, and every verdict.

    Raises ValueError, before judging anything, when a task holds a test pair: the corpus is training data."""
    leaked = [t.name for t in tasks if is_test_set(t.apis)]
    if leaked:
        raise ValueError(f"test-pair tasks cannot enter the cold-start corpus: {', '.join(leaked[:5])}")
    sources = [write_solution(t) for t in tasks]
    verdicts = list(judge_many([(t.task(), s, BACKEND) for t, s in zip(tasks, sources, strict=True)]))
    rows = []
    for i, (t, source, v) in enumerate(zip(tasks, sources, verdicts, strict=True)):
        if v.status == "ok":
            rows.append({
                "task_name": t.name, "task_source": t.source, "apis": list(t.apis), "backend": BACKEND,
                "solution": source, "speedup": v.speedup_eager, "verdict": v.to_json(), "round": 0, "phase": PHASE,
                "step": i, "index": 0,
            })  # fmt: skip
    return rows, verdicts


def build_corpus(tasks: Sequence[FamilyTask], out: str | os.PathLike, judge_many: JudgeMany) -> CorpusSummary:
    """Judge the writer's solutions of `tasks` (training tasks), write the `ok` ones as `out/corpus.jsonl` and
    `out/dataset` (`loop.export.write_corpus_rows`), and check the written file for leaks (ValueError if any)."""
    rows, verdicts = solution_rows(tasks, judge_many)
    write_corpus_rows(rows, out)
    check = check_corpus(out)
    if not check.ok:  # cannot happen after solution_rows' refusal; checked on the file as written all the same
        raise ValueError(f"{check.path}: test pairs in {len(check.leaks)} rows, first {check.leaks[0]}")
    failures = [(t.name, v.status, v.feedback) for t, v in zip(tasks, verdicts, strict=True) if v.status != "ok"]
    return CorpusSummary(Path(out) / "corpus.jsonl", len(tasks), len(rows), Counter(v.status for v in verdicts),
                         failures)  # fmt: skip


def check_corpus(path: str | os.PathLike) -> CorpusCheck:
    """Re-read a corpus (an export folder or its `corpus.jsonl`) and find every row holding a test pair, in its
    recorded `apis` or among the vocabulary APIs its `task_source` uses."""
    path = Path(path)
    if path.is_dir():
        path = path / "corpus.jsonl"
    leaks, n = [], 0
    for line_no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        n += 1
        row = json.loads(line)
        apis = set(row["apis"]) | set(vocab_apis(extract_apis(row["task_source"])))
        hit = api_pairs(apis) & TEST_PAIRS
        if hit:
            leaks.append(Leak(line_no, row["task_name"], tuple(sorted(tuple(sorted(p)) for p in hit))))
    return CorpusCheck(path, n, tuple(leaks))
