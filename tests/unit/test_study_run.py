"""The study's pure parts: the SFT stopping rule, the validation split, what each arm does to a reward, the
report's mean/spread across seeds, and the command's refusal of bad input before anything heavy is imported."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from kernelzero.judge.verdict import Verdict
from kernelzero.loop.config import RunConfig
from kernelzero.rewards.cagrpo import gated_group_rewards
from kernelzero.rewards.config import GateConfig
from kernelzero.study.config import ARMS, StudyConfig, field_mismatch, pin_config, smoke_config
from kernelzero.study.report import _running_mean, collect, render
from kernelzero.study.run import Study, _VerdictCache
from kernelzero.study.sft import PlateauStop, split
from kernelzero.tasks import Task
from kernelzero.trainers.sft import SolutionPair
from support import eval_summary as _summary

SRC = str(Path(__file__).parents[2] / "src")


def test_sft_stops_after_patience_evaluations_without_a_one_percent_gain():
    stop = PlateauStop(patience=2, min_improvement=0.01)
    control = SimpleNamespace(should_training_stop=False)
    # 9.0 beats 10 by 10%; 8.95 and 8.93 beat 9.0 by less than 1%: the second of them stops training
    for step, loss in enumerate([10.0, 9.0, 8.95, 8.93], start=1):
        assert not control.should_training_stop
        stop.on_evaluate(None, SimpleNamespace(global_step=step * 50), control, metrics={"eval_loss": loss})
    assert control.should_training_stop and stop.stopped_at == 200 and stop.best == 9.0
    assert [x for _, x in stop.history] == [10.0, 9.0, 8.95, 8.93]


def test_a_resumed_sft_replays_the_evaluations_of_its_checkpoint():
    stop = PlateauStop(patience=2, min_improvement=0.01)
    control = SimpleNamespace(should_training_stop=False)
    state = SimpleNamespace(log_history=[{"step": 50, "eval_loss": 10.0}, {"step": 50, "loss": 11.0},
                                         {"step": 100, "eval_loss": 9.99}], global_step=150)  # fmt: skip
    stop.on_train_begin(None, state, control)
    assert stop.history == [(50, 10.0), (100, 9.99)] and stop.bad == 1
    stop.on_evaluate(None, state, control, metrics={"eval_loss": 9.98})  # the second evaluation without a 1% gain
    assert control.should_training_stop and stop.stopped_at == 150


def test_a_real_gain_resets_the_patience():
    stop = PlateauStop(patience=2, min_improvement=0.01)
    control = SimpleNamespace(should_training_stop=False)
    for step, loss in enumerate([10.0, 9.95, 9.0, 8.99], start=1):
        stop.on_evaluate(None, SimpleNamespace(global_step=step), control, metrics={"eval_loss": loss})
    assert not control.should_training_stop and stop.bad == 1


def test_the_validation_split_is_seeded_disjoint_and_never_empty():
    pairs = [SolutionPair(Task(name=f"t{i}", source="x"), "y") for i in range(10)]
    train, val = split(pairs, 0.2, seed=0)
    assert len(val) == 2 and len(train) == 8 and {p.task.name for p in train}.isdisjoint(p.task.name for p in val)
    assert split(pairs, 0.2, seed=0) == (train, val) and split(pairs, 0.2, seed=1) != (train, val)
    assert [len(x) for x in split(pairs[:2], 0.01, seed=0)] == [1, 1]


def test_each_arm_changes_the_coder_reward_as_named():
    """One correct rollout of four (acc 0.25) with speedup 2: only the gateless arm pays for speed; with three of
    four correct, main pays and correctness_only does not."""
    def rewards(arm, correct):
        a = ARMS[arm]
        return gated_group_rewards(correct, [2.0] * len(correct), GateConfig(alpha=a.alpha, beta=a.beta))

    low, high = [True, False, False, False], [True, True, True, False]
    assert rewards("main", low)[0] == 1.0 and rewards("always_speed", low)[0] == pytest.approx(1.2)
    assert rewards("main", high)[0] == pytest.approx(1.2) and rewards("correctness_only", high)[0] == 1.0
    assert rewards("frozen_proposer", high) == rewards("main", high)
    assert [a.train_proposer for a in ARMS.values()] == [True, True, True, False]


def test_report_takes_mean_and_spread_over_seeds(tmp_path):
    for seed, (sft, r1, r2) in enumerate([(0.2, 0.3, 0.5), (0.3, 0.3, 0.4)]):
        d = tmp_path / f"seed-{seed}"
        _summary(d / "eval-sft", sft)
        (d / "main" / "run").mkdir(parents=True)
        _summary(d / "main" / "eval-round-1", r1)
        _summary(d / "main" / "eval-round-2", r2)
    out = collect(tmp_path)
    assert [r["pass@1"] for r in out["runs"]["main/seed-1"]["rounds"]] == [0.3, 0.4]
    arm = out["arms"]["main"]
    assert arm["seeds"] == [0, 1]
    assert arm["final_pass@1"]["mean"] == pytest.approx(0.45) and arm["final_pass@1"]["spread"] == pytest.approx(0.1)
    assert arm["gain_pass@1"]["mean"] == pytest.approx(0.2) and arm["gain_exceeds_spread"]
    assert arm["gain_pass@1"]["spread"] == pytest.approx(0.2)
    assert arm["final_fast_1"]["mean"] == pytest.approx(0.225)
    assert arm["vs_main"] == {"diff": 0.0, "counts": False}


def test_seeds_that_start_apart_and_gain_alike_pass_the_paired_rule_only(tmp_path):
    """SFT starts 15 points apart, the seeds gaining 10 and 15 points: the spreads after SFT and after RL exceed the
    mean gain (strict: no), the seeds' own gains differ by 5 points (paired: yes)."""
    for seed, (sft, final) in enumerate([(0.05, 0.15), (0.20, 0.35)]):
        d = tmp_path / f"seed-{seed}"
        _summary(d / "eval-sft", sft)
        (d / "main" / "run").mkdir(parents=True)
        _summary(d / "main" / "eval-round-1", final)
    out = collect(tmp_path)
    arm = out["arms"]["main"]
    assert arm["gain_pass@1"]["mean"] == pytest.approx(0.125) and arm["gain_pass@1"]["spread"] == pytest.approx(0.05)
    assert not arm["gain_exceeds_spread"] and arm["gain_exceeds_gain_spread"]
    row = "| main | 0,1 | 12.5% (spread 15.0) | 25.0% (spread 20.0) | 12.5% (spread 5.0) | no | yes |"
    assert row in render({"smoke": False, **out}, [])


def test_an_arm_is_measured_against_the_evaluation_of_the_weights_it_started_from(tmp_path):
    """Seed 0's SFT trained again on another machine without reproducing: its first evaluation was retired and a
    new one made. The arm that ran on the first machine still compares with the first (found by digest, in
    retired/), the arm started on the second machine with the second; an arm whose start matches neither is left
    out of the table."""
    d = tmp_path / "seed-0"
    _summary(d / "retired" / "eval-sft-20261206T020000" / "eval-sft", 0.1, weights="aaaa")
    _summary(d / "eval-sft", 0.3, weights="bbbb")
    for arm, start, final in (("main", "aaaa", 0.2), ("correctness_only", "bbbb", 0.35), ("always_speed", "cccc", 0.5)):
        (d / arm / "run").mkdir(parents=True)
        (d / arm / "start.json").write_text(json.dumps({"coder": start, "proposer": "p"}))
        _summary(d / arm / "eval-round-1", final)
    out = collect(tmp_path)
    main, other, lost = (out["runs"][f"{a}/seed-0"] for a in ("main", "correctness_only", "always_speed"))
    assert main["sft"]["pass@1"] == pytest.approx(0.1) and main["same_start"] is True
    assert other["sft"]["pass@1"] == pytest.approx(0.3) and other["same_start"] is True
    assert lost["same_start"] is False and out["arms"]["always_speed"]["seeds"] == []
    assert out["arms"]["main"]["gain_pass@1"]["mean"] == pytest.approx(0.1)


def test_one_seed_never_counts_as_beating_the_spread(tmp_path):
    d = tmp_path / "seed-0"
    _summary(d / "eval-sft", 0.1)
    for arm, final in (("main", 0.6), ("frozen_proposer", 0.2)):
        (d / arm / "run").mkdir(parents=True)
        _summary(d / arm / "eval-round-1", final)
    arms = collect(tmp_path)["arms"]
    assert arms["main"]["gain_pass@1"]["mean"] == pytest.approx(0.5) and not arms["main"]["gain_exceeds_spread"]
    assert not arms["main"]["gain_exceeds_gain_spread"]
    assert arms["frozen_proposer"]["vs_main"]["diff"] == pytest.approx(-0.4)
    assert not arms["frozen_proposer"]["vs_main"]["counts"]


def test_the_proposer_valid_share_takes_the_same_rules_and_training_halves(tmp_path):
    """Two seeds' Proposers on the fixed sets: 20% -> 30% and 40% -> 48% (gains 10 and 8 points: paired yes; the
    starts 20 points apart: strict no). A frozen Proposer has no rounds and no row. The trainer's own figures come
    per round as the means of the first and second half of its steps."""
    def proposer_eval(path, share):
        path.mkdir(parents=True)
        (path / "summary.json").write_text(json.dumps({"valid_share": share, "sets": 64, "samples_per_set": 4}))

    for seed, (sft, final) in enumerate([(0.2, 0.3), (0.4, 0.48)]):
        d = tmp_path / f"seed-{seed}"
        _summary(d / "eval-sft", 0.1)
        proposer_eval(d / "proposer-eval-sft", sft)
        for arm in ("main", "frozen_proposer"):
            (d / arm / "run").mkdir(parents=True)
            _summary(d / arm / "eval-round-1", 0.2)
        proposer_eval(d / "main" / "proposer-eval-round-1", final)
    steps = [(0, 0, 0.25, -0.4), (0, 2, 0.75, -0.2), (0, 4, 0.5, -0.1), (1, 0, 0.0, -0.5)]
    (tmp_path / "seed-0" / "main" / "run" / "metrics.jsonl").write_text("".join(
        json.dumps({"round": r, "phase": "proposer", "step": s, "proposer/valid_share": v, "proposer/reward_mean": w})
        + "\n" for r, s, v, w in steps) + json.dumps({"round": 0, "phase": "coder", "step": 0}) + "\n")
    out = collect(tmp_path)
    rule = out["arms"]["main"]["proposer"]
    assert rule["seeds"] == [0, 1] and "proposer" not in out["arms"]["frozen_proposer"]
    assert rule["gain"]["mean"] == pytest.approx(0.09) and rule["gain"]["spread"] == pytest.approx(0.02)
    assert rule["exceeds_gain_spread"] and not rule["exceeds_spread"]
    halves = out["runs"]["main/seed-0"]["proposer_training"]
    assert halves["0"]["steps"] == 3 and halves["0"]["first_valid_share"] == pytest.approx(0.5)
    assert halves["0"]["second_valid_share"] == pytest.approx(0.5) and halves["0"]["second_reward_mean"] == -0.1
    assert halves["1"] == {"steps": 1, "first_valid_share": 0.0, "first_reward_mean": -0.5,
                           "second_valid_share": None, "second_reward_mean": None}
    text = render({"smoke": False, **out}, [])
    assert "| main | 0,1 | 30.0% (spread 20.0) | 39.0% (spread 18.0) | 9.0% (spread 2.0) | no | yes |" in text
    assert "| main/seed-0 | 1 | 1 | 0.0% | n/a | -0.500 | n/a |" in text


def test_study_config_names_bad_fields():
    with pytest.raises(ValueError, match="StudyConfig.device"):
        StudyConfig(device="tpu")
    with pytest.raises(ValueError, match="StudyConfig.prompts must be one of full, brief"):
        StudyConfig(prompts="short")
    with pytest.raises(ValueError, match="prompts must be one of full, brief"):
        RunConfig(prompts="short")
    with pytest.raises(ValueError, match="StudyConfig.sft_scheduler must be one of constant_with_warmup, cosine"):
        StudyConfig(sft_scheduler="linear")
    with pytest.raises(ValueError, match="StudyConfig.sft_keep must be one of best, last"):
        StudyConfig(sft_keep="final")


@pytest.mark.parametrize("scheduler, keep", [("constant_with_warmup", "best"), ("cosine", "last")])
def test_sft_trains_with_the_configured_schedule_and_keeps_the_configured_weights(tmp_path, monkeypatch, scheduler,
                                                                                   keep):  # fmt: skip
    """The schedule and which weights are kept are SFT fields: the trainer gets them, and a study with others is
    another SFT. `last` never stops on a plateau and does not load the lowest-loss checkpoint at the end."""
    import kernelzero.study.sft as sft
    from kernelzero.study.config import SFT_FIELDS

    seen = {}

    def fake_run_sft(cfg, train, eval_pairs, callbacks, prompt_fn):
        seen.update(cfg.sft_overrides, n_train=len(train), n_val=len(eval_pairs))
        (stop,) = callbacks
        seen["stops"] = [stop.see(step, 1.0) for step in range(1, 11)][-1]  # ten evaluations without a gain
        (tmp_path / "out" / "final").mkdir(parents=True)
        (tmp_path / "out" / "final" / "model.safetensors").write_bytes(b"w")
        return SimpleNamespace(global_step=4, final_model_dir=tmp_path / "out" / "final")

    monkeypatch.setattr(sft, "run_sft", fake_run_sft)
    rows = [{"task_name": f"t{i}", "task_source": "x", "apis": ["relu"], "solution": "y"} for i in range(10)]
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    config = StudyConfig(device="cpu", sft_scheduler=scheduler, sft_keep=keep, sft_max_steps=300)
    sft.sft_role("coder", tmp_path, tmp_path / "init", tmp_path / "out", config, 0, lambda _: None)
    assert seen["lr_scheduler_type"] == scheduler and seen["warmup_steps"] == 30
    assert seen["load_best_model_at_end"] is (keep == "best") and seen["stops"] is (keep == "best")
    assert (seen["n_train"], seen["n_val"]) == (9, 1) and {"sft_scheduler", "sft_keep"} <= set(SFT_FIELDS)


@pytest.mark.parametrize("prompts", ["brief", "full"])
def test_the_loop_of_a_study_uses_its_prompt_style(tmp_path, prompts):
    """SFT, the evaluation and the loop read one style: a Coder cold-started on brief prompts and trained by GRPO on
    full ones would see text it was never trained on."""
    config = StudyConfig(device="cpu", prompts=prompts)
    assert Study(config, tmp_path).run_config(tmp_path / "corpus").prompts == prompts
    assert StudyConfig().prompts == smoke_config().prompts == "brief" and RunConfig().prompts == "full"


@pytest.mark.parametrize("args, message", [(["--arm", "nope"], "--arm must be one of main"),
                                           (["--out", "FILE"], "not a folder"),
                                           (["--pack", "o.zip"], "--pack o.zip: give a file name")])  # fmt: skip
def test_bad_input_is_one_line_and_exit_2_before_torch(tmp_path, args, message):
    (tmp_path / "f").write_text("")
    args = [str(tmp_path / "f") if a == "FILE" else a for a in args]
    code = ("import sys; from kernelzero.cli import main; rc = main(['study', *sys.argv[1:]]); "
            "print('torch' in sys.modules); sys.exit(rc)")  # fmt: skip
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          env={"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"})  # fmt: skip
    assert proc.returncode == 2 and proc.stdout.strip() == "False"
    assert proc.stderr.count("\n") == 1 and message in proc.stderr


def test_the_corpus_judge_reuses_recorded_verdicts_after_a_kill(tmp_path):
    calls, kill_after = [], [None]

    class Pool:
        def imap(self, requests):  # every request in flight at once, verdicts yielded in order
            calls.append([t.name for t, _, _ in requests])
            for n, (t, _, b) in enumerate(requests):
                if n == kill_after[0]:
                    raise KeyboardInterrupt
                yield Verdict(status="ok", correct=True, backend=b, device="cpu", task=t.name)

    requests = [(Task(name=f"t{i}", source="x"), f"solution {i}", "triton") for i in range(4)]
    with _VerdictCache(tmp_path / "verdicts.jsonl", Pool, lambda m: None) as cache:
        first = cache.judge_many(requests[:2])
    kill_after[0] = 1  # killed once t2's verdict is in: it is on disk, t3 is judged again
    with pytest.raises(KeyboardInterrupt), _VerdictCache(tmp_path / "verdicts.jsonl", Pool, lambda m: None) as cache:
        cache.judge_many(requests)
    kill_after[0] = None
    with _VerdictCache(tmp_path / "verdicts.jsonl", Pool, lambda m: None) as cache:
        again = cache.judge_many(requests)
    assert calls == [["t0", "t1"], ["t2", "t3"], ["t3"]] and [v.task for v in again] == ["t0", "t1", "t2", "t3"]
    assert [v.to_dict() for v in again[:2]] == [v.to_dict() for v in first]
    changed = [(requests[0][0], "another solution", "triton")]  # same task, other source: judged, not reused
    with _VerdictCache(tmp_path / "verdicts.jsonl", Pool, lambda m: None) as cache:
        cache.judge_many(changed)
    assert calls[-1] == ["t0"]
    # a kill in the middle of a line: that verdict is judged again, and the next appends stay readable
    path = tmp_path / "verdicts.jsonl"
    whole = path.read_bytes()
    path.write_bytes(whole[: whole.rstrip(b"\n").rfind(b"\n") + 1] + b'{"task": "t0", "solu')
    with _VerdictCache(path, Pool, lambda m: None) as cache:
        cache.judge_many(changed + requests[3:])
    assert calls[-1] == ["t0"] and len(path.read_text().splitlines()) == 5  # t0..t3, then the other t0 again
    judged = len(calls)
    with _VerdictCache(path, Pool, lambda m: None) as cache:
        cache.judge_many(changed + requests[3:])
    assert len(calls) == judged  # both on disk and read back: nothing judged


def test_the_training_curves_running_mean_covers_the_last_steps_only():
    assert _running_mean([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], 3) == [1.0, 1.5, 2.0, 3.0, 4.0, 5.0]
    assert _running_mean([], 5) == []


def test_every_stage_judges_speed_against_eager_only(tmp_path):
    study = Study(StudyConfig(device="cpu", judge_trials=2), tmp_path)
    options = study.judge_options()
    assert options.compile_baseline is False and options.trials == 2 and options.device == "cpu"
    assert study.run_config(tmp_path / "corpus").judge == options  # the loop's judge is the same
    assert options.timing is True and study.judge_options(timed=False).timing is False  # the corpus: `ok` alone


def test_the_corpus_pool_is_untimed_and_the_next_stage_gets_a_timed_one(monkeypatch, tmp_path):
    from kernelzero.judge import pool as pool_mod

    made = []

    class Pool:
        def __init__(self, options, workers=None, slots_per_gpu=None):
            made.append((options.timing, slots_per_gpu))
            self.closed = False

        def close(self, wait=True, kill=False):
            self.closed = True

    monkeypatch.setattr(pool_mod, "JudgePool", Pool)
    study = Study(StudyConfig(device="cpu", judge_slots=8), tmp_path)
    corpus = study.judge(timed=False)
    assert study.judge(timed=False) is corpus and made == [(False, 8)]  # one pool for the whole corpus stage
    evaluations = study.judge()
    assert corpus.closed and evaluations is not corpus and made == [(False, 8), (True, 8)]
    assert study.run_config(tmp_path / "corpus").judge_slots == 8  # the loop's pool gets the same slots


def test_a_field_added_since_a_study_began_keeps_it_resumable_at_its_default(tmp_path):
    """A folder pinned before a field existed (its study_config.json lacks it) resumes under a config holding that
    field at its default, and is refused, naming the field, when the config sets it otherwise."""
    pin_config(tmp_path, StudyConfig(device="cpu"))
    path = tmp_path / "study_config.json"
    older = json.loads(path.read_text())
    del older["proposer_eval_sets"]  # as a folder started before that field was written
    path.write_text(json.dumps(older))
    pin_config(tmp_path, StudyConfig(device="cpu"))  # the default: the same study
    with pytest.raises(ValueError, match=r"other settings \(proposer_eval_sets\)"):
        pin_config(tmp_path, StudyConfig(device="cpu", proposer_eval_sets=16))
    with pytest.raises(ValueError, match=r"other settings \(rounds\)"):
        pin_config(tmp_path, StudyConfig(device="cpu", rounds=5))


def test_a_study_resumes_with_other_judge_slots_and_workers_but_not_other_sizes(tmp_path):
    """How fast the judges work is not the study: other slots and workers resume it, the file keeps the first."""
    pin_config(tmp_path, StudyConfig(device="cpu", judge_slots=8))
    pin_config(tmp_path, StudyConfig(device="cpu", judge_slots=16, judge_workers=3))
    assert json.loads((tmp_path / "study_config.json").read_text())["judge_slots"] == 8
    with pytest.raises(ValueError, match=r"other settings \(coder_steps\)"):
        pin_config(tmp_path, StudyConfig(device="cpu", judge_slots=16, coder_steps=99))


def _finished_corpus(folder: Path, config: StudyConfig) -> None:
    pin_config(folder, config)
    (folder / "corpus").mkdir()
    (folder / "corpus" / "done.json").write_text('{"kept": 3}')
    (folder / "corpus" / "corpus.jsonl").write_text('{"task_name": "t0"}\n')


@pytest.mark.parametrize("as_pack", [False, True])
def test_a_new_study_can_start_from_another_studys_corpus(tmp_path, monkeypatch, as_pack):
    """The corpus costs the most device minutes of a study and depends only on its corpus fields: a study whose
    loop sizes differ starts from it (a folder or a pack), one whose tasks differ is refused, naming the field."""
    from kernelzero.cli import main
    from kernelzero.study.weights import pack

    old = tmp_path / "old"
    _finished_corpus(old, smoke_config())
    source = old
    if as_pack:
        source = tmp_path / "old.tgz"
        pack(old, source)
    seen = {}

    def run(self):
        seen["corpus"] = (self.out / "corpus" / "corpus.jsonl").read_text()
        return {"runs": {}}

    monkeypatch.setattr(Study, "run", run)
    new = tmp_path / "new"
    assert main(["study", "--smoke", "--rounds", "2", "--corpus-from", str(source), "--out", str(new)]) == 0
    assert seen["corpus"] == '{"task_name": "t0"}\n'
    assert json.loads((new / "study_config.json").read_text())["rounds"] == 2
    (new / "corpus" / "corpus.jsonl").write_text("resumed\n")  # a rerun of the same command resumes its own corpus
    assert main(["study", "--smoke", "--rounds", "2", "--corpus-from", str(source), "--out", str(new)]) == 0
    assert seen["corpus"] == "resumed\n"
    other = tmp_path / "other.yaml"
    other.write_text("train_tasks: 5\n")
    assert main(["study", "--smoke", "-c", str(other), "--corpus-from", str(source), "--out", str(tmp_path / "x")]) == 2
    assert not (tmp_path / "x").exists()  # refused before anything was written
    assert field_mismatch(json.loads((old / "study_config.json").read_text()), replace(smoke_config(), train_tasks=5,
                                                                                           rounds=3)) == ["train_tasks"]


def test_the_loop_trains_on_training_tasks_that_no_sft_example_holds(tmp_path):
    """The Coder phases draw from the family's training tasks after the corpus's: none is a corpus task (RL would
    replay SFT data), none holds a test pair, and the loop's config reads exactly that list."""
    from kernelzero.study import family
    from kernelzero.tasks import read_corpus

    config = replace(smoke_config(), train_tasks=16, loop_tasks=32)
    study = Study(config, tmp_path, say=lambda m: None)
    study.write_loop_tasks(tmp_path / "loop_tasks.jsonl")
    loop = read_corpus(tmp_path / "loop_tasks.jsonl")
    corpus = {t.name for t in family.train_tasks(16, config=config.family)}
    assert len(loop) == 32 and not corpus & {t.name for t in loop}
    assert not any(family.is_test_set(t.apis) for t in loop)
    assert Study(config, tmp_path).run_config(tmp_path / "corpus").loop.seed_tasks == str(tmp_path / "loop_tasks.jsonl")


def test_mu_multiplies_the_updates_not_the_judged_batches(tmp_path):
    """coder_steps and proposer_steps count judged batches; with GRPO's mu = 2 each feeds two optimizer steps, and
    the warm-up (in judged batches) spans the same batches."""
    config = replace(StudyConfig(device="cpu"), coder_steps=12, proposer_steps=4, rl_iterations=2, rl_warmup_steps=2)
    run = Study(config, tmp_path).run_config(tmp_path / "corpus")
    assert (run.coder.max_steps, run.proposer.max_steps) == (24, 8)
    assert run.coder.grpo_overrides == run.proposer.grpo_overrides == {"num_iterations": 2, "warmup_steps": 4}
    with pytest.raises(ValueError, match="StudyConfig.rl_iterations must be >= 1"):
        replace(config, rl_iterations=0)


def test_the_loop_samples_at_the_evaluations_temperature(tmp_path):
    """One sampling temperature for the study: what the evaluations sample is the policy RL trained."""
    run = Study(replace(StudyConfig(device="cpu"), eval_temperature=0.7), tmp_path).run_config(tmp_path / "corpus")
    assert (run.coder.temperature, run.proposer.temperature, run.loop.temperature) == (0.7, 0.7, 0.7)
    assert run.coder.to_grpo_config([1.0, 0.1]).temperature == 0.7


def test_the_coder_pass_rate_on_the_same_tasks_compares_each_tasks_first_and_last_step(tmp_path):
    """Step pass rates move with the tasks a step drew; the report pairs each task with itself: its first and last
    Coder step within a round, over tasks drawn twice or more (a task drawn once, and other phases, are left out)."""
    from kernelzero.loop.records import VERDICTS_FILE, VerdictRecord
    from kernelzero.loop.runlog import KeyedLog
    from kernelzero.roles.coder import Judged

    log = KeyedLog(tmp_path / VERDICTS_FILE)
    # round 0: task a 1/4 then 3/4 correct, task b 2/4 then 4/4, task c once (left out); round 1: a 2/4 then 2/4;
    # an l(m) sample in the proposer phase (left out)
    script = [(0, "coder", 0, "a", 1), (0, "coder", 3, "a", 3), (0, "coder", 1, "b", 2), (0, "coder", 5, "b", 4),
              (0, "coder", 2, "c", 0), (1, "coder", 0, "a", 2), (1, "coder", 4, "a", 2), (0, "proposer", 0, "a", 0)]
    for r, phase, step, task, ok in script:
        for i in range(4):
            v = Verdict(status="ok", correct=True) if i < ok else Verdict.fail("incorrect", "off")
            rec = VerdictRecord.of((r, phase, step, i), Task(name=task, source="x"), Judged("c", "code", v), "triton")
            log.append(rec.key, rec.to_dict())
    from kernelzero.study.report import coder_same_tasks

    same = coder_same_tasks(tmp_path)
    assert same == {"0": {"tasks": 2, "first": pytest.approx(0.375), "last": pytest.approx(0.875)},
                    "1": {"tasks": 1, "first": 0.5, "last": 0.5}}  # fmt: skip
    assert coder_same_tasks(tmp_path / "nothing") == {}


def test_the_report_counts_the_coders_rejected_rollouts_by_guard(tmp_path):
    """A guard misfiring on honest kernels reads to GRPO as a reward of 0, and in an evaluation as a test sample
    failed: the report lists, per run, the Coder phases' rollouts, correct ones and rejections by guard (the Proposer
    phase's l(m) samples left out), and its evaluations' samples and rejections."""
    from kernelzero.loop.records import VERDICTS_FILE, VerdictRecord
    from kernelzero.loop.runlog import KeyedLog
    from kernelzero.roles.coder import Judged
    from kernelzero.study.report import coder_rejections, render

    log = KeyedLog(tmp_path / VERDICTS_FILE)
    verdicts = [("coder", Verdict(status="ok", correct=True)), ("coder", Verdict(status="ok", correct=True)),
                ("coder", Verdict.fail("rejected", "kept outputs", guard="fresh_inputs")),
                ("coder", Verdict.fail("rejected", "torch op", guard="no_custom_kernel")),
                ("coder", Verdict.fail("rejected", "torch op", guard="no_custom_kernel")),
                ("coder", Verdict.fail("incorrect", "off")),
                ("proposer", Verdict.fail("rejected", "side", guard="side_stream"))]  # fmt: skip
    for i, (phase, v) in enumerate(verdicts):
        rec = VerdictRecord.of((0, phase, 0, i), Task(name="t", source="x"), Judged("c", "code", v), "triton")
        log.append(rec.key, rec.to_dict())
    got = coder_rejections(tmp_path)
    assert got == {"rollouts": 6, "correct": 2, "rejected": {"no_custom_kernel": 2, "fresh_inputs": 1}}
    assert coder_rejections(tmp_path / "nothing") == {}
    # the evaluations' test samples: one rejected after SFT, none after round 1, a folder not yet evaluated
    from kernelzero.eval.evaluate import VERDICTS, EvalRecord
    from kernelzero.study.report import eval_rejections

    after_sft = [Verdict.fail("rejected", "side", guard="side_stream"), Verdict.fail("incorrect", "off")]
    for name, vs in (("eval-sft", after_sft), ("eval-round-1", [Verdict(status="ok", correct=True)] * 3)):
        (tmp_path / name).mkdir()
        lines = [EvalRecord("t", None, i, 1, "code", v).to_json() + "\n" for i, v in enumerate(vs)]
        (tmp_path / name / VERDICTS).write_text("".join(lines))
    evals = eval_rejections([tmp_path / "eval-sft", tmp_path / "eval-round-1", tmp_path / "eval-round-2"])
    assert evals == {"samples": 5, "rejected": {"side_stream": 1}}
    runs = {"main/seed-0": {"sft": None, "rounds": [], "proposer": {}, "coder_rejections": got,
                            "eval_rejections": evals},
            "main/seed-1": {"sft": None, "rounds": [], "proposer": {}, "coder_rejections": {}}}  # fmt: skip
    text = render({"smoke": False, "runs": runs, "arms": {}}, [])
    assert "| main/seed-0 | 6 | 2 | no_custom_kernel 2, fresh_inputs 1 | 5 | side_stream 1 |" in text
    assert "| main/seed-1 |" not in text.split("## The judge's rejections")[1].split("##")[0]  # nothing recorded


@pytest.mark.parametrize(("name", "hidden"), [("study_h200.yaml", 128), ("study_h200_v3.yaml", 128),
                                             ("study_h200_v4.yaml", 512)])  # fmt: skip
def test_the_shipped_gpu_config_loads_and_can_start_from_the_committed_corpus(name, hidden):
    """A typo in a GPU study's config would cost a device call to find: it loads into a valid StudyConfig, and its
    corpus fields match the committed GPU-judged corpus, so `--corpus-from` takes it instead of judging again."""
    from kernelzero.loop.config import merge, read_config_file
    from kernelzero.study.weights import corpus_source

    root = Path(__file__).parents[2]
    cfg = merge(StudyConfig(), read_config_file(root / "configs" / name))
    assert cfg.models.shape.hidden_size == hidden and cfg.coder_batch % cfg.rl_generations == 0
    with corpus_source(root / "bench" / "results" / "study_h100_d1bb4a6.tgz") as (theirs, corpus):
        assert field_mismatch(theirs, cfg) == []
        assert (corpus / "corpus.jsonl").is_file()


def test_the_shipped_gpu_config_still_resumes_the_study_under_way(tmp_path):
    """Seeds 0 and 1 of the GPU study ran under configs/study_h200.yaml as committed then (the queue's pack): the
    config as it is now must pin to the same study, or the next device session's resume is refused at its first
    call. A new StudyConfig field passes only at the default that study ran with."""
    import tarfile

    from kernelzero.loop.config import merge, read_config_file

    root = Path(__file__).parents[2]
    with tarfile.open(root / "bench" / "results" / "study_h100_f9025fb_queue.tgz") as tar:
        tar.extract("study_config.json", tmp_path, filter="data")
    cfg = merge(StudyConfig(), read_config_file(root / "configs" / "study_h200.yaml"))
    pin_config(tmp_path, cfg)  # raises ValueError, naming the fields, on any other setting
    with pytest.raises(ValueError, match="proposer_eval_samples"):
        pin_config(tmp_path, replace(cfg, proposer_eval_samples=4))


def test_the_speed_term_figures_are_the_trainers_logged_shares(tmp_path):
    """The report's 'where the speed term could act': means over the Coder's logged steps, a NaN step left out;
    a run from before the metric has none (n/a in the report), never a 0 that would read as a measurement."""
    from kernelzero.study.report import render, speed_term

    steps = [(0.5, 0.25), (1.0, 0.0), (float("nan"), float("nan"))]  # (gate open, speed-ranked) per Coder step
    rows = [{"key": [0, "coder", i, 0], "phase": "coder", "coder/gate_open_share": g, "coder/speed_ranked_share": r}
            for i, (g, r) in enumerate(steps)] + [{"key": [0, "proposer", 0, 0], "proposer/valid_share": 0.5}]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert speed_term(tmp_path) == {"gate_open": pytest.approx(0.75), "speed_ranked": pytest.approx(0.125)}
    assert speed_term(tmp_path / "before") == {"gate_open": None, "speed_ranked": None}
    runs = {"main/seed-0": {"sft": None, "rounds": [], "proposer": {}, "speed_term": speed_term(tmp_path)},
            "main/seed-1": {"sft": None, "rounds": [], "proposer": {}, "speed_term": speed_term(tmp_path / "x")}}
    text = render({"smoke": False, "runs": runs, "arms": {}}, [])
    assert "| main/seed-0 | 75.0% | 12.5% |" in text and "| main/seed-1 | n/a | n/a |" in text


def test_the_proposer_phase_may_draw_more_api_sets_than_the_task_batch_and_skip_the_evaluations(tmp_path):
    """proposer_sets_per_round widens the Proposer phase's prompts without widening the task batch or the Coder's
    share of proposed tasks; loop_skips_eval_sets starts the loop's sets after the Proposer evaluation's, so that
    evaluation asks for sets RL never prompted. Without either, the loop reads the corpus's sets as before."""
    from kernelzero.curriculum.proposals import read_api_sets

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    sets = [[f"op.a{i}", f"op.b{i}"] for i in range(100)]
    (corpus / "api_sets.txt").write_text("".join(json.dumps(s) + "\n" for s in sets))
    before = Study(replace(StudyConfig(device="cpu"), api_sets_per_round=8), tmp_path).run_config(corpus).loop
    assert (before.api_sets, before.api_sets_per_round, before.tasks_per_round) == (str(corpus / "api_sets.txt"), 8, 8)
    config = replace(StudyConfig(device="cpu"), api_sets_per_round=8, proposer_sets_per_round=32,
                     loop_skips_eval_sets=True, proposer_eval_sets=64)  # fmt: skip
    study = Study(config, tmp_path)
    loop = study.run_config(corpus).loop
    assert (loop.api_sets_per_round, loop.tasks_per_round, loop.hard_per_round, loop.coder_tasks_max) == (32, 8, 2, 32)
    assert loop.api_sets == str(tmp_path / "loop_api_sets.txt")
    study.write_loop_api_sets(corpus)  # what the loop stage does before the loop starts
    assert [list(s) for s in read_api_sets(loop.api_sets)] == sets[64:]
    with pytest.raises(ValueError, match="proposer_sets_per_round must be >= api_sets_per_round"):
        replace(config, proposer_sets_per_round=4)


def test_the_second_studys_config_starts_from_the_first_studys_sft(tmp_path):
    """configs/study_h200_v2.yaml differs from the finished first study (its committed pack) only after SFT: the next
    device session's `--sft-from` takes each seed's SFT and Coder evaluation, and makes the Proposer's again."""
    import tarfile

    from kernelzero.loop.config import merge, read_config_file
    from kernelzero.study.config import EVAL_FIELDS, PROPOSER_EVAL_FIELDS, SFT_FIELDS

    root = Path(__file__).parents[2]
    with tarfile.open(root / "bench" / "results" / "study_h100_f9025fb_queue.tgz") as tar:
        tar.extract("study_config.json", tmp_path, filter="data")
    first = json.loads((tmp_path / "study_config.json").read_text())
    second = merge(StudyConfig(), read_config_file(root / "configs" / "study_h200_v2.yaml"))
    assert field_mismatch(first, second, SFT_FIELDS + EVAL_FIELDS) == []
    assert field_mismatch(first, second, PROPOSER_EVAL_FIELDS) == ["proposer_eval_samples"]
    assert (second.proposer_batch, second.proposer_steps, second.proposer_sets_per_round) == (32, 8, 32)
    assert second.proposer_steps * second.proposer_batch // second.rl_generations == second.proposer_sets_per_round
