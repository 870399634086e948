"""A study folder without its weights (`study.weights`): what a pack holds, which loops can go on from their files,
and what the study sets aside (an evaluation of other weights, a loop that cannot go on) and the report leaves out."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

from kernelzero.study.config import StudyConfig
from kernelzero.study.report import collect, render
from kernelzero.study.run import Study
from kernelzero.study.weights import pack, run_needs_lost_weights, unpack, weights_digest


def _weights(folder: Path, data: bytes = b"w") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model.safetensors").write_bytes(data)
    return folder


def _summary(path: Path, pass1: float, weights: str | None = None) -> None:
    path.mkdir(parents=True, exist_ok=True)
    row = {"label": "all", "tasks": 64, "pass": {"1": pass1}, "speed": {}}
    (path / "summary.json").write_text(json.dumps({"rows": [row], "meta": {"weights": weights}}))


def _state(run: Path, completed: list[str], models: dict, finished: bool) -> None:
    run.mkdir(parents=True, exist_ok=True)
    state = {"round": 1, "completed": completed, "models": models, "finished": finished}
    (run / "state.json").write_text(json.dumps(state))


def test_the_digest_covers_the_weights_alone(tmp_path):
    a, b = _weights(tmp_path / "a"), _weights(tmp_path / "b")
    (a / "training_args.bin").write_bytes(b"output_dir=a")  # the trainer's own file differs between two runs
    (b / "training_args.bin").write_bytes(b"output_dir=b")
    assert weights_digest(a) == weights_digest(b) is not None
    _weights(b, b"other")
    assert weights_digest(a) != weights_digest(b)
    assert weights_digest(tmp_path / "empty") is None


def test_a_pack_holds_the_text_and_no_weights(tmp_path):
    out = tmp_path / "study"
    (out / "corpus").mkdir(parents=True)
    (out / "corpus" / "verdicts.jsonl").write_text("{}\n")
    _weights(out / "seed-0" / "models" / "coder-init")
    (out / "seed-0" / "models" / "coder-init" / "tokenizer.json").write_text("{}")
    _weights(out / "seed-0" / "sft" / "coder" / "final")
    (out / "seed-0" / "sft" / "coder" / "done.json").write_text("{}")
    (out / "seed-0" / "sft" / "coder" / "checkpoint-50").mkdir()
    (out / "seed-0" / "sft" / "coder" / "checkpoint-50" / "trainer_state.json").write_text("{}")
    _weights(out / "seed-0" / "main" / "run" / "checkpoints" / "round-0" / "coder" / "final")
    (out / "seed-0" / "main" / "run" / "metrics.jsonl").write_text("{}\n")
    (out / "seed-0" / "main" / "run" / "optimizer.pt").write_bytes(b"state")

    assert pack(out, tmp_path / "s.tgz") > 0
    with tarfile.open(tmp_path / "s.tgz") as tar:
        files = sorted(m.name for m in tar.getmembers() if m.isfile())
    assert files == ["corpus/verdicts.jsonl", "seed-0/main/run/metrics.jsonl", "seed-0/sft/coder/done.json"]
    unpack(tmp_path / "s.tgz", tmp_path / "there")
    assert (tmp_path / "there" / "seed-0" / "sft" / "coder" / "done.json").read_text() == "{}"


def test_which_loops_can_go_on_from_their_files(tmp_path):
    run = tmp_path / "run"
    final = run / "checkpoints" / "round-0" / "coder" / "final"
    assert not run_needs_lost_weights(run, [1])  # never started: it starts from the SFT weights
    _state(run, ["r0.proposer", "r0.tasks", "r0.coder"], {"coder": str(final), "proposer": None}, finished=False)
    assert run_needs_lost_weights(run, [1])  # stopped part-way, its Coder's weights gone
    _weights(final)
    assert not run_needs_lost_weights(run, [1])
    (final / "model.safetensors").unlink()
    _state(run, ["r0.proposer", "r0.tasks", "r0.coder", "r0.frontier"], {"coder": str(final)}, finished=True)
    assert run_needs_lost_weights(run, [1])  # finished, but round 1 is still to evaluate from gone weights
    assert not run_needs_lost_weights(run, [])  # finished and evaluated: the text is all the report needs


def test_a_loop_that_cannot_go_on_is_set_aside_with_its_evaluations(tmp_path):
    study = Study(StudyConfig(rounds=1), tmp_path, arm="main", say=lambda m: None)
    seed = tmp_path / "seed-0"
    run = seed / "main" / "run"
    _state(run, ["r0.proposer"], {"proposer": str(run / "checkpoints" / "round-0" / "proposer" / "final")}, False)
    _summary(seed / "main" / "eval-round-1", 0.3)
    study._retire_lost_run(run)
    assert not (seed / "main").exists()
    [retired] = (seed / "retired").iterdir()
    assert (retired / "main" / "run" / "state.json").is_file() and (retired / "main" / "eval-round-1").is_dir()
    assert "weights were gone" in (retired / "why.txt").read_text()


def test_an_arm_that_started_from_other_weights_is_left_out_of_the_table(tmp_path):
    seed = tmp_path / "seed-0"
    _summary(seed / "eval-sft", 0.1, weights="aaaa")
    for arm, start in (("main", "aaaa"), ("correctness_only", "bbbb")):
        (seed / arm / "run").mkdir(parents=True)
        (seed / arm / "start.json").write_text(json.dumps({"coder": start, "proposer": "cccc"}))
        _summary(seed / arm / "eval-round-1", 0.4)
    summary = {"smoke": False, **collect(tmp_path)}
    assert summary["runs"]["main/seed-0"]["same_start"] is True
    assert summary["runs"]["correctness_only/seed-0"]["same_start"] is False
    assert summary["arms"]["main"]["seeds"] == [0] and summary["arms"]["correctness_only"]["seeds"] == []
    assert "Left out of the arms table: correctness_only/seed-0 started from other SFT weights" in render(summary, [])
