"""Each phase saves checkpoints under its output_dir and resumes from the last one."""

import json
from pathlib import Path

import pytest

from kernelzero.curriculum.validate import ValidationResult
from kernelzero.roles.coder import Judged
from kernelzero.tasks import Task
from kernelzero.trainers.coder import run_coder_phase
from kernelzero.trainers.common import resolve_resume
from kernelzero.trainers.config import CoderPhaseConfig, ProposerPhaseConfig, SFTPhaseConfig
from kernelzero.trainers.proposer import run_proposer_phase
from kernelzero.trainers.sft import run_sft
from support import ScriptedJudge, accept_any_text, fail, ok

TASKS = [Task(name="a", source="# a"), Task(name="b", source="# b")]


def short_coder_prompt(task, backend):  # the real prompt is ~1,300 tokens: several times the CPU time per step
    return [{"role": "user", "content": f"ModelNew for {task.name}"}]


def short_proposer_prompt(apis):
    return [{"role": "user", "content": "task using " + ", ".join(apis)}]


def test_resolve_resume(tmp_path):
    assert resolve_resume(tmp_path / "missing", "auto") is None
    assert resolve_resume(tmp_path, False) is None
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        resolve_resume(tmp_path, True)
    (tmp_path / "checkpoint-3").mkdir()
    (tmp_path / "checkpoint-12").mkdir()
    assert resolve_resume(tmp_path, "auto") == str(tmp_path / "checkpoint-12")
    assert resolve_resume(tmp_path, str(tmp_path / "checkpoint-3")) == str(tmp_path / "checkpoint-3")
    with pytest.raises(FileNotFoundError):
        resolve_resume(tmp_path, str(tmp_path / "checkpoint-99"))


def test_coder_phase_saves_and_resumes(tiny_model_dir, tmp_path):
    judge = ScriptedJudge({"a": [ok(2.0), fail("incorrect")], "b": [fail("runtime_error"), ok(1.5)]})
    out = tmp_path / "coder"
    kw = {
        "output_dir": str(out),
        "model": str(tiny_model_dir),
        "per_device_train_batch_size": 8,
        "max_completion_length": 8,
    }
    first = run_coder_phase(
        CoderPhaseConfig(max_steps=1, **kw), TASKS, judge, parse_fn=accept_any_text, prompt_fn=short_coder_prompt
    )
    assert first.global_step == 1 and first.resumed_from is None and (out / "checkpoint-1").is_dir()
    assert len(judge.calls) == 8
    second = run_coder_phase(
        CoderPhaseConfig(max_steps=2, **kw), TASKS, judge, parse_fn=accept_any_text, prompt_fn=short_coder_prompt
    )
    assert second.resumed_from == str(out / "checkpoint-1")
    assert second.global_step == 2 and (out / "checkpoint-2").is_dir()
    assert len(judge.calls) == 16  # the second run generated and judged one batch only: step 1 was not redone
    assert (second.final_model_dir / "model.safetensors").exists()
    assert json.loads((out / "phase_config.json").read_text())["gate"]["alpha"] == 0.5


def test_proposer_phase_saves_and_resumes(tiny_model_dir, tmp_path):
    asked = []

    async def samples(tasks):  # l(m) = 0.5
        asked.extend(tasks)
        return [[Judged("c", "c", ok(1.0)), Judged("c", "c", fail("incorrect"))] for _ in tasks]

    out = tmp_path / "proposer"
    kw = {
        "output_dir": str(out),
        "model": str(tiny_model_dir),
        "per_device_train_batch_size": 4,
        "max_completion_length": 8,
    }
    api_sets = [["torch.relu"]]
    args = (api_sets, lambda name, src, apis: ValidationResult(name, None), samples)
    first = run_proposer_phase(
        ProposerPhaseConfig(max_steps=1, **kw), *args, parse_fn=accept_any_text, prompt_fn=short_proposer_prompt
    )
    second = run_proposer_phase(
        ProposerPhaseConfig(max_steps=2, **kw), *args, parse_fn=accept_any_text, prompt_fn=short_proposer_prompt
    )
    assert (first.global_step, second.global_step) == (1, 2)
    assert second.resumed_from == str(out / "checkpoint-1") and len(asked) == 8


def test_sft_saves_and_resumes(tiny_model_dir, tmp_path):
    out = tmp_path / "sft"
    pairs = [(TASKS[0], "class ModelNew: pass")] * 4
    kw = {"output_dir": str(out), "model": str(tiny_model_dir)}
    with pytest.raises(ValueError, match="max_length=64"):
        run_sft(SFTPhaseConfig(max_length=64, **kw), pairs)
    first = run_sft(SFTPhaseConfig(max_steps=1, **kw), pairs)
    second = run_sft(SFTPhaseConfig(max_steps=2, **kw), pairs)
    assert (first.global_step, second.global_step) == (1, 2)
    assert second.resumed_from == str(out / "checkpoint-1")
    assert Path(second.final_model_dir, "tokenizer_config.json").exists()
