"""Curriculum pieces that need no worker: similarity, output checks, the pool's state, frontier statistics."""

import pytest
import torch

from kernelzero.curriculum.frontier import api_rates, batch_rewards, hardest_apis, pair_rates
from kernelzero.curriculum.pool import TaskPool
from kernelzero.curriculum.proposals import read_api_sets, reasons_table
from kernelzero.curriculum.similarity import SimilarityIndex, ast_hash
from kernelzero.curriculum.validate import ValidationConfig, Validator, judge_outputs, read_apis_constant
from kernelzero.rewards.proposer import ProposerRewardConfig, mean_correct, tally
from kernelzero.tasks import Task

SRC = """
import torch
from torch import nn

class Model(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.lin = nn.Linear(d, d)

    def forward(self, x):
        return torch.tanh(self.lin(x))

def get_inputs():
    return [torch.randn(8, 16)]

def get_init_inputs():
    return [16]
"""
RENAMED = SRC.replace("lin", "proj").replace("(x)", "(inp)").replace("x)", "inp)").replace("16", "32") + "# note\n"
OTHER = SRC.replace("torch.tanh(self.lin(x))", "torch.softmax(self.lin(x) * 2.0 + x.sum(1, keepdim=True), dim=1)")


def test_ast_hash_ignores_names_sizes_and_comments_but_not_ops():
    assert ast_hash(SRC) == ast_hash(RENAMED)
    assert ast_hash(SRC) != ast_hash(SRC.replace("torch.tanh", "torch.sigmoid"))
    assert ast_hash("def (") is None


def test_similarity_index_closest():
    idx = SimilarityIndex()
    idx.add("a", SRC)
    assert idx.closest(RENAMED).exact and idx.closest(RENAMED).name == "a"
    near = idx.closest(OTHER)
    assert not near.exact and 0.3 < near.similarity < 0.9
    idx.remove("a")
    assert idx.closest(SRC) is None


def test_static_checks_name_missing_apis_and_duplicates():
    pool = SimilarityIndex()
    pool.add("pooled", SRC)
    v = Validator(ValidationConfig(device="cpu"), pool=pool)
    r = v.static("t", OTHER, ["torch.nn.Linear", "torch.tanh", "F.softmax"])
    assert (r.reason, r.missing) == ("missing_api", ("torch.tanh",))
    r = v.static("t", RENAMED, ["nn.Linear", "torch.tanh"])
    assert (r.reason, r.similar_to, r.similarity) == ("duplicate", "pooled", 1.0)
    assert v.static("t", "class Model: pass", []).reason == "parse"
    assert v.static("t", OTHER, ["nn.Linear", "torch.softmax"]) is None
    r = v.validate("t", OTHER, ["nn.Linear", "torch.tanh"])  # what the Proposer trainer gets: the record itself
    assert (r.valid, r.reason, r.detail) == (False, "missing_api", "not used by Model: torch.tanh")


def _runs(a, b=None, c=None):
    return [[a], [a if b is None else b], [a * 2 + 1 if c is None else c]]


@pytest.mark.parametrize(
    ("runs", "reason"),
    [
        (_runs(torch.randn(4, 4)), None),
        (_runs(torch.tensor([1.0, float("nan")])), "non_finite"),
        (_runs(torch.ones(4), torch.ones(4) * 2), "nondeterministic"),
        (_runs(torch.zeros(3, 3)), "zero_output"),
        (_runs(torch.full((3,), 1e-6), c=torch.full((3,), 2e-6)), "below_tolerance"),
        (_runs(torch.full((5,), 3.0), c=torch.full((5,), 4.0)), "constant_output"),
        (_runs(torch.arange(5.0), c=torch.arange(5.0)), "input_independent"),
        (_runs(torch.tensor(2.5)), None),  # a scalar loss is not "constant"
    ],
)
def test_judge_outputs(runs, reason):
    assert judge_outputs(runs, [], 1e-4, 1e-4)[0] == reason


def test_judge_outputs_non_tensor():
    assert judge_outputs([[], [], []], [0], 1e-4, 1e-4)[0] == "bad_output"


def test_read_apis_constant_and_api_set_file(tmp_path):
    assert read_apis_constant("APIS = ['nn.Linear', 'F.gelu']\n") == ("nn.Linear", "F.gelu")
    assert read_apis_constant("APIS = [f(x)]\n") is None
    f = tmp_path / "sets.txt"
    f.write_text('nn.Linear, F.gelu\n# comment\n["torch.softmax", "nn.LayerNorm"]\n')
    assert read_api_sets(f) == [("nn.Linear", "F.gelu"), ("torch.softmax", "nn.LayerNorm")]


def _task(name, apis=("nn.Linear", "torch.tanh"), src=SRC):
    return Task(name=name, source=src, origin="proposed", apis=apis)


def test_pool_records_hard_pool_and_round_trips(tmp_path):
    pool = TaskPool()
    pool.add_many([_task("a"), _task("b"), _task("c", ("F.relu",))])
    with pytest.raises(ValueError, match="already in the pool"):
        pool.add(_task("a"))
    pool.record("a", 0, 4)
    pool.record("b", 2, 4)
    pool.record("c", 0, 4)
    assert [e.name for e in pool.hard()] == ["a", "c"]
    assert pool["b"].success_rate == 0.5
    drawn = pool.draw_hard(1)
    assert [(t.name, t.origin) for t in drawn] == [("a", "recycled")] and pool["a"].task.origin == "proposed"
    assert [t.name for t in pool.draw_hard(5)] == ["c"]  # a was drawn this round
    pool.next_round()
    assert [t.name for t in pool.draw_hard(5)] == ["a", "c"]
    path = pool.save(tmp_path)
    assert path.name == "pool.jsonl" and not list(tmp_path.glob(".*tmp"))
    again = TaskPool.load(tmp_path)
    assert again.state_dict() == pool.state_dict()
    assert again.index.closest(RENAMED).exact
    with pytest.raises(ValueError, match="successes"):
        pool.record("a", 5, 4)


def test_success_rate_skips_infra_failures():
    assert mean_correct([True, False, None, True]) == pytest.approx(2 / 3)
    assert tally([True, False, None, True]) == (2, 3)
    assert mean_correct([None, None]) is None and tally([None, None]) == (0, 0)


def test_api_and_pair_rates_pool_samples():
    records = [(("a", "b"), 2, 4), (("a", "c"), 0, 4), (("b", "c"), 4, 4), (("a",), 1, 0)]
    apis = api_rates(records)
    assert (apis["a"].successes, apis["a"].samples, apis["a"].tasks) == (2, 8, 2)
    assert apis["c"].rate == 0.5
    pairs = pair_rates(records)
    assert set(pairs) == {("a", "b"), ("a", "c"), ("b", "c")} and pairs[("a", "c")].rate == 0.0
    assert [a for a, _ in hardest_apis(apis, 2)] == ["a", "c"]


def test_batch_rewards_frontier_rho_and_repetition_penalty():
    cfg = ProposerRewardConfig(rho=-0.5)
    other = SRC.replace("torch.tanh(self.lin(x))", "torch.cumsum(torch.relu(self.lin(x)) ** 2, dim=1).flip(1)")
    r = batch_rewards([True, False, True, True], [0.5, None, 0.25, None], [SRC, "x", other, SRC], cfg)
    assert r[1] == -0.5 and r[3] is None  # invalid -> rho; valid but unmeasured -> None
    assert r[0] == pytest.approx(1.0 - 1 / 4)  # duplicated by task 3: penalty (|C|-1)/B
    assert r[2] == pytest.approx(0.5)
    with pytest.raises(ValueError):
        batch_rewards([True], [], [SRC])


def test_reasons_table_and_heatmap(tmp_path):
    from collections import Counter

    from kernelzero.curriculum.heatmap import frontier_heatmap, hardest_table

    table = reasons_table(Counter({"valid": 1, "parse": 3}), 4)
    assert table.splitlines()[1].split() == ["valid", "1", "25%"] and "parse" in table.splitlines()[2]
    records = [(("F.gelu", "nn.Linear"), 1, 4), (("F.gelu", "torch.sum"), 0, 4)]
    png = frontier_heatmap(pair_rates(records), tmp_path / "map.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert hardest_table(api_rates(records)).splitlines()[1].split()[:2] == ["torch.sum", "0.00"]


class _Stub:
    """A policy that answers every chat with the same text."""

    def __init__(self, text: str, name: str = "stub"):
        self.text, self.name = text, name

    def generate(self, prompts, n, sampling):
        from kernelzero.generation.base import Completion

        return [[Completion(self.text, "stop") for _ in range(n)] for _ in prompts]


def test_propose_batch_scores_valid_tasks_with_coder_samples(tmp_path):
    """Proposer -> validation (a real worker) -> k Coder samples judged by a stub judge -> l(m) and r_P."""
    from kernelzero.curriculum.proposals import propose_batch, proposed_task_name, write_outputs
    from kernelzero.judge.verdict import Verdict

    proposer = _Stub("Here is the task:\n```python\n" + OTHER + "```\n")
    coder = _Stub("```python\nclass ModelNew:\n    pass\n```")
    calls = iter([True, False, False, True, True, True])  # task 0 gets T F F T; the batch's 2nd set is invalid

    def judge_fn(task, code, backend):
        return Verdict.fail("incorrect", "stub") if not next(calls) else Verdict(status="ok", correct=True)

    sets = [("nn.Linear", "torch.softmax"), ("nn.Linear", "torch.tanh")]  # the second misses tanh
    summary = propose_batch(proposer, sets, Validator(ValidationConfig(device="cpu")), coder=coder, k=4,
                            judge_fn=judge_fn)  # fmt: skip
    first, second = summary.proposals
    assert first.valid and (first.successes, first.samples, first.success_rate) == (2, 4, 0.5)
    assert [j.verdict.correct for j in first.judged] == [True, False, False, True] and second.judged == []
    assert first.name == proposed_task_name(first.source) == second.name  # named by content: same source, one name
    assert first.reward == pytest.approx(1.0) and second.reward == -0.5
    assert (second.validation.reason, second.samples) == ("missing_api", None)
    tasks, side = write_outputs(summary, tmp_path / "t.jsonl")
    assert tasks.read_text().count("\n") == 1 and '"missing_api": 1' in side.read_text()


class _SeededCoder:
    """A Coder whose k answers follow its call's seed (`# ok` where the seed's script says so); records each call's
    (chats, n, seed)."""

    name = "seeded"
    SCRIPT = {10: "ok wrong ok", 12: "wrong wrong ok", 7: "ok ok wrong"}

    def __init__(self):
        self.calls: list[tuple[int, int, int | None]] = []

    def generate(self, prompts, n, sampling):
        from kernelzero.generation.base import Completion

        self.calls.append((len(prompts), n, sampling.seed))
        marks = self.SCRIPT[sampling.seed].split()
        return [[Completion(f"```python\nclass ModelNew:\n    pass  # {marks[j]} {c}\n```", "stop") for j in range(n)]
                for c in range(len(prompts))]  # fmt: skip


def test_measure_judges_every_valid_proposal_in_one_batch_with_per_proposal_seeds():
    from kernelzero.curriculum.proposals import Proposal, measure
    from kernelzero.curriculum.validate import ValidationResult
    from kernelzero.generation.base import SamplingConfig
    from kernelzero.judge.verdict import Verdict

    def proposals() -> list[Proposal]:
        ok = [Proposal(f"p{i}", ("F.relu",), SRC, ValidationResult(f"p{i}", None)) for i in (0, 2)]
        bad = Proposal("p1", ("F.relu",), SRC, ValidationResult("p1", "missing_api", "no F.relu"))
        return [ok[0], bad, ok[1]]

    def judge_fn(task, code, backend):
        calls.append(task.name)
        return Verdict(status="ok", correct=True) if "# ok" in code else Verdict.fail("incorrect", "stub")

    batches: list[list[str]] = []

    def judge_many(requests):
        batches.append([t.name for t, _, _ in requests])
        return [judge_fn(*r) for r in requests]

    def seeded(i: int) -> SamplingConfig:  # the loop's sampling(i): a seed per proposal
        return SamplingConfig(seed=10 + i)

    calls: list[str] = []
    serial, coder = proposals(), _SeededCoder()
    measure(serial, coder, k=3, backend="triton", judge_fn=judge_fn, sampling=seeded)
    assert len(calls) == 6 and coder.calls == [(1, 3, 10), (1, 3, 12)]
    calls = []
    batched, coder = proposals(), _SeededCoder()
    measure(batched, coder, k=3, backend="triton", judge_fn=judge_fn, sampling=seeded, judge_many=judge_many)
    assert batches == [["p0"] * 3 + ["p2"] * 3]  # one batch of both valid proposals' k samples
    assert coder.calls == [(1, 3, 10), (1, 3, 12)]  # each proposal sampled under its own seed, as one by one
    for p, q in zip(serial, batched, strict=True):
        assert (p.successes, p.samples, p.success_rate) == (q.successes, q.samples, q.success_rate)
        assert [j.code for j in p.judged] == [j.code for j in q.judged]
    first, invalid, last = batched
    assert (first.successes, first.samples, first.success_rate) == (2, 3, pytest.approx(2 / 3))
    assert (last.successes, last.samples, last.success_rate) == (1, 3, pytest.approx(1 / 3))
    assert (invalid.samples, invalid.success_rate, invalid.judged) == (None, None, [])

    shared, coder, batches = proposals(), _SeededCoder(), []  # one config for all (`propose_batch`): one generate
    measure(shared, coder, k=3, backend="triton", judge_fn=judge_fn, sampling=lambda _i: SamplingConfig(seed=7),
            judge_many=judge_many)  # fmt: skip
    assert coder.calls == [(2, 3, 7)] and batches == [["p0"] * 3 + ["p2"] * 3]
    assert [p.successes for p in shared] == [2, None, 2]
