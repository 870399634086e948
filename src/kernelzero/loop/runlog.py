"""Crash-safe run files: append-only keyed JSONL logs, atomically replaced JSON state, and test-only fault points.

Contract (what `kernelzero train --resume` relies on):
- `KeyedLog` appends one JSON object per line, each with a unique `key` [round, phase, step, index]; every append is
  flushed and fsync'd before the call returns. Opening a log drops a torn last line (a kill mid-write leaves at most
  one partial line, always the last) and loads the keys already written; `append` skips a record whose key is there,
  so a unit of work that is re-run after a crash writes each record exactly once.
- `write_json_atomic` writes a temp file in the same directory, fsyncs it and renames it over the target: a reader
  sees the old or the new file, never half of one.
- `fault(point)`: when the environment variable KZ_FAULT_AT names `point`, the process dies on the spot with
  os._exit(137), as `kill -9` would (no cleanup, no flush of Python buffers). Used only by the resume tests.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

FAULT_ENV = "KZ_FAULT_AT"

Key = tuple[int, str, int, int]  # (round, phase, step, index)


def fault(point: str) -> None:
    """Die here (exit status 137, no cleanup) if KZ_FAULT_AT == point. A no-op otherwise."""
    if os.environ.get(FAULT_ENV) == point:
        os._exit(137)


def write_json_atomic(path: str | os.PathLike, data: Any) -> Path:
    """JSON to `path` via temp file + fsync + rename (+ fsync of the directory, so the rename itself survives)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
    with tmp.open("w", encoding="utf-8") as f:
        json.dump(data, f, indent=1, sort_keys=True, default=str)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    fault(f"atomic:{p.name}")  # the temp file is complete, the rename has not happened
    os.replace(tmp, p)
    _fsync_dir(p.parent)
    return p


def read_json(path: str | os.PathLike, default: Any = None) -> Any:
    p = Path(path)
    return json.loads(p.read_text(encoding="utf-8")) if p.exists() else default


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # not every platform opens directories
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _key(record: dict) -> Key:
    r, phase, step, index = record["key"]
    return int(r), str(phase), int(step), int(index)


class KeyedLog:
    """An append-only JSONL file of records with unique keys; see the module docstring for the guarantees."""

    def __init__(self, path: str | os.PathLike, *, repair: bool = True):
        """repair=False (a process that only reads, e.g. a non-zero rank): a torn last line is skipped, not cut."""
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.keys: set[Key] = set()
        self.dropped_torn_line = self._recover(repair)

    def _recover(self, repair: bool) -> bool:
        """Load the keys; truncate a torn (unterminated or unparsable) last line. Returns whether one was dropped."""
        if not self.path.exists():
            return False
        data = self.path.read_bytes()
        good_end = 0
        for length, record in _whole_records(data.splitlines(keepends=True)):
            try:
                self.keys.add(_key(record))
            except (ValueError, KeyError, TypeError):
                break  # only the last line can be torn: every earlier one was fsync'd whole
            good_end += length
        torn = good_end != len(data)
        if torn and repair:
            _truncate(self.path, good_end)
        return torn

    def __contains__(self, key: Key) -> bool:
        return key in self.keys

    def __len__(self) -> int:
        return len(self.keys)

    def append(self, key: Key, record: dict) -> bool:
        """Append `record` under `key` (durably) unless that key is already written; True when written."""
        key = (int(key[0]), str(key[1]), int(key[2]), int(key[3]))
        if key in self.keys:
            return False
        line = json.dumps({"key": list(key), **record}, ensure_ascii=False, default=str) + "\n"
        with self.path.open("a", encoding="utf-8") as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())
        self.keys.add(key)
        return True

    def records(self) -> Iterator[dict]:
        return read_records(self.path)


def cut_torn_tail(path: str | os.PathLike) -> bool:
    """Truncate an append-only JSONL file after its last whole record: a kill mid-append leaves a torn last line,
    and the next append would run on from it into one unreadable line. True when something was cut."""
    p = Path(path)
    if not p.exists():
        return False
    data = p.read_bytes()
    good_end = sum(length for length, _ in _whole_records(data.splitlines(keepends=True)))
    if good_end == len(data):
        return False
    _truncate(p, good_end)
    return True


def read_records(path: str | os.PathLike) -> Iterator[dict]:
    """Every whole record of a keyed log (a torn last line is skipped, not repaired: readers never write)."""
    p = Path(path)
    if not p.exists():
        return
    with p.open("rb") as f:
        for _, record in _whole_records(f):
            yield record


def _whole_records(lines: Iterable[bytes]) -> Iterator[tuple[int, Any]]:
    """(bytes, record) of each line while the lines are whole JSON records: stops at the first torn one (no newline
    at its end, or not JSON)."""
    for line in lines:
        if not line.endswith(b"\n"):
            return
        try:
            record = json.loads(line)
        except ValueError:
            return
        yield len(line), record


def _truncate(path: Path, size: int) -> None:
    with path.open("r+b") as f:
        f.truncate(size)
        f.flush()
        os.fsync(f.fileno())


__all__ = ["FAULT_ENV", "Key", "KeyedLog", "cut_torn_tail", "fault", "read_json", "read_records", "write_json_atomic"]
