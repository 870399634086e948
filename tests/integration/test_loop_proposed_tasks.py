"""The loop with a Proposer that writes valid tasks (scripted generation; the trainers still train the tiny model):
validated proposals join the pool with their l(m), the Coder trains on them, the frontier map covers their API
pairs; next round the same proposals are rejected as duplicates and the hard tasks come back instead."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kernelzero.curriculum.proposals import proposed_task_name
from kernelzero.generation.base import Completion

FIXTURES = Path(__file__).parents[1] / "fixtures" / "proposer"
SOURCES = {f.name: f.read_text() for f in (FIXTURES / "01_valid_linear_gelu.py", FIXTURES / "02_valid_layernorm_softmax.py")}  # noqa: E501
SETS = [["torch.nn.Linear", "torch.nn.functional.gelu", "torch.logsumexp"], ["torch.nn.LayerNorm", "torch.softmax"]]


class ScriptedProposer:
    """Answers each Proposer prompt with the fixture task written for the API set it names."""

    name = "scripted-proposer"

    def generate(self, prompts, n, sampling):
        out = []
        for chat in prompts:
            text = chat[-1]["content"]
            wants_layernorm = "{`torch.nn.LayerNorm`, `torch.softmax`}" in text  # the set as the prompt lists it
            source = SOURCES["02_valid_layernorm_softmax.py" if wants_layernorm else "01_valid_linear_gelu.py"]
            out.append([Completion(f"```python\n{source}```", "stop")] * n)
        return out


@pytest.fixture
def run(tmp_path, tiny_model_dir, monkeypatch):
    import torch

    torch.set_num_threads(1)
    monkeypatch.setenv("KERNELZERO_CACHE", str(tiny_model_dir.parent))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    from kernelzero.loop.config import load_config

    sets = tmp_path / "sets.txt"
    sets.write_text("\n".join(json.dumps(s) for s in SETS) + "\n")
    cfg_file = tmp_path / "run.yaml"
    cfg_file.write_text(f"rounds: 2\nloop:\n  api_sets: {sets}\n  api_sets_per_round: 2\n  tasks_per_round: 2\n"
                        "  coder_k: 2\n  max_new_tokens: 32\n  seed_tasks: none\nvalidation:\n  device: cpu\n"
                        "judge:\n  device: cpu\n")  # fmt: skip
    from kernelzero.loop.coevolve import CoEvolution

    out = tmp_path / "run"
    loop = CoEvolution(load_config(cfg_file), out, policies={"proposer": ScriptedProposer()})
    state = loop.run()
    return out, state


def test_proposed_tasks_flow_through_pool_coder_and_frontier(run):
    out, state = run
    tasks = [json.loads(x) for x in (out / "tasks.jsonl").read_text().splitlines()]
    batch = {(t["round"], t["name"]): t for t in tasks if t["phase"] == "tasks"}
    assert [t["valid"] for k, t in sorted(batch.items()) if k[0] == 0] == [True, True]
    assert all(t["samples"] == 2 and t["success_rate"] == 0.0 for k, t in batch.items() if k[0] == 0)
    # round 1: the same sources again are near-duplicates of the pool's tasks
    assert [t["validation"]["reason"] for k, t in sorted(batch.items()) if k[0] == 1] == ["duplicate", "duplicate"]
    assert not state.rounds["0"]["seed_fallback"] and not state.rounds["1"]["seed_fallback"]
    # round 0 trains on the two new tasks, named by their sources; round 1 on the same two, recycled from the hard pool
    names = {proposed_task_name(src) for src in SOURCES.values()}
    assert {t["name"] for t in state.rounds["0"]["coder_tasks"]} == names
    assert {t["name"] for k, t in batch.items() if k[0] == 0} == names
    assert [t["origin"] for t in state.rounds["1"]["coder_tasks"]] == ["recycled", "recycled"]
    verdicts = [json.loads(x) for x in (out / "verdicts.jsonl").read_text().splitlines()]
    coder = [v for v in verdicts if v["phase"] == "coder"]
    assert {v["task"] for v in coder} == names and len(coder) == 32
    entries = {e["task"]["name"]: e for e in state.pool["entries"]}
    # 2 l(m) samples, then 8 Coder rollouts (2 steps x 2 tasks x 4) in each of 2 rounds
    assert [entries[n]["attempts"] for n in sorted(names)] == [18, 18]
    assert [h[0] for h in entries[proposed_task_name(SOURCES["01_valid_linear_gelu.py"])]["history"]] == [0, 0, 1]
    from kernelzero.loop.report import write_report

    report = write_report(out).read_text()
    assert "plots/frontier.png" in report and "torch.logsumexp" in report
    assert os.path.getsize(out / "plots" / "frontier.png") > 1000
