"""The task pool: valid tasks, where they came from, the Coder's record on each, and the hard pool.

A task enters once (by name) with its API set and origin (proposed, kernelbench, user, recycled). Every Coder round
`record`s k judged samples per task. A task attempted at least once and never solved is *hard*: `draw_hard` brings
such tasks back in later rounds (least recently shown first), tagged `recycled`, so the Coder meets them again as it
improves. `state_dict`/`load_state_dict` round-trip everything; `save`/`load` keep it as `pool.jsonl` in the run
directory, written atomically (temp file + rename), so a crash never leaves half a pool.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from kernelzero.curriculum.similarity import SimilarityIndex
from kernelzero.tasks import ORIGINS, Task, task_from_record, task_to_record

POOL_FILE = "pool.jsonl"


@dataclass
class PoolEntry:
    """One task and the Coder's record on it (over all rounds)."""

    task: Task
    added_round: int = 0
    attempts: int = 0  # judged Coder samples
    successes: int = 0  # correct ones
    history: list[tuple[int, int, int]] = field(default_factory=list)  # (round, successes, k) per record
    last_drawn: int | None = None  # round this task was last handed out from the hard pool

    @property
    def name(self) -> str:
        return self.task.name

    @property
    def success_rate(self) -> float | None:
        """Mean correctness over every judged sample, None before any."""
        return self.successes / self.attempts if self.attempts else None

    @property
    def hard(self) -> bool:
        """Attempted and never solved."""
        return self.attempts > 0 and self.successes == 0

    def to_record(self) -> dict:
        return {"task": task_to_record(self.task), "added_round": self.added_round, "attempts": self.attempts,
                "successes": self.successes, "history": [list(h) for h in self.history],
                "last_drawn": self.last_drawn}  # fmt: skip

    @classmethod
    def from_record(cls, rec: dict, where: str = "pool", line: int = 0) -> PoolEntry:
        task = task_from_record(rec["task"], where, line)
        return cls(task=task, added_round=int(rec["added_round"]), attempts=int(rec["attempts"]),
                   successes=int(rec["successes"]), history=[tuple(h) for h in rec["history"]],
                   last_drawn=rec.get("last_drawn"))  # fmt: skip


class TaskPool:
    """Tasks by name, in insertion order, with a similarity index over their sources for duplicate checks."""

    def __init__(self) -> None:
        self.entries: dict[str, PoolEntry] = {}
        self.round = 0
        self.index = SimilarityIndex()

    def __len__(self) -> int:
        return len(self.entries)

    def __contains__(self, name: str) -> bool:
        return name in self.entries

    def __getitem__(self, name: str) -> PoolEntry:
        return self.entries[name]

    def add(self, task: Task) -> PoolEntry:
        """Add a (validated) task; its origin must be one of tasks.ORIGINS and its name new to the pool."""
        if task.origin not in ORIGINS:
            raise ValueError(f"task {task.name!r}: origin {task.origin!r} is not one of {', '.join(ORIGINS)}")
        if task.name in self.entries:
            raise ValueError(f"task {task.name!r} is already in the pool")
        entry = PoolEntry(task=task, added_round=self.round)
        self.entries[task.name] = entry
        self.index.add(task.name, task.source)
        return entry

    def add_many(self, tasks: Iterable[Task]) -> list[PoolEntry]:
        return [self.add(t) for t in tasks]

    def record(self, name: str, successes: int, k: int) -> PoolEntry:
        """Record k judged Coder samples on a task, `successes` of them correct, in the current round."""
        if not 0 <= successes <= k or k < 1:
            raise ValueError(f"record({name!r}): need 0 <= successes <= k and k >= 1, got {successes}/{k}")
        e = self.entries[name]
        e.attempts += k
        e.successes += successes
        e.history.append((self.round, successes, k))
        return e

    def next_round(self) -> int:
        self.round += 1
        return self.round

    def tasks(self, origin: str | None = None) -> list[Task]:
        return [e.task for e in self.entries.values() if origin is None or e.task.origin == origin]

    def hard(self) -> list[PoolEntry]:
        """Tasks the Coder attempted and never solved, in insertion order."""
        return [e for e in self.entries.values() if e.hard]

    def draw_hard(self, n: int, *, min_gap: int = 1) -> list[Task]:
        """Up to n hard tasks for this round, least recently drawn first (never-drawn oldest first); a task comes
        back at most once every `min_gap` rounds. Returned as origin `recycled`; the pool keeps the original."""
        ready = [e for e in self.hard() if e.last_drawn is None or self.round - e.last_drawn >= min_gap]
        ready.sort(key=lambda e: (-1 if e.last_drawn is None else e.last_drawn, e.added_round))
        out = []
        for e in ready[:n]:
            e.last_drawn = self.round
            out.append(replace(e.task, origin="recycled"))
        return out

    def records(self) -> list[tuple[tuple[str, ...], int, int]]:
        """(apis, successes, attempts) per task: the input of `frontier.api_rates` / `pair_rates`."""
        return [(e.task.apis, e.successes, e.attempts) for e in self.entries.values()]

    def api_sets(self) -> list[tuple[str, ...]]:
        """The API sets in the pool (for the sampler's `avoid`)."""
        return [e.task.apis for e in self.entries.values() if e.task.apis]

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict:
        return {"round": self.round, "entries": [e.to_record() for e in self.entries.values()]}

    def load_state_dict(self, state: dict) -> None:
        self.entries, self.index, self.round = {}, SimilarityIndex(), int(state["round"])
        for i, rec in enumerate(state["entries"], start=1):
            e = PoolEntry.from_record(rec, "pool state", i)
            self.entries[e.name] = e
            self.index.add(e.name, e.task.source)

    def save(self, run_dir: str | os.PathLike) -> Path:
        """Write `run_dir/pool.jsonl`: a header line {"round": r}, then one entry per line. Atomic."""
        path = Path(run_dir) / POOL_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = [json.dumps({"round": self.round})] + [json.dumps(e.to_record()) for e in self.entries.values()]
        atomic_write(path, "\n".join(lines) + "\n")
        return path

    @classmethod
    def load(cls, run_dir: str | os.PathLike) -> TaskPool:
        """The pool saved in `run_dir` (an empty pool when there is none yet)."""
        pool = cls()
        path = Path(run_dir) / POOL_FILE
        if not path.exists():
            return pool
        lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
        pool.load_state_dict({"round": lines[0]["round"], "entries": lines[1:]})
        return pool


def atomic_write(path: Path, text: str) -> None:
    """Write via a temp file in the same directory and rename: readers see the old or the new file, never half."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with tmp.open("w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def entries_summary(entries: Sequence[PoolEntry]) -> dict:
    """Counts by origin and hardness, for logs."""
    out: dict = {"tasks": len(entries), "hard": sum(e.hard for e in entries)}
    for origin in ORIGINS:
        out[f"origin/{origin}"] = sum(e.task.origin == origin for e in entries)
    return out


__all__ = ["POOL_FILE", "PoolEntry", "TaskPool", "atomic_write", "entries_summary"]
