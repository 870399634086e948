"""The SFT cold start: rows in the format the Coder parser reads back, one step that changes the tiny model."""

import pytest
import torch

from kernelzero.roles.coder import coder_messages, parse_coder_completion
from kernelzero.tasks import Task
from kernelzero.trainers.sft import SFTPhaseConfig, SolutionPair, build_sft_trainer, sft_dataset

TASK = Task(
    name="relu",
    source="import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x.relu()",
)
SOLUTION = "import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x.clamp(min=0)"


def test_sft_rows_round_trip_through_the_coder_parser():
    ds = sft_dataset([(TASK, SOLUTION), SolutionPair(TASK, SOLUTION, backend="cuda")])
    assert len(ds) == 2
    assert ds[0]["prompt"] == coder_messages(TASK.source, "triton")  # the same prompt the GRPO phase uses
    assert ds[1]["prompt"] == coder_messages(TASK.source, "cuda")
    assert parse_coder_completion(ds[0]["completion"][0]["content"]).code == SOLUTION + "\n"
    with pytest.raises(ValueError, match="backend"):
        SolutionPair(TASK, SOLUTION, backend="metal")


def test_one_sft_step_changes_the_parameters(tiny_model_dir, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    cfg = SFTPhaseConfig(output_dir=str(tmp_path / "sft"), learning_rate=1e-3)
    trainer = build_sft_trainer(cfg, [(TASK, SOLUTION)] * 4, model=model, tokenizer=tok)
    # completion-only loss: the prompt's tokens are masked out of the labels
    batch = trainer.data_collator([trainer.train_dataset[0]])
    prompt = sft_dataset([(TASK, SOLUTION)])[0]["prompt"]
    n_prompt = len(tok.apply_chat_template(prompt, add_generation_prompt=True)["input_ids"])
    assert n_prompt > 500  # the Coder prompt with its worked example
    labels = batch["labels"][0]
    assert (labels[:n_prompt] == -100).all() and (labels[n_prompt:] != -100).all()
    trainer.train()
    assert trainer.state.global_step == 1
    loss = trainer.state.log_history[0]["loss"]
    assert loss > 0
    changed = [n for n, p in model.named_parameters() if not torch.equal(p.detach(), before[n])]
    assert len(changed) == len(before)


def test_sft_command_trains_on_the_builtin_pairs(tiny_model_dir, tmp_path):
    import json

    from typer.testing import CliRunner

    from kernelzero.cli import app

    out = tmp_path / "sft"
    args = ["sft", "--model", str(tiny_model_dir), "--backends", "triton", "--steps", "2", "--batch-size", "2",
            "--lr", "1e-3", "--device", "cpu", "--out", str(out)]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "SFT on 4 pair(s) (triton), 2 step(s), lr 0.001, CPU" in result.output
    assert (out / "final" / "config.json").exists()
    steps = [json.loads(line)["step"] for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert max(steps) == 2


@pytest.mark.parametrize("args,message", [
    (["--backends", "metal"], "--backends 'metal'"),
    (["--pairs", "/nowhere"], "--pairs /nowhere: neither `builtin` nor an export folder"),
    (["--model", "/nowhere"], "--model /nowhere: no such local model folder"),
    (["--device", "tpu"], "--device must be one of auto, cpu, cuda, got 'tpu'"),
])  # fmt: skip
def test_sft_command_bad_input_is_one_line_and_exit_2(args, message, tmp_path):
    from typer.testing import CliRunner

    from kernelzero.cli import app

    result = CliRunner().invoke(app, ["sft", "--out", str(tmp_path / "x"), *args])
    assert result.exit_code == 2
    assert message in result.output
    assert not (tmp_path / "x").exists()


def test_trl_all_none_warning_is_shortened(caplog):
    import logging

    import kernelzero.trainers.common  # noqa: F401  (installs the filter)

    log = logging.getLogger("trl.trainer.grpo_trainer")
    with caplog.at_level(logging.WARNING, logger="trl.trainer.grpo_trainer"):
        log.warning("All reward functions returned None for the following kwargs:\n%s", {"prompt": "x" * 5000})
    (record,) = caplog.records
    assert record.getMessage().startswith("All reward functions returned None")
    assert len(record.getMessage()) < 400 and "more characters]" in record.getMessage()
