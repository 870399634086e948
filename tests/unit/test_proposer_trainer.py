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
        self.coder_batches = []  # tasks per coder_samples call

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

    def coder_samples(self, tasks):
        """Per task, judged samples whose l(m) is the scripted rate (None: every sample an infra failure). Sync: the
        ledger runs it in a thread."""
        self.coder_batches.append(len(tasks))
        self.coder_asked += tasks
        return [self._samples(self.plan[t.source][1]) for t in tasks]

    @staticmethod
    def _samples(rate):
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
    assert world.coder_batches == [6]  # every valid task of the batch in one call
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
    assert rec.metrics["proposer/validate_s"] >= 0 and rec.metrics["proposer/coder_samples_s"] >= 0  # both timed
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


# Reward batches through the loop's l(m) path (`curriculum.proposals.coder_samples`), k = 3: source -> (valid, the
# marks of the Coder's 3 answers on it); None: unparseable. l(m): A 2/3, B 0, D None (every sample infra), F 1.
BATCH = [(A, True, "ok wrong ok"), (B, True, "wrong wrong wrong"), (None, False, ""), (D, True, "infra infra infra"),
         (E, False, "ok ok ok"), (F, True, "ok ok ok")]  # fmt: skip


class CountingCoder:
    """A frozen Coder whose answers to a task's chat follow BATCH (`# ok`, `# wrong`, `# infra`); records each
    `generate` call's (chats, n) and the sources it was asked about."""

    name = "counting"

    def __init__(self):
        self.calls: list[tuple[int, int]] = []
        self.sources: list[str] = []

    def generate(self, prompts, n, sampling):
        from kernelzero.generation.base import Completion

        self.calls.append((len(prompts), n))
        out = []
        for chat in prompts:
            text = "".join(m["content"] for m in chat)
            source, _, marks = next(row for row in BATCH if row[0] is not None and row[0] in text)
            self.sources.append(source)
            out.append([Completion(f"```python\nclass ModelNew:\n    pass  # {m}\n```", "stop")
                        for m in marks.split()[:n]])  # fmt: skip
        return out


class RecordingJudge:
    """A judge_many recording each batch's size: `# ok` is correct, `# infra` an infra failure, else incorrect."""

    def __init__(self):
        self.batches: list[int] = []

    def verdict(self, code):
        return ok(1.0) if "# ok" in code else fail("infra_error") if "# infra" in code else fail("incorrect")

    def __call__(self, requests):
        self.batches.append(len(requests))
        return [self.verdict(code) for _, code, _ in requests]


def run_reward_batch(rows, coder, judge):
    """One Proposer reward batch (TRL's async reward function) over `rows`; (rewards, proposals, batch calls)."""
    import asyncio

    from kernelzero.curriculum.proposals import coder_samples
    from kernelzero.generation.base import SamplingConfig
    from kernelzero.trainers.proposer import ProposalLedger, make_proposer_reward_func

    valid = {src: v for src, v, _ in rows if src is not None}
    texts = [src if src is not None else "no code here" for src, _, _ in rows]
    batches = []

    def samples_fn(tasks):  # what the loop injects: `coder_samples` under the loop's one SamplingConfig
        batches.append([t.source for t in tasks])
        return coder_samples(tasks, coder, k=3, backend="triton", judge_many=judge, sampling=SamplingConfig(seed=5))

    ledger = ProposalLedger(
        lambda name, src, apis: ValidationResult(name, None if valid[src] else "missing_api", "scripted"),
        samples_fn,
        lambda text: ParsedCode(text) if text in valid else ParseFailure("scripted: no code block"),
    )
    frontier = make_proposer_reward_func(ledger, rho=-0.5)
    rewards = asyncio.run(frontier([None] * len(rows), texts, [["torch.relu"]] * len(rows)))
    return rewards, ledger.proposals, batches


def test_a_reward_batch_samples_every_valid_task_in_one_generation_and_one_judging_batch():
    from kernelzero.curriculum.proposals import Proposal
    from kernelzero.eval.solve import solve
    from kernelzero.generation.base import SamplingConfig

    coder, judge = CountingCoder(), RecordingJudge()
    rewards, proposals, batches = run_reward_batch(BATCH, coder, judge)
    valid_sources = [A, B, D, F]
    assert batches == [valid_sources]  # one coder_samples call, after validation, with the valid tasks only
    assert coder.calls == [(4, 3)] and sorted(coder.sources) == sorted(valid_sources)  # ONE generate, n = k
    assert judge.batches == [4 * 3]  # ONE judging batch of every valid task's k answers
    assert [p.valid for p in proposals] == [True, True, False, True, False, True]
    assert [p.success_rate for p in proposals] == [pytest.approx(2 / 3), 0.0, None, None, None, 1.0]
    assert [p.samples for p in proposals] == [3, 3, None, 0, None, 3]  # D: 3 infra failures, none scored
    assert [len(p.judged) for p in proposals] == [3, 3, 0, 3, 0, 3]
    assert rewards == [pytest.approx(2 / 3), 0.0, -0.5, None, -0.5, 0.0]

    # the old path, task by task (`solve` on one task, its own generate and judging): the same l(m) for each
    for p in proposals:
        if not p.valid:
            continue
        alone = Proposal(p.name, p.apis, p.source, p.validation)
        res = solve(p.task(), CountingCoder(), backend="triton", judge_fn=lambda t, c, b: judge.verdict(c), samples=3,
                    sampling=SamplingConfig(seed=5))  # fmt: skip
        alone.record_samples([Judged(r.completion.text, r.code, r.verdict) for r in res.rollouts])
        assert (alone.successes, alone.samples, alone.success_rate) == (p.successes, p.samples, p.success_rate)
        assert [j.code for j in alone.judged] == [j.code for j in p.judged]


def test_a_reward_batch_without_a_valid_task_never_asks_the_coder():
    coder, judge = CountingCoder(), RecordingJudge()
    rows = [row for row in BATCH if not row[1]]
    rewards, proposals, batches = run_reward_batch(rows, coder, judge)
    assert batches == [] and coder.calls == [] and judge.batches == []
    assert rewards == [-0.5, -0.5]
    assert all((p.samples, p.success_rate, p.judged) == (None, None, []) for p in proposals)


def test_a_reward_batch_validates_its_tasks_at_once_within_the_validators_workers(monkeypatch):
    """The loop's `validate_fn` is `Validator.validate_async`: a batch's sandboxed runs overlap, at most
    `workers` at once (a barrier of 3 breaks, after its timeout, unless three runs wait on it together)."""
    import asyncio
    import threading

    from kernelzero.curriculum.validate import ValidationConfig, Validator
    from kernelzero.trainers.proposer import ProposalLedger

    validator = Validator(ValidationConfig(device="cpu", workers=3))
    barrier, lock, running, peak = threading.Barrier(3, timeout=20), threading.Lock(), [0], [0]

    def sandboxed_run(name, source, apis):  # stands in for the worker process
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        barrier.wait()
        with lock:
            running[0] -= 1
        return ValidationResult(name, "runtime_error", "scripted", apis)

    monkeypatch.setattr(validator, "_run", sandboxed_run)
    sources = [task(f"torch.relu(x) * {i}.0", "8, 16") for i in range(6)]
    ledger = ProposalLedger(validator.validate_async, lambda tasks: [], ParsedCode)
    proposals = asyncio.run(ledger.evaluate_batch(sources, [["torch.relu"]] * 6))
    assert [p.validation.reason for p in proposals] == ["runtime_error"] * 6  # every task reached its sandboxed run
    assert peak[0] == 3  # three at once, never more than the validator's workers
    assert set(ledger.seconds) == {"validate", "coder_samples"}
