"""One Proposer GRPO step on the tiny model: validity, Coder success and the batch-wide repetition penalty."""

import pytest
import torch

from kernelzero.curriculum.proposals import proposed_task_name
from kernelzero.curriculum.validate import ValidationResult
from kernelzero.rewards.proposer import ProposerRewardConfig
from kernelzero.roles.coder import Judged
from kernelzero.roles.parsing import ParsedCode, ParseFailure
from kernelzero.trainers.config import ProposerPhaseConfig
from kernelzero.trainers.proposer import build_proposer_trainer
from support import fail, ok


def task(op: str, shape: str) -> str:
    return (
        "import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    def forward(self, x):\n"
        f"        return {op}\n\ndef get_inputs():\n    return [torch.randn({shape})]\n\n"
        "def get_init_inputs():\n    return []\n"
    )


A = task("torch.relu(x) * 2.0 + torch.sigmoid(x)", "8, 16")
A_RENAMED = A.replace("(self, x)", "(self, inp)").replace("(x)", "(inp)")
B = task("torch.logsumexp(torch.matmul(x, x.T), dim=-1)", "64, 64")
C = task("torch.nn.functional.gelu(x).mean(dim=0)", "32, 128")
D = task("torch.softmax(x, dim=1).max(dim=1).values", "4, 1000")
E = task("torch.cumsum(torch.tanh(x), dim=0)", "512")
F = task("torch.nn.functional.layer_norm(x, x.shape[-1:])", "16, 256")

# Row k of the batch (parse is called in row order): (parsed source or None, valid, l(m))
SCRIPT = [
    (A, True, 0.5),  # r_P 1, duplicate of the next row: cluster of 2 in a batch of 8 -> penalty 1/8
    (A_RENAMED, True, 0.25),  # r_P 0.5 - 1/8
    (B, True, 1.0),  # r_P 0: the Coder always succeeds
    (None, False, None),  # unparseable: rho
    (C, False, None),  # invalid: rho, the Coder is never asked
    (D, True, 0.75),  # r_P 0.5
    (E, True, None),  # valid but unmeasurable (all Coder samples hit infra failures): None -> NaN
    (F, True, 0.0),  # r_P 0
]
EXPECTED = [0.875, 0.375, 0.0, -0.5, -0.5, 0.5, float("nan"), 0.0]


class ScriptedProposerWorld:
    """Fake parser, validator and Coder success rate driven by SCRIPT (test-only)."""

    def __init__(self):
        self.calls = 0
        self.plan = {}
        self.validated = []
        self.coder_asked = []

    def parse(self, text):
        source, valid, rate = SCRIPT[self.calls % len(SCRIPT)]
        self.calls += 1
        if source is None:
            return ParseFailure("scripted: no code block")
        self.plan[source] = (valid, rate)
        return ParsedCode(source)

    def validate(self, name, source, api_set):
        self.validated.append((name, source, tuple(api_set)))
        valid, _ = self.plan[source]
        return ValidationResult(name, None if valid else "missing_api", "" if valid else "scripted: not every API")

    async def coder_samples(self, task):
        """Judged samples whose l(m) is the scripted rate (None: every sample an infra failure)."""
        self.coder_asked.append(task)
        rate = self.plan[task.source][1]
        verdicts = [fail("infra_error")] if rate is None else [ok(1.0)] * int(rate * 4) + [fail("incorrect")] * (
            4 - int(rate * 4))  # fmt: skip
        return [Judged("```python\n...```", "...", v) for v in verdicts]


def test_one_proposer_step_rewards_frontier_tasks_and_penalises_duplicates(tiny_model_dir, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    world = ScriptedProposerWorld()
    cfg = ProposerPhaseConfig(
        output_dir=str(tmp_path / "proposer"),
        per_device_train_batch_size=8,
        num_generations=4,
        max_completion_length=16,
        learning_rate=1e-3,
        reward=ProposerRewardConfig(rho=-0.5, duplicate_threshold=0.8, duplicate_weight=1.0),
    )
    api_sets = [["torch.relu", "torch.sigmoid"], ["torch.matmul", "torch.logsumexp", "F.gelu"]]
    trainer = build_proposer_trainer(
        cfg,
        api_sets,
        world.validate,
        world.coder_samples,
        parse_fn=world.parse,
        prompt_fn=lambda apis: [{"role": "user", "content": "task using " + ", ".join(apis)}],  # short: CPU time
        model=model,
        tokenizer=tok,
    )
    trainer.train()

    rec = trainer.last_record
    assert world.calls == 8 and len(world.validated) == 7  # the unparseable row is never validated
    assert len(world.coder_asked) == 6 and C not in [t.source for t in world.coder_asked]
    assert all(t.origin == "proposed" and t.apis in {tuple(a) for a in api_sets} for t in world.coder_asked)
    assert world.coder_asked[0].name == proposed_task_name(A) and world.coder_asked[0].source == A
    assert all(name == proposed_task_name(src) for name, src, _ in world.validated)  # named by content, once
    torch.testing.assert_close(rec.final[:, 0], torch.tensor(EXPECTED), equal_nan=True)
    assert [p.valid for p in rec.proposals] == [s[1] for s in SCRIPT]
    assert (rec.proposals[4].validation.reason, rec.proposals[4].validation.detail) == ("missing_api",
                                                                                        "scripted: not every API")
    assert (rec.proposals[3].validation.reason, rec.proposals[3].source) == ("parse", None)
    assert [p.success_rate for p in rec.proposals] == [s[2] for s in SCRIPT]
    assert (rec.proposals[0].successes, rec.proposals[0].samples, len(rec.proposals[0].judged)) == (2, 4, 4)
    assert rec.proposals[5].reward == pytest.approx(0.5) and rec.proposals[4].reward == -0.5  # the final rewards
    assert rec.metrics["proposer/valid_share"] == pytest.approx(6 / 8)  # what the trainer logged, for the loop
    # TRL logged and normalised exactly the penalised column
    logged = torch.tensor(list(trainer._logs["rewards"]["frontier"]))
    torch.testing.assert_close(logged, torch.tensor(EXPECTED), equal_nan=True)
    log = trainer.state.log_history[0]
    assert log["proposer/valid_share"] == pytest.approx(6 / 8)
    assert log["proposer/coder_success_mean"] == pytest.approx((0.5 + 0.25 + 1.0 + 0.75 + 0.0) / 5)
    assert log["proposer/duplicate_share"] == pytest.approx(2 / 6)
    changed = [n for n, p in model.named_parameters() if not torch.equal(p.detach(), before[n])]
    assert len(changed) == len(before)


def test_undefined_step_metrics_are_left_out_of_the_log():
    """A batch with no valid task has no Coder success rate: the metric is NaN and must not reach TRL's store (TRL
    would log it as None, which transformers' loggers refuse with a warning per key); defined ones still do."""
    from collections import defaultdict

    from kernelzero.curriculum.proposals import Proposal
    from kernelzero.trainers.common import record_step_metrics
    from kernelzero.trainers.proposer import proposer_step_metrics

    unparsed = ValidationResult("p", "parse", "no code block", ("torch.add",))
    proposals = [Proposal("p", ("torch.add",), None, unparsed) for _ in range(4)]
    raw = torch.full((4, 1), -0.5)
    metrics = proposer_step_metrics(proposals, raw, raw.clone())
    store = defaultdict(list)
    record_step_metrics(store, metrics)
    assert dict(store) == {"proposer/valid_share": [0.0], "proposer/parse_failure_share": [1.0],
                           "proposer/reward_mean": [-0.5]}  # fmt: skip
    record_step_metrics(store, {"proposer/valid_share": 0.5, "proposer/duplicate_share": float("nan")})
    assert store["proposer/valid_share"] == [0.0, 0.5] and "proposer/duplicate_share" not in store
