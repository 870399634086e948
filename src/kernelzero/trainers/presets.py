"""Presets for a real run: Qwen2.5-Coder-7B-Instruct on one 8-GPU node, vLLM for generation, ZeRO-3 or FSDP2.

Each preset returns the same dataclass the tiny defaults use, so anything can be changed field by field. Launch
commands and the GPU layouts they assume are in docs/training.md; the accelerate files are in configs/accelerate/.
Figures follow the paper where it gives them (20 GRPO steps per role per round, beta 0.1, alpha 0.5) and TRL's
GRPO recipes otherwise. No torch or TRL import: `RunConfig`'s paper preset is built from these.
"""

from __future__ import annotations

from kernelzero.rewards.config import GateConfig, SpeedupShaping
from kernelzero.rewards.proposer import ProposerRewardConfig
from kernelzero.trainers.config import CoderPhaseConfig, ProposerPhaseConfig, SFTPhaseConfig

QWEN_CODER_7B = "Qwen/Qwen2.5-Coder-7B-Instruct"
DISTRIBUTED = ("zero3", "fsdp2")


def _vllm(vllm_mode: str, vllm_server_base_url: str | None) -> dict:
    if vllm_mode == "server":
        return {"use_vllm": True, "vllm_mode": "server", "vllm_server_base_url": vllm_server_base_url}
    # colocate: vLLM shares each training GPU; leave most of the memory to ZeRO-3/FSDP shards and activations
    return {"use_vllm": True, "vllm_mode": "colocate", "vllm_gpu_memory_utilization": 0.3}


def _checkpointing(distributed: str) -> bool:
    """FSDP2 does activation checkpointing itself (fsdp_activation_checkpointing in configs/accelerate/fsdp2.yaml) and
    transformers' Trainer refuses to have both on; ZeRO-3 needs the Trainer's."""
    if distributed not in DISTRIBUTED:
        raise ValueError(f"distributed must be one of {DISTRIBUTED}, got {distributed!r}")
    return distributed == "zero3"


def _real_run(distributed: str) -> dict:
    """What both GRPO roles share in a real run: 20 steps per phase (the paper), 8 rollouts per prompt, bf16 on GPU."""
    return {
        "learning_rate": 1e-6,
        "max_steps": 20,
        "gradient_accumulation_steps": 4,
        "num_generations": 8,
        "save_steps": 5,
        "save_total_limit": 3,
        "use_cpu": False,
        "bf16": True,
        "activation_checkpointing": _checkpointing(distributed),
        "report_to": ["tensorboard"],
        "num_completions_to_print": 2,
    }


def coder_preset(
    output_dir: str,
    *,
    model: str = QWEN_CODER_7B,
    vllm_mode: str = "colocate",
    vllm_server_base_url: str | None = None,
    distributed: str = "zero3",
) -> CoderPhaseConfig:
    """One Coder phase of one round. Generation batch per step: 4 per device x 8 devices x 4 accumulation = 128
    completions = 16 tasks x 8 rollouts (with vllm_mode="server" on 7 training GPUs: 112 = 14 x 8)."""
    return CoderPhaseConfig(
        output_dir=output_dir,
        model=model,
        per_device_train_batch_size=4,
        max_completion_length=4096,
        temperature=1.0,
        **_real_run(distributed),
        # Departure from the paper's f = identity: clip at 10x so one timing outlier cannot dominate the group.
        gate=GateConfig(alpha=0.5, beta=0.1, shaping=SpeedupShaping("clip", cap=10.0)),
        backends=("triton", "cuda"),
        **_vllm(vllm_mode, vllm_server_base_url),
    )


def proposer_preset(
    output_dir: str,
    *,
    model: str = QWEN_CODER_7B,
    vllm_mode: str = "colocate",
    vllm_server_base_url: str | None = None,
    distributed: str = "zero3",
) -> ProposerPhaseConfig:
    """One Proposer phase of one round. Each completion costs k Coder samples and k judge runs, so the batch is
    smaller than the Coder's: 2 per device x 8 x 4 = 64 tasks = 8 API sets x 8 proposals."""
    return ProposerPhaseConfig(
        output_dir=output_dir,
        model=model,
        per_device_train_batch_size=2,
        max_completion_length=1024,
        **_real_run(distributed),
        reward=ProposerRewardConfig(rho=-0.5, duplicate_threshold=0.8, duplicate_weight=1.0),
        **_vllm(vllm_mode, vllm_server_base_url),
    )


def sft_preset(output_dir: str, *, model: str = QWEN_CODER_7B, distributed: str = "zero3") -> SFTPhaseConfig:
    """The cold start: two epochs over the (task, solution) pairs, 128 sequences per optimiser step on 8 GPUs."""
    return SFTPhaseConfig(
        output_dir=output_dir,
        model=model,
        learning_rate=1e-5,
        num_train_epochs=2.0,
        max_steps=-1,
        per_device_train_batch_size=2,
        gradient_accumulation_steps=8,
        max_length=8192,
        save_steps=200,
        save_total_limit=2,
        use_cpu=False,
        bf16=True,
        activation_checkpointing=_checkpointing(distributed),
        report_to=["tensorboard"],
    )
