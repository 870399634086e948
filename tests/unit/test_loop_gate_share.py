"""The loop logs the CA-GRPO gate's own decision, not a copy of it: 7 of 10 correct at alpha 0.7 opens the gate.

TRL hands the trainer a float32 reward matrix; 7/10 in float32 is 0.69999999 < 0.7, so a second computation of the
gate-open share in float32 logged that group "closed" while the gate (float64) opened it. This test runs the loop's
Coder unit with its real logging path: the real trainer's `_calculate_rewards` (TRL's own reward gathering, our gate)
on one group of 10 scripted verdicts, then reads what the loop wrote to metrics.jsonl.
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from kernelzero.rewards.cagrpo import GateConfig, gate_open_per_group
from kernelzero.tasks import Task, task_to_record
from support import ScriptedJudge, accept_any_text, fail, ok

SOURCE = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(8)]


def get_init_inputs():
    return []
"""
TASK = Task(name="t", source=SOURCE, origin="user")
VERDICTS = [ok(2.0)] * 7 + [fail("incorrect")] * 3  # acc(G) = 7/10, exactly alpha


class _JudgeStub:
    """Stands in for the loop's JudgePool: only `ajudge` is used by the Coder phase."""

    def __init__(self, ajudge):
        self.ajudge = ajudge

    def close(self) -> None:
        pass


def test_loop_logs_the_gate_decision_at_seven_of_ten_and_alpha_0_7(tmp_path, monkeypatch, tiny_model_dir):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    import kernelzero.loop.coevolve as coevolve
    import kernelzero.trainers as trainers
    import kernelzero.trainers.coder as coder_trainer
    from kernelzero.loop.config import RunConfig
    from kernelzero.trainers.coder import build_coder_trainer
    from kernelzero.trainers.common import PhaseResult

    config = RunConfig()
    config.coder = dataclasses.replace(config.coder, gate=GateConfig(alpha=0.7, beta=0.1), num_generations=10,
                                       per_device_train_batch_size=10, max_steps=1)  # fmt: skip
    loop = coevolve.CoEvolution(config, tmp_path / "run")
    loop.state.rounds["0"] = {"coder_tasks": [task_to_record(TASK)]}
    loop._judge = _JudgeStub(ScriptedJudge({"t": VERDICTS}))
    seen = {}

    def run_coder_phase(cfg, tasks, judge_fn, *, on_rewards=None, **_):
        """One generation batch through the real trainer (no generation or optimiser step: random text, scripted
        verdicts), handing its record to the loop's own `on_rewards`."""
        model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
        tok = AutoTokenizer.from_pretrained(tiny_model_dir)
        trainer = build_coder_trainer(cfg, tasks, judge_fn, parse_fn=accept_any_text, model=model, tokenizer=tok,
                                      on_rewards=on_rewards)  # fmt: skip
        trainer.model.train()  # group size = num_generations
        prompts = [[{"role": "user", "content": "ModelNew for t"}]] * 10
        inputs = [{"prompt": p, "name": TASK.name, "source": TASK.source, "backend": "triton"} for p in prompts]
        completions = [[{"role": "assistant", "content": f"candidate {i}"}] for i in range(10)]
        seen["gated"] = trainer._calculate_rewards(inputs, prompts, completions, [[0]] * 10)
        seen["raw"] = trainer.last_record.raw
        return PhaseResult(tmp_path, tmp_path / "final", 1, None, [])

    for module in (coder_trainer, trainers, coevolve):  # wherever the loop looks it up
        if hasattr(module, "run_coder_phase"):
            monkeypatch.setattr(module, "run_coder_phase", run_coder_phase)
    loop._unit_coder(0)

    gate = gate_open_per_group(seen["raw"], 10, 0.7)  # (1,): the gate's own decision on this group
    assert bool(gate[0]), "premise: the float64 gate opens at 7/10 >= 0.7"
    assert float(seen["gated"][:7, 1].min()) > 0  # and the speed bonus really reached TRL
    logged = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    (coder,) = [m for m in logged if m["phase"] == "coder"]
    assert coder["coder/gate_open_share"] == pytest.approx(float(gate.double().mean()))
    assert coder["coder/pass_rate"] == pytest.approx(0.7)
