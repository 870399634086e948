"""Phase configs: validation names the field, the maths-critical GRPO fields cannot be overridden, presets are sound."""

import dataclasses
from pathlib import Path

import pytest
import yaml

from kernelzero.rewards.config import GateConfig
from kernelzero.trainers.config import CoderPhaseConfig
from kernelzero.trainers.presets import coder_preset, proposer_preset, sft_preset

ROOT = Path(__file__).resolve().parents[2]


def test_defaults_are_the_tiny_cpu_job():
    cfg = CoderPhaseConfig()
    args = cfg.to_grpo_config([1.0, 0.1], multi_objective_aggregation="sum_then_normalize")
    assert args.use_cpu and not args.bf16 and args.max_steps == 1
    assert (args.num_generations, args.max_completion_length) == (4, 32)
    assert args.reward_weights == [1.0, 0.1] and args.beta == 0.0


def test_validation_names_the_field():
    with pytest.raises(ValueError, match="num_generations"):
        CoderPhaseConfig(num_generations=1)
    with pytest.raises(ValueError, match="vllm_mode"):
        CoderPhaseConfig(vllm_mode="remote")
    with pytest.raises(ValueError, match="backends"):
        CoderPhaseConfig(backends=("opencl",))


def test_reward_maths_fields_cannot_be_overridden():
    cfg = CoderPhaseConfig(grpo_overrides={"multi_objective_aggregation": "normalize_then_sum"})
    with pytest.raises(ValueError, match="multi_objective_aggregation"):
        cfg.to_grpo_config([1.0, 0.1], multi_objective_aggregation="sum_then_normalize")
    with pytest.raises(ValueError, match="reward_weights"):
        CoderPhaseConfig(grpo_overrides={"reward_weights": [1, 1]}).to_grpo_config([1.0, 0.1])


@pytest.mark.parametrize("processes", [8, 7])
def test_presets_hold_whole_groups(processes):
    for cfg in (coder_preset("r/c"), proposer_preset("r/p")):
        gen_batch = cfg.per_device_train_batch_size * processes * cfg.gradient_accumulation_steps
        assert gen_batch % cfg.num_generations == 0


def test_presets_build_valid_trl_configs_on_this_machine():
    # bf16 needs a GPU; everything else is checked by TRL's own config validation here
    c = coder_preset("r/c", vllm_mode="server", vllm_server_base_url="http://localhost:8000")
    assert (
        c.model == "Qwen/Qwen2.5-Coder-7B-Instruct"
        and c.use_vllm
        and c.gate == GateConfig(alpha=0.5, beta=0.1, shaping=c.gate.shaping)
    )
    args = dataclasses.replace(c, bf16=False, use_cpu=True).to_grpo_config(
        [1.0, c.gate.beta], multi_objective_aggregation="sum_then_normalize"
    )
    assert args.vllm_mode == "server" and args.max_completion_length == 4096 and args.gradient_checkpointing
    p = dataclasses.replace(proposer_preset("r/p", distributed="fsdp2"), bf16=False, use_cpu=True)
    assert not p.activation_checkpointing and p.to_grpo_config([1.0]).vllm_mode == "colocate"
    assert not p.to_grpo_config([1.0]).gradient_checkpointing  # the name transformers 5.17 and 5.24 both accept
    s = dataclasses.replace(sft_preset("r/s"), bf16=False, use_cpu=True).to_sft_config()
    assert s.max_length == 8192 and s.activation_checkpointing and s.gradient_checkpointing
    with pytest.raises(ValueError, match="distributed"):
        coder_preset("r/c", distributed="zero2")


def test_accelerate_files_match_the_presets():
    zero3 = yaml.safe_load((ROOT / "configs/accelerate/zero3.yaml").read_text())
    fsdp2 = yaml.safe_load((ROOT / "configs/accelerate/fsdp2.yaml").read_text())
    assert zero3["distributed_type"] == "DEEPSPEED" and zero3["deepspeed_config"]["zero_stage"] == 3
    assert fsdp2["distributed_type"] == "FSDP" and fsdp2["fsdp_config"]["fsdp_version"] == 2
    assert fsdp2["fsdp_config"]["fsdp_activation_checkpointing"] is True  # presets turn the Trainer's off for fsdp2
    assert zero3["num_processes"] == fsdp2["num_processes"] == 8
