"""One CA-GRPO step of the Coder on the tiny model: the rewards TRL saw are the scripted verdicts after the gate."""

import json
import math
import statistics

import pytest
import torch

from kernelzero.rewards.config import GateConfig
from kernelzero.roles.coder import coder_messages
from kernelzero.tasks import Task
from kernelzero.trainers.coder import build_coder_trainer, coder_dataset
from kernelzero.trainers.config import CoderPhaseConfig
from support import ScriptedJudge, accept_any_text, fail, ok

NAN = float("nan")
TASKS = [Task(name="open", source="# task open"), Task(name="closed", source="# task closed")]
SCRIPT = {
    # 3 of 4 correct: gate open, every correct rollout gets 1 + 0.1 * S
    "open": [ok(2.0), ok(3.0), ok(0.5), fail("incorrect")],
    # 1 correct of 3 scored (the infra failure is left out): gate closed, the 4x kernel gets 1
    "closed": [ok(4.0), fail("compile_error"), fail("infra_error"), fail("incorrect")],
}
# What `_calculate_rewards` must hand to TRL, per task, rows in call order: [correct, gated speedup]
EXPECTED = {
    "open": [[1, 2.0], [1, 3.0], [1, 0.5], [0, 0.0]],
    "closed": [[1, 0.0], [0, 0.0], [NAN, NAN], [0, 0.0]],
}
# r = correct + 0.1 * gated speedup, then TRL's group normalisation (r - mean) / (std + 1e-4), NaN rows -> 0
EXPECTED_REWARDS = {"open": [1.2, 1.3, 1.05, 0.0], "closed": [1.0, 0.0, None, 0.0]}


def expected_advantages(rewards):
    scored = [r for r in rewards if r is not None]
    mean, std = statistics.fmean(scored), statistics.stdev(scored)
    return [0.0 if r is None else (r - mean) / (std + 1e-4) for r in rewards]


def config(tmp_path, **kw):
    base = {
        "output_dir": str(tmp_path / "coder"),
        "per_device_train_batch_size": 8,  # 2 tasks x 4 generations in one step
        "num_generations": 4,
        "max_completion_length": 16,
        "learning_rate": 1e-3,
        "gate": GateConfig(alpha=0.5, beta=0.1),
    }
    base.update(kw)
    return CoderPhaseConfig(**base)


def short_prompt(task, backend):
    """A few-token prompt: these tests are about reward plumbing, and the real Coder prompt (~1,300 tokens with its
    worked example) makes each CPU step several times slower. `test_coder_dataset_uses_the_coder_prompt` covers it."""
    return [{"role": "user", "content": f"ModelNew for {task.name} ({backend})"}]


def test_coder_dataset_uses_the_coder_prompt():
    ds = coder_dataset(TASKS, ["triton", "cuda"])
    assert len(ds) == 4 and ds[1]["backend"] == "cuda" and ds[1]["name"] == "open"
    assert ds[1]["prompt"] == coder_messages(TASKS[0].source, "cuda")
    assert ds[1]["source"] == TASKS[0].source


def test_a_task_may_repeat_but_two_tasks_may_not_share_a_name():
    ds = coder_dataset([TASKS[0], TASKS[0]], ["triton"])  # the loop repeats a few tasks to fill a step
    assert [r["name"] for r in ds] == ["open", "open"]
    with pytest.raises(ValueError, match="two different tasks are named 'open'"):
        coder_dataset([TASKS[0], Task(name="open", source="# another task")], ["triton"])


def test_a_step_of_one_repeated_task_trains_two_groups_of_it(tiny_model_dir, tmp_path):
    # fewer tasks than a step holds: the loop's Coder unit repeats them (one task, 2 prompts of 4 generations)
    judge = ScriptedJudge({"open": SCRIPT["open"]})
    records = []
    trainer = build_coder_trainer(config(tmp_path, model=tiny_model_dir), [TASKS[0], TASKS[0]], judge,
                                  parse_fn=accept_any_text,
                                  prompt_fn=short_prompt, on_rewards=records.append)  # fmt: skip
    trainer.train()
    [rec] = records
    assert rec.task_names == ["open"] * 8 and len(judge.calls) == 8
    # each group of 4 is scored on its own: both groups got the script's 4 verdicts (3 correct), so both gates open
    assert [v.status for v in rec.verdicts] == [v.status for v in SCRIPT["open"]] * 2
    assert trainer.state.log_history[0]["coder/gate_open_share"] == pytest.approx(1.0)


def rows_of(record, name):
    return [i for i, n in enumerate(record.task_names) if n == name]


def test_one_coder_step_trl_sees_gated_judge_rewards(tiny_model_dir, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    judge = ScriptedJudge(SCRIPT)
    records = []
    cfg = config(tmp_path)
    trainer = build_coder_trainer(
        cfg,
        TASKS,
        judge,
        parse_fn=accept_any_text,
        prompt_fn=short_prompt,
        model=model,
        tokenizer=tok,
        on_rewards=records.append,
    )
    trainer.train()

    assert trainer.state.global_step == 1 and len(records) == 1
    rec = records[0]
    assert len(judge.calls) == 8  # one judge call per completion, shared by the two reward columns
    for name in ("open", "closed"):
        rows = rows_of(rec, name)
        assert len(rows) == 4 and rows == list(range(rows[0], rows[0] + 4))  # a group's rows are contiguous
        # the judge saw this group's completions in row order, so row k got script[name][k]
        assert [src for n, src, _ in judge.calls if n == name] == [rec.completions[i] for i in rows]
        assert [rec.verdicts[i] for i in rows] == SCRIPT[name]
        torch.testing.assert_close(rec.gated[rows], torch.tensor(EXPECTED[name]), equal_nan=True)

    # What TRL itself logged from the matrix we returned: the reward columns and the advantages it computed
    trainer_logs = {
        "correct": list(trainer._logs["rewards"]["correct"]),
        "speedup": list(trainer._logs["rewards"]["speedup"]),
        "advantages": list(trainer._logs["advantages"]),
    }
    for name in ("open", "closed"):
        rows = rows_of(rec, name)
        got_correct = [trainer_logs["correct"][i] for i in rows]
        got_speed = [trainer_logs["speedup"][i] for i in rows]
        assert _same(got_correct, [r[0] for r in EXPECTED[name]])
        assert _same(got_speed, [r[1] for r in EXPECTED[name]])
        assert [trainer_logs["advantages"][i] for i in rows] == pytest.approx(
            expected_advantages(EXPECTED_REWARDS[name]), abs=1e-4
        )

    # Logged step metrics: pass rate 4/7 scored, one of two gates open, mean raw speedup of the correct rollouts
    log = trainer.state.log_history[0]
    assert log["coder/pass_rate"] == pytest.approx(4 / 7)
    assert log["coder/gate_open_share"] == pytest.approx(0.5)
    assert log["coder/speedup_correct_mean"] == pytest.approx((2.0 + 3.0 + 0.5 + 4.0) / 4)
    assert log["judge/status/ok"] == 4 and log["judge/status/incorrect"] == 2
    assert log["judge/status/compile_error"] == 1 and log["judge/status/infra_error"] == 1
    assert log["rewards/correct/mean"] == pytest.approx(4 / 7)  # TRL's own mean, NaN row left out
    assert log["rewards/speedup/mean"] == pytest.approx(5.5 / 7)

    changed = [n for n, p in model.named_parameters() if not torch.equal(p.detach(), before[n])]
    assert len(changed) == len(before)
    lines = (tmp_path / "coder" / "metrics.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["coder/pass_rate"] == pytest.approx(4 / 7)
    table = list((tmp_path / "coder" / "completions").glob("*.parquet"))
    assert table, "the sample-completions table was not written"
    import pandas as pd

    df = pd.read_parquet(table[0])
    assert sorted(df["status"]) == sorted(v.status for v in SCRIPT["open"] + SCRIPT["closed"])


def _same(a, b):
    return all((math.isnan(x) and math.isnan(y)) or x == pytest.approx(y) for x, y in zip(a, b, strict=True))


def test_dynamic_sampling_zeroes_groups_without_contrast_in_correctness(tiny_model_dir, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tasks = [Task(name="mixed", source="# mixed"), Task(name="all_ok", source="# all ok")]
    judge = ScriptedJudge(
        {
            "mixed": [ok(2.0), fail("incorrect"), ok(1.0), fail("incorrect")],
            # all correct: speeds differ, so without the filter these rows would get unit-size advantages
            "all_ok": [ok(1.0), ok(1.1), ok(5.0), ok(0.9)],
        }
    )
    trainer = build_coder_trainer(
        config(tmp_path, dynamic_sampling=True, log_completions=False),
        tasks,
        judge,
        parse_fn=accept_any_text,
        prompt_fn=short_prompt,
        model=AutoModelForCausalLM.from_pretrained(tiny_model_dir),
        tokenizer=AutoTokenizer.from_pretrained(tiny_model_dir),
    )
    trainer.train()
    rec = trainer.last_record
    advantages = list(trainer._logs["advantages"])
    mixed, all_ok = rows_of(rec, "mixed"), rows_of(rec, "all_ok")
    assert torch.isnan(rec.gated[all_ok]).all()
    assert [advantages[i] for i in all_ok] == [0.0] * 4
    # the kept group: rewards [1.2, 0, 1.1, 0]
    assert [advantages[i] for i in mixed] == pytest.approx(expected_advantages([1.2, 0.0, 1.1, 0.0]), abs=1e-4)
    assert trainer.state.log_history[0]["coder/dynamic_sampling_filtered_share"] == 0.5
