"""`kernelzero study --smoke` end to end on CPU, as CI runs it: every stage's output, the summary's figures, the
resume of a second invocation, another arm added to the same folder, and no test pair in any SFT example.

About a minute on the 2-core box for all three invocations (the first does the work; the others skip it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from kernelzero.study.corpus import check_corpus
from kernelzero.study.family import is_test_set
from kernelzero.study.weights import unpack
from kernelzero.tasks import read_corpus

SRC = str(Path(__file__).parents[2] / "src")
STAGES = ["corpus", "models", "sft-coder", "sft-proposer", "eval-sft", "proposer-eval-sft", "loop-tasks", "loop-main",
          "eval-round-1", "proposer-eval-round-1"]


def study(out: Path, cache: Path, *args: str, code: int = 0) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": SRC, "KERNELZERO_CACHE": str(cache), "OMP_NUM_THREADS": "1",
           "TOKENIZERS_PARALLELISM": "false", "CUDA_VISIBLE_DEVICES": ""}  # fmt: skip
    proc = subprocess.run([sys.executable, "-m", "kernelzero.cli", "study", "--smoke", "--out", str(out), *args],
                          capture_output=True, text=True, env=env, timeout=600)  # fmt: skip
    assert proc.returncode == code, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def invocations(out: Path) -> list[list[dict]]:
    """stages.jsonl grouped by invocation, in order."""
    groups: dict[str, list[dict]] = {}
    for row in jsonl(out / "stages.jsonl"):
        groups.setdefault(row["invocation"], []).append(row)
    return list(groups.values())


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    root = tmp_path_factory.mktemp("study")
    out = root / "out"
    first = study(out, root / "cache")
    return out, root, first


def test_every_stage_writes_its_outputs_and_the_summary_has_pass_at_1(smoke):
    out, _, proc = smoke
    assert "numbers mean nothing" in proc.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert summary["smoke"] is True and "mean nothing" in summary["note"]
    run = summary["runs"]["main/seed-0"]
    sft, rounds = run["sft"]["pass@1"], run["rounds"]
    assert isinstance(sft, float) and 0.0 <= sft <= 1.0
    assert [r["round"] for r in rounds] == [1]
    assert isinstance(rounds[0]["pass@1"], float) and 0.0 <= rounds[0]["pass@1"] <= 1.0
    assert run["sft"]["fast_1"] is None  # the Triton interpreter does not time: fast_1 is n/a, not 0
    assert summary["arms"]["main"]["seeds"] == [0]

    # corpus: every writer solution judged by the real CPU judge, each verdict recorded
    verdicts = jsonl(out / "corpus" / "verdicts.jsonl")
    kept = jsonl(out / "corpus" / "corpus.jsonl")
    assert len(verdicts) == 4 and all(v["verdict"]["status"] in ("ok", "incorrect", "runtime_error") for v in verdicts)
    assert len(kept) == sum(v["verdict"]["status"] == "ok" for v in verdicts) >= 2
    assert len(jsonl(out / "corpus" / "proposer.jsonl")) >= 2
    # models and SFT: both roles, the stopping rule evaluated the validation loss, the best weights saved
    for role in ("coder", "proposer"):
        assert (out / "seed-0" / "models" / f"{role}-init" / "tokenizer.json").is_file()
        done = json.loads((out / "seed-0" / "sft" / role / "done.json").read_text())
        assert done["steps"] >= 1 and done["evals"] and done["best_eval_loss"] == min(x for _, x in done["evals"])
        assert (out / "seed-0" / "sft" / role / "final" / "model.safetensors").is_file()
    # evaluations: 4 samples of each test task, after SFT and after round 1
    tests = read_corpus(out / "corpus" / "test_tasks.jsonl")
    assert tests and all(is_test_set(t.apis) for t in tests)
    for ev in (out / "seed-0" / "eval-sft", out / "seed-0" / "main" / "eval-round-1"):
        records = jsonl(ev / "verdicts.jsonl")
        assert sorted((r["task"], r["sample"]) for r in records) == sorted((t.name, s) for t in tests for s in range(4))
        meta = json.loads((ev / "summary.json").read_text())["meta"]  # where the evaluation's time went
        assert 0 < meta["generate_s"] <= meta["seconds"]
    # the loop: one finished round of `kernelzero train`, from the cold-started models
    state = json.loads((out / "seed-0" / "main" / "run" / "state.json").read_text())
    assert state["finished"] and state["completed"] == ["r0.proposer", "r0.tasks", "r0.coder", "r0.frontier"]
    # the Proposer's evaluation: two tasks per fixed API set (the smoke's proposer_eval_samples), each validated,
    # after SFT and after the round
    sets = (out / "corpus" / "api_sets.txt").read_text().splitlines()[:2]
    # the loop prompted the Proposer with the sets after those two (the smoke's loop_skips_eval_sets), never them
    trained = {json.dumps(r["apis"]) for r in jsonl(out / "seed-0" / "main" / "run" / "tasks.jsonl")}
    assert trained and not trained & set(sets)
    assert (out / "loop_api_sets.txt").read_text().splitlines()[:2] == (
        out / "corpus" / "api_sets.txt").read_text().splitlines()[2:4]  # fmt: skip
    for ev in (out / "seed-0" / "proposer-eval-sft", out / "seed-0" / "main" / "proposer-eval-round-1"):
        rows = jsonl(ev / "proposals.jsonl")
        assert [json.dumps(r["apis"]) for r in rows] == [s for s in sets for _ in range(2)]
        assert all("reason" in r["validation"] for r in rows)
        peval = json.loads((ev / "summary.json").read_text())
        assert peval["sets"] == 2 and peval["samples_per_set"] == 2 and sum(peval["reasons"].values()) == 4
        assert peval["valid_share"] == sum(r["validation"]["reason"] is None for r in rows) / 4
    assert run["proposer"]["sft"] == json.loads((out / "seed-0" / "proposer-eval-sft" / "summary.json").read_text())[
        "valid_share"] and [r["round"] for r in run["proposer"]["rounds"]] == [1]
    units = jsonl(out / "seed-0" / "main" / "run" / "units.jsonl")  # each unit's wall time, in the order it ran
    assert [u["unit"] for u in units] == state["completed"] and all(u["seconds"] >= 0 for u in units)
    assert sum(u["seconds"] for u in units) > 0
    config = json.loads((out / "seed-0" / "main" / "run" / "config.json").read_text())
    assert config["coder"]["model"].endswith("seed-0/sft/coder/final")
    assert (config["coder"]["gate"]["alpha"], config["coder"]["gate"]["beta"]) == (0.5, 0.1)
    report = (out / "report.md").read_text()
    assert "SMOKE RUN" in report and "| main | 0 |" in report
    assert "valid share on 2 fixed training API sets\n\n2 tasks per set" in report
    term = run["speed_term"]  # the trainer logged both shares at every Coder step: figures, not n/a
    assert 0 <= term["speed_ranked"] <= term["gate_open"] <= 1
    assert f"| main/seed-0 | {100 * term['gate_open']:.1f}% | {100 * term['speed_ranked']:.1f}% |" in report
    for png in ("pass_at_1.png", "training.png"):
        assert (out / "plots" / png).stat().st_size > 1000
    assert [row["stage"] for row in invocations(out)[0]] == STAGES
    assert all(row["action"] == "ran" for row in invocations(out)[0])


def test_no_test_pair_reaches_the_sft_data(smoke):
    out, _, _ = smoke
    tests = {t.name for t in read_corpus(out / "corpus" / "test_tasks.jsonl")}
    for path in (out / "corpus" / "corpus.jsonl", out / "corpus" / "proposer.jsonl",
                 out / "seed-0" / "sft" / "coder" / "pairs.jsonl", out / "seed-0" / "sft" / "proposer" / "pairs.jsonl"):
        check = check_corpus(path)
        assert check.ok and check.rows >= 2, (path, check.leaks)
        assert not tests & {r["task_name"] for r in jsonl(path)}
    splits = {r["split"] for r in jsonl(out / "seed-0" / "sft" / "coder" / "pairs.jsonl")}
    assert splits == {"train", "val"}


def test_a_second_invocation_resumes_and_another_arm_reuses_the_cold_start(smoke):
    out, root, _ = smoke
    again = study(out, root / "cache")
    assert "stage corpus: done earlier" in again.stdout
    second = invocations(out)[1]
    assert [r["stage"] for r in second] == STAGES and all(r["action"] == "skipped" for r in second)

    study(out, root / "cache", "--arm", "frozen_proposer")
    third = invocations(out)[2]
    actions = {r["stage"]: r["action"] for r in third}
    # a frozen Proposer is not evaluated again: it is the one evaluated after SFT
    assert actions == {**dict.fromkeys(STAGES[:7], "skipped"), "loop-frozen_proposer": "ran", "eval-round-1": "ran"}
    run = out / "seed-0" / "frozen_proposer" / "run"
    config = json.loads((run / "config.json").read_text())
    assert config["loop"]["train_proposer"] is False
    assert not (run / "checkpoints" / "round-0" / "proposer").exists()  # the Proposer phase did not train
    state = json.loads((run / "state.json").read_text())
    assert state["models"]["proposer"] is None and state["finished"]
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["runs"]) == {"main/seed-0", "frozen_proposer/seed-0"}

    refused = study(out, root / "cache", "--rounds", "2", code=2)  # other sizes would mix two studies in one table
    assert "other settings (rounds)" in refused.stderr and len(invocations(out)) == 3


def test_a_folder_packed_without_weights_resumes_on_another_machine(smoke, tmp_path):
    out, root, _ = smoke
    archive = tmp_path / "study.tgz"
    proc = study(out, root / "cache", "--pack", str(archive))  # all done here: every stage skipped, then packed
    assert f"packed {out} without weights: {archive}" in proc.stdout
    with tarfile.open(archive) as tar:
        names = tar.getnames()
    assert {"corpus/verdicts.jsonl", "seed-0/eval-sft/summary.json", "seed-0/main/run/state.json",
            "seed-0/sft/coder/done.json", "seed-0/main/start.json"} <= set(names)  # fmt: skip
    assert not [n for n in names if n.endswith((".safetensors", ".bin", ".pt", ".pth")) or "/models" in n
                or "/final" in n or "checkpoint" in n]  # fmt: skip

    elsewhere = tmp_path / "elsewhere"
    unpack(archive, elsewhere)
    again = study(elsewhere, root / "cache")
    actions = {r["stage"]: r["action"] for r in invocations(elsewhere)[-1]}
    # the text stands (corpus, the finished and evaluated loop); the weights are built and trained again
    assert {k: actions[k] for k in ("corpus", "models", "sft-coder", "sft-proposer", "loop-main", "eval-round-1")} == {
        "corpus": "skipped", "models": "ran", "sft-coder": "ran", "sft-proposer": "ran", "loop-main": "skipped",
        "eval-round-1": "skipped"}  # fmt: skip
    assert "holds no weights (the folder came without them): trained again" in again.stdout
    before = json.loads((out / "seed-0" / "sft" / "coder" / "done.json").read_text())
    after = json.loads((elsewhere / "seed-0" / "sft" / "coder" / "done.json").read_text())
    # on CPU, one thread, the same data, seed and settings train the same weights bit for bit: the evaluation after
    # SFT still stands, and the arm started from the weights it evaluated
    assert after["weights"] == before["weights"] and after["reproduced"] is True
    assert actions["eval-sft"] == "skipped" and not (elsewhere / "seed-0" / "retired").exists()
    summary = json.loads((elsewhere / "summary.json").read_text())
    assert summary["runs"]["main/seed-0"]["same_start"] is True
    assert summary["arms"]["main"]["seeds"] == [0]

    # where SFT does not come out the same (told here by recorded digests of other weights, for SFT and for the
    # main arm's start), the evaluation after SFT is retired and run again, and the arm that started from the old
    # weights is left out of the arms table
    other = tmp_path / "other"
    unpack(archive, other)
    done_file = other / "seed-0" / "sft" / "coder" / "done.json"
    done_file.write_text(json.dumps({**json.loads(done_file.read_text()), "weights": "0123456789abcdef"}))
    (other / "seed-0" / "main" / "start.json").write_text(json.dumps({"coder": "0123456789abcdef"}))
    third = study(other, root / "cache")
    assert "reproduced False" in third.stdout and "eval-sft evaluated other weights" in third.stdout
    assert {r["stage"]: r["action"] for r in invocations(other)[-1]}["eval-sft"] == "ran"
    [retired] = (other / "seed-0" / "retired").iterdir()
    assert (retired / "eval-sft" / "verdicts.jsonl").is_file()
    summary = json.loads((other / "summary.json").read_text())
    assert summary["runs"]["main/seed-0"]["same_start"] is False and summary["arms"]["main"]["seeds"] == []
    assert "Left out of the arms table: main/seed-0 started from other" in (other / "report.md").read_text()
