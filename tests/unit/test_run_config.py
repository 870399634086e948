"""RunConfig: defaults are the tiny smoke run, presets, YAML/JSON overrides, errors that name the field."""

import json

import pytest

from kernelzero.loop.config import ConfigError, RunConfig, config_from_dict, load_config, preset


def test_defaults_are_the_tiny_cpu_round():
    cfg = RunConfig()
    assert cfg.preset == "tiny" and cfg.rounds == 1
    assert cfg.coder.model is None and cfg.coder.use_cpu and cfg.coder.max_steps == 2
    assert cfg.proposer.max_steps == 1 and cfg.proposer.num_generations == 4


def test_paper_preset():
    cfg = preset("paper")
    assert cfg.rounds == 4 and cfg.coder.max_steps == 20 and cfg.proposer.max_steps == 20
    assert cfg.coder.model == cfg.proposer.model == "Qwen/Qwen2.5-Coder-7B-Instruct"
    assert cfg.coder.gate.beta == pytest.approx(0.1) and cfg.loop.coder_k == 8


def test_yaml_overrides_nested_fields(tmp_path):
    p = tmp_path / "run.yaml"
    p.write_text("rounds: 2\ncoder:\n  max_steps: 3\n  gate:\n    alpha: 0.25\n  backends: [triton]\n"
                 "loop:\n  tasks_per_round: 6\njudge:\n  trials: 3\n")  # fmt: skip
    cfg = load_config(p)
    assert cfg.rounds == 2 and cfg.coder.max_steps == 3 and cfg.coder.gate.alpha == 0.25
    assert cfg.coder.backends == ("triton",) and cfg.loop.tasks_per_round == 6 and cfg.judge.trials == 3
    assert cfg.proposer.max_steps == 1  # untouched fields keep the preset's values


def test_yaml_exponents_without_a_dot_are_floats(tmp_path):
    # YAML 1.1 (PyYAML) reads `2e-4` as the string "2e-4"; a learning rate written so is still a number
    p = tmp_path / "run.yaml"
    p.write_text("coder:\n  learning_rate: 2e-4\nproposer:\n  learning_rate: 1.5E-5\n")
    cfg = load_config(p)
    assert cfg.coder.learning_rate == pytest.approx(2e-4) and cfg.proposer.learning_rate == pytest.approx(1.5e-5)


def test_round_trip_through_json():
    cfg = load_config(None, "paper")
    again = config_from_dict(json.loads(cfg.to_json()))
    assert again.to_dict() == cfg.to_dict()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("rounds: 0", "rounds must be >= 1"),
        ("backend: opencl", "backend must be one of cuda, triton"),
        ("coder:\n  max_stepz: 3", "unknown field coder.max_stepz; CoderPhaseConfig accepts: output_dir, model"),
        ("coder:\n  vllm_mode: remote", "coder: vllm_mode must be one of"),
        ("loop:\n  coder_k: -1", "loop.coder_k must be >= 0"),
        ("loop:\n  tasks_per_round: many", "loop.tasks_per_round: expected int"),
        ("coder:\n  learning_rate: 1e-4x", "coder.learning_rate: expected float"),
        ("validation:\n  device: tpu", "ValidationConfig.device must be auto, cpu or cuda"),
        ("preset: huge", "preset must be one of tiny, paper"),
    ],
)
def test_errors_name_the_field_and_allowed_values(tmp_path, text, message):
    p = tmp_path / "bad.yaml"
    p.write_text(text + "\n")
    with pytest.raises(ConfigError) as e:
        load_config(p)
    assert message in str(e.value)


def test_cli_train_rejects_bad_config_before_running(tmp_path):
    from typer.testing import CliRunner

    from kernelzero.cli import app

    p = tmp_path / "bad.yaml"
    p.write_text("coder:\n  gate:\n    alpha: 2\n")
    res = CliRunner().invoke(app, ["train", "--config", str(p), "--out", str(tmp_path / "run")])
    assert res.exit_code == 2 and "alpha" in res.output
    assert not (tmp_path / "run").exists()
