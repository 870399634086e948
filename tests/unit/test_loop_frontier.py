"""The frontier unit takes the round's Coder verdicts from the Coder unit that just wrote them, and reads them back from
verdicts.jsonl only when that unit ran in an earlier process (resume): both give the pool the same record. Beside it,
what the Coder unit and a resume take from the run's config: its prompt style, and an older config.json."""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch

import kernelzero.loop.coevolve as coevolve
import kernelzero.trainers.coder as coder_trainer
from kernelzero.curriculum.pool import TaskPool
from kernelzero.loop.config import RunConfig
from kernelzero.roles.coder import Judged
from kernelzero.tasks import Task, task_to_record
from kernelzero.trainers.coder import CoderRewardRecord
from kernelzero.trainers.common import PhaseResult
from support import fail, ok

SOURCE = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x * 2


def get_inputs():
    return [torch.randn(4)]


def get_init_inputs():
    return []
"""
TASK = Task(name="t", source=SOURCE, origin="user", apis=("torch.mul",))
# 7 correct, 2 wrong, 1 infra failure (not a sample): the pool must record 7 of 9
VERDICTS = [ok(1.5)] * 7 + [fail("incorrect")] * 2 + [fail("infra_error")]


def fake_phase(tmp_path):
    def run_coder_phase(cfg, tasks, judge_fn, *, on_rewards=None, **_):
        judged = [Judged(f"c{i}", f"code {i}", v) for i, v in enumerate(VERDICTS)]
        raw = torch.tensor([[1.0, 1.5]] * 7 + [[0.0, 0.0]] * 2 + [[float("nan")] * 2])
        on_rewards(CoderRewardRecord(0, 10, raw, raw, torch.tensor([True]), judged, ["t"] * 10, {"coder/x": 1.0}))
        return PhaseResult(tmp_path, tmp_path / "final", 1, None, [])

    return run_coder_phase


def test_frontier_uses_the_coder_units_records_and_reads_the_file_only_on_resume(tmp_path, monkeypatch):
    monkeypatch.setattr(coder_trainer, "run_coder_phase", fake_phase(tmp_path))
    pool = TaskPool()
    pool.add(TASK)
    loop = coevolve.CoEvolution(RunConfig(), tmp_path / "run")
    loop.state.pool = pool.state_dict()
    loop.state.rounds["0"] = {"coder_tasks": [task_to_record(TASK)]}
    loop._unit_coder(0)

    resumed = coevolve.CoEvolution.resume(tmp_path / "run")  # a new process: the Coder unit is committed, on disk
    resumed._unit_frontier(0)
    from_disk = resumed.pool()["t"]

    def no_reading(*_a, **_kw):
        raise AssertionError("the frontier re-read verdicts.jsonl that its own round just wrote")

    monkeypatch.setattr(coevolve, "read_verdict_records", no_reading)
    loop._unit_frontier(0)
    in_memory = loop.pool()["t"]
    assert (in_memory.successes, in_memory.attempts) == (from_disk.successes, from_disk.attempts) == (7, 9)
    with pytest.raises(AssertionError, match="re-read"):
        coevolve.CoEvolution.resume(tmp_path / "run")._unit_frontier(0)  # and a resumed frontier does read it


@pytest.mark.parametrize("prompts", ["full", "brief"])
def test_the_coder_phase_trains_on_the_runs_prompt_style(tmp_path, monkeypatch, prompts):
    seen = {}

    def run_coder_phase(cfg, tasks, judge_fn, *, prompt_fn, **_):
        seen["chat"] = prompt_fn(tasks[0], "triton")
        return PhaseResult(tmp_path, tmp_path / "final", 1, None, [])

    monkeypatch.setattr(coder_trainer, "run_coder_phase", run_coder_phase)
    loop = coevolve.CoEvolution(RunConfig(prompts=prompts), tmp_path / "run")
    loop.state.rounds["0"] = {"coder_tasks": [task_to_record(TASK)]}
    loop._unit_coder(0)
    assert ("## Rules" in seen["chat"][1]["content"]) == (prompts == "full")


def test_a_run_written_before_a_config_field_existed_still_resumes(tmp_path):
    """config.json of an older run lacks `prompts`: read back, the field takes its default and the run resumes;
    a value that really differs is refused."""
    run = tmp_path / "run"
    coevolve.CoEvolution(RunConfig(), run)
    saved = json.loads((run / "config.json").read_text())
    del saved["prompts"]
    (run / "config.json").write_text(json.dumps(saved))
    coevolve.CoEvolution(RunConfig(), run)
    with pytest.raises(ValueError, match="different config"):
        coevolve.CoEvolution(RunConfig(prompts="brief"), run)


def test_a_run_resumes_with_other_judge_slots_and_workers(tmp_path):
    """The judge's slots and workers (and the validator's) set how fast, not what: a run resumes with others."""
    run = tmp_path / "run"
    coevolve.CoEvolution(RunConfig(judge_slots=8), run)
    faster = RunConfig(judge_slots=16, judge_workers=12)
    faster = dataclasses.replace(faster, validation=dataclasses.replace(faster.validation, workers=12))
    coevolve.CoEvolution(faster, run)
    assert json.loads((run / "config.json").read_text())["judge_slots"] == 8  # the file keeps the first
    with pytest.raises(ValueError, match="different config"):
        coevolve.CoEvolution(RunConfig(judge_slots=16, prompts="brief"), run)
