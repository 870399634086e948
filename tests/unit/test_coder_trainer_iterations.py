"""GRPO's mu (`num_iterations`) through the real Coder phase: each judged batch feeds mu optimizer steps.

Why it matters: a Coder step is mostly generation and judging, so reusing a judged batch for several clipped updates
is the cheap way to get more learning per rollout. These tests pin what our trainer does with it under TRL 1.16: the
judge and the CA-GRPO gate run once per generated batch (not once per optimizer step), every step still updates the
weights, the reused steps carry the generation-time log-probs (so TRL's clipped importance ratio is live), and the
Coder metrics appear once per judged batch in metrics.jsonl (on the step that judged it), never repeated.
"""

import json

import pytest
import torch

from kernelzero.rewards.config import GateConfig
from kernelzero.tasks import Task
from kernelzero.trainers.coder import CoderGRPOTrainer, run_coder_phase
from kernelzero.trainers.config import CoderPhaseConfig
from support import ScriptedJudge, accept_any_text, fail, ok

TASKS = [Task(name="open", source="# task open"), Task(name="closed", source="# task closed")]
SCRIPT = {
    "open": [ok(2.0), ok(3.0), ok(0.5), fail("incorrect")],  # 3 of 4 correct: gate open
    "closed": [ok(4.0), fail("compile_error"), fail("incorrect"), fail("incorrect")],  # 1 of 4: gate closed
}
MU, GENERATIONS = 2, 2
STEPS = MU * GENERATIONS  # optimizer steps: max_steps counts updates, so a phase of N judged batches sets N * mu
ROLLOUTS = 8  # 2 tasks x 4 generations per judged batch


def short_prompt(task, backend):
    return [{"role": "user", "content": f"ModelNew for {task.name} ({backend})"}]


def test_num_iterations_judges_each_batch_once_and_updates_on_every_step(tiny_model_dir, tmp_path, monkeypatch):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    batches = []  # what each optimizer step trained on, as TRL's `_prepare_inputs` handed it over

    def spy(self, generation_batch):
        inputs = original(self, generation_batch)
        batches.append((self.state.global_step, inputs))
        return inputs

    original = CoderGRPOTrainer._prepare_inputs
    monkeypatch.setattr(CoderGRPOTrainer, "_prepare_inputs", spy)

    judge = ScriptedJudge(SCRIPT)
    records = []
    cfg = CoderPhaseConfig(output_dir=str(tmp_path / "coder"), per_device_train_batch_size=ROLLOUTS, num_generations=4,
                           max_completion_length=16, learning_rate=1e-3, max_steps=STEPS, log_completions=False,
                           gate=GateConfig(alpha=0.5, beta=0.1), grpo_overrides={"num_iterations": MU})  # fmt: skip
    result = run_coder_phase(cfg, TASKS, judge, parse_fn=accept_any_text, prompt_fn=short_prompt, model=model,
                             tokenizer=AutoTokenizer.from_pretrained(tiny_model_dir), on_rewards=records.append,
                             resume=False)  # fmt: skip

    assert result.global_step == STEPS
    # judged once per generated batch: one judge call per rollout, one gate record (and "coder step" line) per batch,
    # labelled with the optimizer step it was generated at
    assert len(judge.calls) == GENERATIONS * ROLLOUTS
    assert [r.step for r in records] == [0, MU]
    assert [sum(v.correct for v in r.verdicts) for r in records] == [4, 4]

    # mu steps per batch: the same completions, and the log-probs of the policy that sampled them (without them TRL
    # would take the current policy's, the ratio would be 1 and the clip would never act)
    assert [step for step, _ in batches] == list(range(STEPS))
    for block in range(GENERATIONS):
        first, *reused = [inputs for _, inputs in batches[block * MU : (block + 1) * MU]]
        assert "old_per_token_logps" in first
        for inputs in reused:
            assert torch.equal(inputs["completion_ids"], first["completion_ids"])
            assert torch.equal(inputs["advantages"], first["advantages"])
            assert torch.equal(inputs["old_per_token_logps"], first["old_per_token_logps"])

    changed = [n for n, p in model.named_parameters() if not torch.equal(p.detach(), before[n])]
    assert len(changed) == len(before)

    # metrics.jsonl: one line per optimizer step, a gradient on each; the Coder's metrics once per judged batch
    lines = [json.loads(x) for x in (tmp_path / "coder" / "metrics.jsonl").read_text().splitlines()]
    steps = [x for x in lines if "loss" in x]
    assert [x["step"] for x in steps] == list(range(1, STEPS + 1))
    assert all(x["grad_norm"] > 0 for x in steps)
    judged = [x for x in steps if "coder/pass_rate" in x]
    assert [x["step"] for x in judged] == [1, 1 + MU]
    assert [x["coder/pass_rate"] for x in judged] == pytest.approx([0.5, 0.5])
    assert [x["coder/gate_open_share"] for x in judged] == pytest.approx([0.5, 0.5])
    assert [x["reward"] for x in steps if "reward" in x] == pytest.approx([r.metrics["coder/reward_mean"]
                                                                          for r in records])  # fmt: skip
