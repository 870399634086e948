"""Crash-safe run files: keyed JSONL (torn last line, unique keys, durable appends) and atomic JSON state."""

import json
import os
import subprocess
import sys
from pathlib import Path

from kernelzero.loop.runlog import KeyedLog, read_json, read_records, write_json_atomic

SRC = str(Path(__file__).parents[2] / "src")


def test_append_skips_keys_already_written_across_reopen(tmp_path):
    log = KeyedLog(tmp_path / "v.jsonl")
    assert log.append((0, "coder", 0, 0), {"x": 1})
    assert not log.append((0, "coder", 0, 0), {"x": 2})  # same key, same process
    assert log.append((0, "coder", 0, 1), {"x": 3})
    again = KeyedLog(tmp_path / "v.jsonl")  # a resumed process
    assert not again.append((0, "coder", 0, 1), {"x": 4})
    assert again.append((0, "coder", 1, 0), {"x": 5})
    assert [r["x"] for r in read_records(tmp_path / "v.jsonl")] == [1, 3, 5]
    assert [r["key"] for r in again.records()] == [[0, "coder", 0, 0], [0, "coder", 0, 1], [0, "coder", 1, 0]]


def test_torn_last_line_is_dropped_on_open_and_the_key_can_be_rewritten(tmp_path):
    path = tmp_path / "t.jsonl"
    log = KeyedLog(path)
    log.append((0, "tasks", 0, 0), {"name": "a"})
    whole = path.read_bytes()
    with path.open("ab") as f:  # a kill mid-write: half a line, no newline
        f.write(b'{"key": [0, "tasks", 0, 1], "name": "b", "sour')
    assert [r["name"] for r in read_records(path)] == ["a"]  # readers skip it without repairing
    reopened = KeyedLog(path)
    assert reopened.dropped_torn_line and path.read_bytes() == whole
    assert (0, "tasks", 0, 1) not in reopened
    assert reopened.append((0, "tasks", 0, 1), {"name": "b"})
    assert [r["name"] for r in read_records(path)] == ["a", "b"]


def test_terminated_but_unparsable_last_line_counts_as_torn(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text('{"key": [0, "coder", 0, 0]}\n{"key": [0, "cod\n')
    log = KeyedLog(path)
    assert log.dropped_torn_line and len(log) == 1
    assert path.read_text() == '{"key": [0, "coder", 0, 0]}\n'


def test_atomic_write_replaces_whole_file(tmp_path):
    p = tmp_path / "state.json"
    write_json_atomic(p, {"round": 0})
    write_json_atomic(p, {"round": 1, "completed": ["r0.proposer"]})
    assert read_json(p) == {"round": 1, "completed": ["r0.proposer"]}
    assert [x.name for x in tmp_path.iterdir()] == ["state.json"]  # no temp file left behind


def test_fault_during_atomic_write_leaves_the_old_file(tmp_path):
    p = tmp_path / "state.json"
    write_json_atomic(p, {"round": 0})
    code = f"from kernelzero.loop.runlog import write_json_atomic; write_json_atomic({str(p)!r}, {{'round': 1}})"
    env = {**os.environ, "PYTHONPATH": SRC, "KZ_FAULT_AT": "atomic:state.json"}
    proc = subprocess.run([sys.executable, "-c", code], env=env)
    assert proc.returncode == 137
    assert json.loads(p.read_text()) == {"round": 0}
