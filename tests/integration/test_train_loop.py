"""`kernelzero train` end to end on CPU: the embedded tiny round, its run directory and report, then resume after
kills at several points (KZ_FAULT_AT) compared record by record with an uninterrupted run of the same seed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

SRC = str(Path(__file__).parents[2] / "src")


def train(args: list[str], cache: Path, fault: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": SRC, "KERNELZERO_CACHE": str(cache), "OMP_NUM_THREADS": "1",
           "TOKENIZERS_PARALLELISM": "false", "CUDA_VISIBLE_DEVICES": ""}  # fmt: skip
    env.pop("KZ_FAULT_AT", None)
    if fault:
        env["KZ_FAULT_AT"] = fault
    return subprocess.run([sys.executable, "-m", "kernelzero.cli", "train", *args], capture_output=True, text=True,
                          env=env, timeout=900)  # fmt: skip


def keyed(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def keys(records: list[dict]) -> list[tuple]:
    return [tuple(r["key"]) for r in records]


@pytest.fixture(scope="module")
def clean_run(tmp_path_factory, tiny_model_dir):
    out = tmp_path_factory.mktemp("train") / "run"
    proc = train(["--out", str(out)], tiny_model_dir.parent)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return out, proc


def test_tiny_round_writes_the_run_directory_and_report(clean_run):
    out, proc = clean_run
    assert "smoke-scale run" in proc.stdout and "--preset paper" in proc.stdout
    assert "seed tasks shipped in the package" in proc.stderr  # the random Proposer wrote no valid task
    state = json.loads((out / "state.json").read_text())
    assert state["finished"] and state["round"] == 1
    assert state["completed"] == ["r0.proposer", "r0.tasks", "r0.coder", "r0.frontier"]
    config = json.loads((out / "config.json").read_text())
    assert config["preset"] == "tiny" and config["coder"]["max_steps"] == 2
    tasks, verdicts = keyed(out / "tasks.jsonl"), keyed(out / "verdicts.jsonl")
    # Proposer phase: 1 step x 4 generations; task batch: 4 API sets
    assert Counter(r["phase"] for r in tasks) == {"proposer": 4, "tasks": 4}
    # Coder phase: 2 steps x 8 rollouts (2 seed tasks x 4), every one with its source and verdict
    assert Counter((r["phase"], r["step"]) for r in verdicts) == {("coder", 0): 8, ("coder", 1): 8}
    assert {r["task"] for r in verdicts} == {"seed-add_scale", "seed-gelu", "seed-relu", "seed-row_sum"}
    assert all(r["task_source"].count("class Model") == 1 and "status" in r["verdict"] for r in verdicts)
    assert len(set(keys(tasks))) == len(tasks) and len(set(keys(verdicts))) == len(verdicts)
    for role in ("proposer", "coder"):
        assert (out / "checkpoints" / "round-0" / role / "final" / "model.safetensors").exists()
    assert state["models"]["coder"].endswith("round-0/coder/final")
    # the pool holds the seed tasks with the round's record: every one attempted 4 times
    pool = {e["task"]["name"]: e for e in state["pool"]["entries"]}
    assert sorted(e["attempts"] for e in pool.values()) == [4, 4, 4, 4]
    metrics = keyed(out / "metrics.jsonl")
    assert [m["phase"] for m in metrics] == ["proposer", "tasks", "coder", "coder", "round"]
    assert list((out / "tensorboard").glob("events.*"))
    report = (out / "report.md").read_text()
    for png in ("rewards", "pass_rate_rounds", "gate_open", "task_validity", "frontier", "hardest_apis"):
        assert f"plots/{png}.png" in report and (out / "plots" / f"{png}.png").stat().st_size > 1000


def test_report_and_export_commands(clean_run, tmp_path):
    out, _ = clean_run
    (out / "report.md").unlink()
    env = {**os.environ, "PYTHONPATH": SRC}
    rep = subprocess.run([sys.executable, "-m", "kernelzero.cli", "report", str(out)], capture_output=True, text=True,
                         env=env)  # fmt: skip
    assert rep.returncode == 0 and (out / "report.md").exists(), rep.stderr
    exp = subprocess.run([sys.executable, "-m", "kernelzero.cli", "export", str(out), "--out", str(tmp_path / "c")],
                         capture_output=True, text=True, env=env)  # fmt: skip
    assert exp.returncode == 0, exp.stderr
    assert exp.stdout.startswith("0 verified")  # the random Coder solves nothing
    assert (tmp_path / "c" / "corpus.jsonl").read_text() == ""


# Kill points in the order the run reaches them; each run resumes the last one's directory.
FAULTS = [
    "proposer:step0",  # inside the Proposer phase, before its first checkpoint
    "atomic:state.json",  # the loop's own checkpoint: state.json's temp file written, not yet renamed
    "tasks:written",  # right after the first task record of the batch
    "coder:checkpoint",  # inside TRL's checkpoint-1 write (weights saved, trainer_state.json not)
    "coder:step1",  # inside the Coder phase, after checkpoint-1, step 1's verdicts written
]


@pytest.mark.slow  # six process starts: about 4 min on the loaded 2-core box
def test_resume_after_kills_loses_and_duplicates_nothing(clean_run, tmp_path, tiny_model_dir):
    ref, _ = clean_run
    out = tmp_path / "run"
    first = train(["--out", str(out), "--no-report"], tiny_model_dir.parent, FAULTS[0])
    assert first.returncode == 137, first.stderr[-3000:]
    logs = {}
    for fault in FAULTS[1:]:
        proc = train(["--resume", str(out), "--no-report"], tiny_model_dir.parent, fault)
        assert proc.returncode == 137, f"{fault}: " + proc.stderr[-3000:]
        logs[fault] = proc.stderr
    # the run killed inside checkpoint-1 left it torn; the next one removed it and redid step 0
    assert "removed torn checkpoint(s) checkpoint-1 of the coder phase" in logs["coder:step1"]
    coder_dir = out / "checkpoints/round-0/coder"
    assert (coder_dir / "checkpoint-1/trainer_state.json").exists() and not (coder_dir / "checkpoint-2").exists()
    last = train(["--resume", str(out)], tiny_model_dir.parent)
    assert last.returncode == 0, last.stderr[-3000:]
    assert "resuming at round 0" in last.stderr and "resumed from checkpoint-1" in last.stderr
    for name in ("tasks.jsonl", "verdicts.jsonl"):
        got, want = keyed(out / name), keyed(ref / name)
        assert len(set(keys(got))) == len(got), f"{name}: duplicate keys"
        assert sorted(keys(got)) == sorted(keys(want)), name
        # CPU is deterministic and every draw is seeded: the resumed run wrote the same records
        field = "source" if name == "tasks.jsonl" else "completion"
        assert {tuple(r["key"]): r[field] for r in got} == {tuple(r["key"]): r[field] for r in want}, name
    state = json.loads((out / "state.json").read_text())
    assert state["finished"] and state["completed"] == ["r0.proposer", "r0.tasks", "r0.coder", "r0.frontier"]
    assert (out / "report.md").exists()


@pytest.mark.slow  # two ranks on CPU (gloo): about 1.5 min
def test_two_processes_write_each_record_once(tmp_path, tiny_model_dir):
    """torchrun with 2 ranks: both train in the phases, rank 0 alone writes; TRL gathers both ranks' rollouts."""
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": SRC, "KERNELZERO_CACHE": str(tiny_model_dir.parent), "OMP_NUM_THREADS": "1",
           "CUDA_VISIBLE_DEVICES": ""}  # fmt: skip
    proc = subprocess.run(["torchrun", "--nproc_per_node", "2", "-m", "kernelzero.cli", "train", "--out", str(out)],
                          capture_output=True, text=True, env=env, timeout=900, cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.count("run directory:") == 1  # rank 0 talks
    tasks, verdicts = keyed(out / "tasks.jsonl"), keyed(out / "verdicts.jsonl")
    assert Counter(r["phase"] for r in tasks) == {"proposer": 8, "tasks": 4}  # 4 generations x 2 ranks
    assert Counter(r["step"] for r in verdicts) == {0: 16, 1: 16}  # 8 rollouts x 2 ranks per step
    assert len(set(keys(tasks))) == len(tasks) and len(set(keys(verdicts))) == len(verdicts)
    assert json.loads((out / "state.json").read_text())["finished"]
