"""Study folders made one per arm and seed (`bench/study_parallel.py`) gathered into one study: what comes from
where, what is refused, and the report read from the merge."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from kernelzero.study.merge import merge, seed_arm_folder
from kernelzero.study.report import collect
from kernelzero.study.weights import needed_weights, pack_weights, resume_checkpoints, run_finished, unpack_weights
from support import eval_summary as _summary


def _folder(root: Path, arm: str, seed: int, sft: float, final: float, weights: str, config: dict | None = None):
    """A study folder of one arm and seed, as a finished invocation leaves it (weights and checkpoints included)."""
    d = root / f"{arm}-s{seed}"
    (d / "corpus").mkdir(parents=True)
    (d / "corpus" / "done.json").write_text("{}")
    (d / "study_config.json").write_text(json.dumps(config or {"rounds": 1}))
    stage = {"arm": arm, "seed": seed, "stage": "x", "action": "ran", "seconds": 1.0}
    (d / "stages.jsonl").write_text(json.dumps(stage) + "\n")
    s = d / f"seed-{seed}"
    _summary(s / "eval-sft", sft, weights=weights)
    for role in ("coder", "proposer"):
        (s / "sft" / role / "final").mkdir(parents=True)
        (s / "sft" / role / "final" / "model.safetensors").write_bytes(b"w" * 64)
        (s / "sft" / role / "checkpoints" / "checkpoint-5").mkdir(parents=True)
        (s / "sft" / role / "done.json").write_text(json.dumps({"weights": weights}))
    (s / "models" / "coder-init").mkdir(parents=True)
    (s / arm / "run" / "checkpoints" / "round-0").mkdir(parents=True)
    (s / arm / "run" / "metrics.jsonl").write_text("")
    (s / arm / "start.json").write_text(json.dumps({"coder": weights, "proposer": "p"}))
    _summary(s / arm / "eval-round-1", final)
    return d


def test_merge_takes_each_run_once_and_the_seeds_sft_from_its_main_run(tmp_path):
    runs = tmp_path / "runs"
    folders = [_folder(runs, "main", 0, 0.1, 0.3, "aaaa"), _folder(runs, "main", 1, 0.2, 0.3, "bbbb"),
               _folder(runs, "correctness_only", 0, 0.1, 0.2, "aaaa")]  # fmt: skip
    taken = merge(folders, tmp_path / "merged")
    m = tmp_path / "merged"
    assert sorted(p.name for p in (m / "seed-0").iterdir()) == ["correctness_only", "eval-sft", "main", "models", "sft"]
    assert "seed-0/eval-sft <- " + str(folders[0]) in taken and not any("correctness_only-s0" in t and "eval-sft" in t
                                                                        for t in taken)  # fmt: skip
    # no weights and no checkpoints travel into the merge; the records do
    assert not list(m.rglob("*.safetensors")) and not list(m.rglob("checkpoint*")) and not list(m.rglob("final"))
    assert (m / "seed-0" / "sft" / "coder" / "done.json").is_file()
    assert len((m / "stages.jsonl").read_text().splitlines()) == 3
    out = collect(m)
    assert out["arms"]["main"]["seeds"] == [0, 1]
    assert out["arms"]["main"]["gain_pass@1"]["mean"] == pytest.approx(0.15)
    assert out["runs"]["correctness_only/seed-0"]["sft"]["pass@1"] == pytest.approx(0.1)


def test_an_arms_own_evaluation_after_sft_of_other_weights_is_set_aside_where_the_report_finds_it(tmp_path):
    runs = tmp_path / "runs"
    folders = [_folder(runs, "main", 0, 0.1, 0.3, "aaaa"), _folder(runs, "always_speed", 0, 0.4, 0.5, "cccc")]
    merge(folders, tmp_path / "merged")
    aside = tmp_path / "merged" / "seed-0" / "retired" / "eval-sft-always_speed-s0" / "eval-sft" / "summary.json"
    assert json.loads(aside.read_text())["meta"]["weights"] == "cccc"
    run = collect(tmp_path / "merged")["runs"]["always_speed/seed-0"]
    assert run["same_start"] is True and run["sft"]["pass@1"] == pytest.approx(0.4)


def test_merge_refuses_two_configs_a_run_twice_and_an_existing_out(tmp_path):
    a = _folder(tmp_path / "a", "main", 0, 0.1, 0.2, "aaaa")
    b = _folder(tmp_path / "b", "main", 1, 0.1, 0.2, "bbbb", config={"rounds": 2})
    with pytest.raises(ValueError, match=r"other settings .*\(rounds\)"):
        merge([a, b], tmp_path / "m1")
    with pytest.raises(ValueError, match="seed-0/main is in two of the folders"):
        merge([a, _folder(tmp_path / "c", "main", 0, 0.1, 0.2, "aaaa")], tmp_path / "m2")
    (tmp_path / "m3").mkdir()
    with pytest.raises(ValueError, match="already exists"):
        merge([a], tmp_path / "m3")


def test_an_arm_starts_from_a_copy_of_its_seeds_sft_once_evaluated(tmp_path):
    main = _folder(tmp_path, "main", 0, 0.1, 0.2, "aaaa")
    dest = tmp_path / "frozen_proposer-s0"
    seed_arm_folder(main, dest, 0)
    assert (dest / "seed-0" / "sft" / "coder" / "final" / "model.safetensors").read_bytes() == b"w" * 64
    assert not list(dest.rglob("checkpoint-*")) and not (dest / "seed-0" / "main").exists()
    assert (dest / "corpus" / "done.json").is_file() and not dest.with_name(dest.name + ".partial").exists()
    with pytest.raises(ValueError, match="seed 1's evaluation after SFT is not done"):
        seed_arm_folder(main, tmp_path / "x", 1)


_BENCH = Path(__file__).parents[2] / "bench"
_SPEC = importlib.util.spec_from_file_location("study_parallel", _BENCH / "study_parallel.py")
study_parallel = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(study_parallel)


def test_the_queue_runner_splits_a_merged_pack_back_into_one_folder_per_run(tmp_path):
    """A fresh machine: the merged pack becomes each run's folder and the weights packed beside it go back in (the
    seed's SFT once, from its main run, copied to the arm), so each study resumes where it stopped."""
    runs = tmp_path / "runs"
    folders = [_folder(runs, "main", 0, 0.1, 0.3, "aaaa"), _folder(runs, "correctness_only", 0, 0.1, 0.2, "aaaa")]
    for f in folders:  # round 0's weights, the Coder's evaluated after round 1, the Proposer's not
        for role in ("coder", "proposer"):
            final = f / "seed-0" / f.name.split("-s")[0] / "run" / "checkpoints" / "round-0" / role / "final"
            final.mkdir(parents=True)
            (final / "model.safetensors").write_bytes(role.encode() * 100)
    out = tmp_path / "out"
    out.mkdir()
    (out / "study-main-s0.log").write_text("log\n")
    assert study_parallel.report(runs, folders, out) == 0
    assert sorted(p.name for p in out.iterdir()) == ["study-logs.tgz", "study.tgz", "weights.tgz.00"]
    root = tmp_path / "fresh"
    study_parallel.split_pack(out / "study.tgz", root, [("main", 0), ("correctness_only", 0)])
    main, other = root / "main-s0" / "seed-0", root / "correctness_only-s0" / "seed-0"
    assert sorted(p.name for p in main.iterdir()) == ["eval-sft", "main", "sft"]
    assert sorted(p.name for p in other.iterdir()) == ["correctness_only", "eval-sft", "sft"]
    assert (root / "correctness_only-s0" / "corpus" / "done.json").is_file()
    for seed_dir, arm in ((main, "main"), (other, "correctness_only")):
        assert (seed_dir / "sft" / "coder" / "final" / "model.safetensors").read_bytes() == b"w" * 64
        round0 = seed_dir / arm / "run" / "checkpoints" / "round-0"
        assert (round0 / "proposer" / "final" / "model.safetensors").read_bytes() == b"proposer" * 100
        assert not (round0 / "coder" / "final").exists()  # evaluated after round 1: no longer needed
    assert not list(root.rglob("checkpoint-*"))


def test_only_the_weights_a_study_still_needs_travel_and_they_come_back_whole(tmp_path):
    d = _folder(tmp_path, "main", 0, 0.1, 0.3, "aaaa")
    run = d / "seed-0" / "main" / "run" / "checkpoints"
    for r in (0, 1):
        for role in ("coder", "proposer"):
            (run / f"round-{r}" / role / "final").mkdir(parents=True)
            (run / f"round-{r}" / role / "final" / "model.safetensors").write_bytes(bytes(range(256)) * (r + 1))
    # round 0: both roles evaluated (the fixture's eval-round-1, and this), so its weights stay; round 1: pending
    _summary(d / "seed-0" / "main" / "proposer-eval-round-1", 0.5)
    assert [str(p) for p in needed_weights(d)] == [
        "seed-0/sft/coder/final", "seed-0/sft/proposer/final", "seed-0/main/run/checkpoints/round-1/coder/final",
        "seed-0/main/run/checkpoints/round-1/proposer/final"]
    items = [(d / rel, f"x/{rel}") for rel in needed_weights(d)]
    parts = pack_weights(items, tmp_path / "w.tgz", part_bytes=200)
    assert len(parts) > 1 and all(p.stat().st_size <= 200 for p in parts)
    assert pack_weights([], tmp_path / "w.tgz") == [] and not list(tmp_path.glob("w.tgz.*"))  # old parts gone
    parts = pack_weights(items, tmp_path / "w.tgz", part_bytes=200)
    unpack_weights(parts[0], tmp_path / "back")
    for rel in needed_weights(d):
        assert (tmp_path / "back" / "x" / rel / "model.safetensors").read_bytes() == (
            d / rel / "model.safetensors").read_bytes()


def test_the_queue_runner_refuses_a_malformed_run_and_an_arm_without_its_seeds_main(tmp_path, capsys):
    with pytest.raises(ValueError, match="ARM:SEED"):
        study_parallel.parse_runs(["main-0"])
    with pytest.raises(ValueError, match="named twice"):
        study_parallel.parse_runs(["main:0", "main:0"])
    for runs, message in ((["always_speed:1"], "needs main:1 in --runs"), (["main-1"], "takes ARM:SEED")):
        with pytest.raises(SystemExit) as exit_:
            study_parallel.main(["--root", str(tmp_path), "--runs", *runs, "--out", str(tmp_path / "o")])
        assert exit_.value.code == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "o").exists()  # refused before anything was written


def _proposer_summary(path: Path, share: float) -> None:
    """A Proposer evaluation's summary.json as `Study.evaluate_proposer` writes it."""
    path.mkdir(parents=True)
    valid = round(64 * share)
    (path / "summary.json").write_text(json.dumps({"valid_share": valid / 64, "sets": 64,
                                                   "reasons": {"valid": valid, "parse": 64 - valid}, "meta": {}}))


def test_the_queue_never_starts_a_run_whose_results_are_all_in_its_folder(tmp_path, capsys):
    """A finished run started again would cost a process start and, its SFT weights left behind, an SFT trained
    again: the queue reads its folder and leaves it be. One result missing (a round's Proposer evaluation, where the
    arm trains it) and it is not finished."""
    d = _folder(tmp_path / "root", "main", 0, 0.1, 0.3, "aaaa")
    seed = d / "seed-0"
    _proposer_summary(seed / "proposer-eval-sft", 0.2)
    (seed / "main" / "run" / "finished.json").write_text("{}")
    assert run_finished(d, "main", False, 0)  # a frozen Proposer has no Proposer evaluation after a round
    assert not run_finished(d, "main", True, 0)
    _proposer_summary(seed / "main" / "proposer-eval-round-1", 0.25)
    assert run_finished(d, "main", True, 0) and not run_finished(d, "main", True, 1)
    out = tmp_path / "o"
    assert study_parallel.main(["--root", str(tmp_path / "root"), "--runs", "main:0", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "main:0: every result is in" in printed and "finished before" in printed and "started main:0" not in printed
    assert (out / "study.tgz").is_file()



def test_the_queue_says_how_far_a_run_cut_inside_its_loop_got(tmp_path):
    """A stage is recorded once it ends, so a call cut inside the loop said only "models ran": the units the loop
    committed and the last step it logged past them tell how far it got."""
    d = tmp_path / "main-s1"
    run = d / "seed-1" / "main" / "run"
    run.mkdir(parents=True)
    (d / "stages.jsonl").write_text(json.dumps({"stage": "models", "action": "ran", "seconds": 0.2}) + "\n"
                                    + json.dumps({"stage": "eval-sft", "action": "skipped", "seconds": 0}) + "\n")
    (run / "units.jsonl").write_text(json.dumps({"unit": "r0.proposer", "seconds": 354.19}) + "\n")
    (run / "metrics.jsonl").write_text("".join(json.dumps({"round": r, "phase": ph, "step": s}) + "\n" for r, ph, s in
                                               [(0, "proposer", 14), (0, "coder", 0), (0, "coder", 2)]))
    assert study_parallel.stage_lines(d) == ["models ran 0s", "loop units r0.proposer 354s",
                                             "last logged: round 0 coder step 2"]
    (run / "finished.json").write_text("{}")
    assert study_parallel.stage_lines(d)[-1] == "loop units r0.proposer 354s"


def _checkpoint(phase: Path, step: int, size: int, complete: bool = True) -> None:
    """A trainer checkpoint as transformers writes it: weights and optimizer state, trainer_state.json last."""
    ckpt = phase / f"checkpoint-{step}"
    ckpt.mkdir(parents=True)
    (ckpt / "model.safetensors").write_bytes(bytes([step]) * size)
    (ckpt / "optimizer.pt").write_bytes(bytes([step + 1]) * 2 * size)
    if complete:
        (ckpt / "trainer_state.json").write_text(json.dumps({"global_step": step}))


def test_a_phase_cut_part_way_travels_as_its_last_whole_checkpoint_where_the_budget_allows(tmp_path, capsys):
    """Seed 0's round-0 Proposer phase was cut after step 4 (its step-6 checkpoint torn by the kill), seed 1's after
    step 2; seed 0's round-0 Coder phase is done (its checkpoints do not travel). With room for one
    checkpoint the furthest goes, the other is named as left out; a fresh machine finds it where the phase resumes."""
    runs = tmp_path / "runs"
    folders = [_folder(runs, "main", 0, 0.1, 0.3, "aaaa"), _folder(runs, "main", 1, 0.1, 0.3, "bbbb")]
    for f, step in zip(folders, (4, 2), strict=True):
        seed = study_parallel.arm_seed(f)[1]
        phases = f / f"seed-{seed}" / "main" / "run" / "checkpoints" / "round-0"
        _checkpoint(phases / "proposer", step, 4000)
        _checkpoint(phases / "proposer", step - 2, 4000)
        _checkpoint(phases / "proposer", step + 2, 4000, complete=False)
    done = folders[0] / "seed-0" / "main" / "run" / "checkpoints" / "round-0" / "coder"
    _checkpoint(done, 8, 4000)
    (done / "final").mkdir()
    (done / "final" / "model.safetensors").write_bytes(b"c" * 100)
    assert [(s, str(p)) for s, p in resume_checkpoints(folders[0])] == [
        (4, "seed-0/main/run/checkpoints/round-0/proposer/checkpoint-4")]
    out = tmp_path / "out"
    out.mkdir()
    assert study_parallel.report(runs, folders, out, budget_mb=20_000 / 2**20) == 0  # room for one of 12,000 bytes
    printed = capsys.readouterr().out
    assert "carried: main-s0/seed-0/main/run/checkpoints/round-0/proposer/checkpoint-4 (step 4" in printed
    assert "left out (over the 0 MiB budget): main-s1/seed-1/main/run/checkpoints/round-0/proposer/checkpoint-2" in (
        printed)
    root = tmp_path / "fresh"
    study_parallel.split_pack(out / "study.tgz", root, [("main", 0), ("main", 1)])
    phase = root / "main-s0" / "seed-0" / "main" / "run" / "checkpoints" / "round-0"
    assert (phase / "proposer" / "checkpoint-4" / "optimizer.pt").read_bytes() == bytes([5]) * 8000
    assert sorted(p.name for p in (phase / "proposer").iterdir()) == ["checkpoint-4"]
    assert not (phase / "coder").exists()  # a finished phase's checkpoints never travel (its final/ evaluated)
    assert not (root / "main-s1" / "seed-1" / "main" / "run" / "checkpoints" / "round-0" / "proposer").exists()
