"""The phase configs: one dataclass per training phase (GRPO for the Coder and the Proposer, the SFT cold start).

Free of torch and TRL: `RunConfig` nests the GRPO ones, and reading, validating or printing a config (`kernelzero
train --help`, a config file checked before a run) must not load them. TRL is imported only when a config is turned
into TRL's own (`to_grpo_config`, `to_sft_config`), by the trainer about to use it. Defaults run the tiny model on CPU
in seconds (bf16 off, `use_cpu`, 4 generations of 32 tokens, one step); the presets for a real run live in
`kernelzero.trainers.presets`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from kernelzero.rewards.config import GateConfig
from kernelzero.rewards.proposer import ProposerRewardConfig
from kernelzero.roles.coder import BACKENDS

VLLM_MODES = ("colocate", "server")


@dataclass
class GRPOPhaseConfig:
    """Fields common to the Coder and Proposer GRPO phases. Each maps onto one GRPOConfig field."""

    output_dir: str = "runs/phase"
    """Checkpoints (`checkpoint-N/`), the final model (`final/`), `phase_config.json` and `metrics.jsonl` go here."""
    model: str | None = None
    """Local path or hub id of the policy. None: the tiny CPU model (`kernelzero.generation.tiny.tiny_model_path()`)."""
    learning_rate: float = 1e-5
    max_steps: int = 1
    """Optimizer steps, not judged batches. TRL generates (and the reward functions judge) one batch every
    `steps_per_generation * num_iterations / gradient_accumulation_steps` steps and trains on it until the next:
    with `grpo_overrides={"num_iterations": mu}` (GRPO's mu), N judged batches take N * mu steps."""
    per_device_train_batch_size: int = 4
    """Completions per device per optimisation step; with gradient accumulation and the number of processes it sets
    the generation batch, which TRL requires to hold whole groups of `num_generations`."""
    gradient_accumulation_steps: int = 1
    num_generations: int = 4
    """Group size G: completions sampled per prompt."""
    max_completion_length: int = 32
    temperature: float = 1.0
    kl_beta: float = 0.0
    """TRL's `beta` (KL to the reference model), renamed so it is not confused with CA-GRPO's beta. 0: no ref model."""
    loss_type: str = "dapo"
    scale_rewards: str = "group"
    """TRL's group/batch/none std scaling of advantages. "none" (Dr. GRPO) avoids amplifying timing noise in groups
    whose rewards differ only by small speedups."""
    save_steps: int = 1
    save_total_limit: int | None = 2
    logging_steps: int = 1
    seed: int = 0
    use_cpu: bool = True
    bf16: bool = False
    activation_checkpointing: bool = False
    """Recompute activations in backward (TRL defaults it on; off here because the tiny model does not need it)."""
    use_vllm: bool = False
    vllm_mode: str = "colocate"
    """colocate: vLLM shares each training GPU; server: a separate `trl vllm-serve` process (see docs/training.md)."""
    vllm_server_base_url: str | None = None
    vllm_gpu_memory_utilization: float = 0.3
    report_to: list[str] = field(default_factory=list)
    """TRL/transformers loggers ("tensorboard", "wandb"); `metrics.jsonl` is always written."""
    log_completions: bool = True
    """Print a table of sample completions with their verdicts each logging step and save it under completions/."""
    num_completions_to_print: int = 4
    grpo_overrides: dict[str, Any] = field(default_factory=dict)
    """Any other GRPOConfig field, passed through unchanged (GRPOConfig validates it)."""

    def __post_init__(self) -> None:
        if self.num_generations < 2:
            raise ValueError(f"num_generations must be >= 2 (GRPO needs a group), got {self.num_generations}")
        if self.vllm_mode not in VLLM_MODES:
            raise ValueError(f"vllm_mode must be one of {VLLM_MODES}, got {self.vllm_mode!r}")
        if self.max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {self.max_steps}")

    def to_grpo_config(self, reward_weights: list[float], **fixed: Any):
        """The TRL GRPOConfig for this phase; `fixed` are fields the trainer's maths depends on (never overridable)."""
        from trl import GRPOConfig

        fixed = {"remove_unused_columns": False, **fixed}  # the reward functions read the dataset's extra columns
        clash = sorted(set(self.grpo_overrides) & (set(fixed) | {"reward_weights"}))
        if clash:
            raise ValueError(f"grpo_overrides may not set {clash}: the trainer's reward maths depends on them")
        kw: dict[str, Any] = {
            "output_dir": self.output_dir,
            "learning_rate": self.learning_rate,
            "max_steps": self.max_steps,
            "per_device_train_batch_size": self.per_device_train_batch_size,
            "gradient_accumulation_steps": self.gradient_accumulation_steps,
            "num_generations": self.num_generations,
            "max_completion_length": self.max_completion_length,
            "temperature": self.temperature,
            "beta": self.kl_beta,
            "loss_type": self.loss_type,
            "scale_rewards": self.scale_rewards,
            "save_strategy": "steps",
            "save_steps": self.save_steps,
            "save_total_limit": self.save_total_limit,
            "logging_steps": self.logging_steps,
            "seed": self.seed,
            "use_cpu": self.use_cpu,
            "bf16": self.bf16,
            **checkpointing_kwarg(self.activation_checkpointing),
            "use_vllm": self.use_vllm,
            "vllm_mode": self.vllm_mode,
            "vllm_server_base_url": self.vllm_server_base_url,
            "vllm_gpu_memory_utilization": self.vllm_gpu_memory_utilization,
            "report_to": list(self.report_to) or "none",
            "log_completions": self.log_completions,
            "num_completions_to_print": self.num_completions_to_print,
            "reward_weights": reward_weights,
        }
        kw.update(self.grpo_overrides)
        kw.update(fixed)
        return GRPOConfig(**kw)


@dataclass
class CoderPhaseConfig(GRPOPhaseConfig):
    """The Coder phase: GRPO fields plus CA-GRPO's gate and the backends to train on."""

    output_dir: str = "runs/coder"
    gate: GateConfig = field(default_factory=GateConfig)
    """alpha, beta and the speedup shaping f of CA-GRPO."""
    backends: tuple[str, ...] = ("triton",)
    """One dataset row per (task, backend)."""
    dynamic_sampling: bool = False
    """Zero the advantage of groups that are all correct or all wrong (DAPO's filter, without its refill)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        bad = [b for b in self.backends if b not in BACKENDS]
        if bad or not self.backends:
            raise ValueError(f"backends must be a non-empty subset of {BACKENDS}, got {self.backends!r}")


@dataclass
class ProposerPhaseConfig(GRPOPhaseConfig):
    """The Proposer phase: GRPO fields plus the Proposer reward's hyper-parameters."""

    output_dir: str = "runs/proposer"
    reward: ProposerRewardConfig = field(default_factory=ProposerRewardConfig)
    """rho and the near-duplicate penalty."""


@dataclass
class SFTPhaseConfig:
    """The SFT cold start. Defaults run one step of the tiny model on CPU."""

    output_dir: str = "runs/sft"
    model: str | None = None
    """Local path or hub id. None: the tiny CPU model (`kernelzero.generation.tiny.tiny_model_path()`)."""
    learning_rate: float = 2e-5
    num_train_epochs: float = 1.0
    max_steps: int = 1
    """-1: train for num_train_epochs."""
    per_device_train_batch_size: int = 2
    gradient_accumulation_steps: int = 1
    max_length: int = 4096
    """Prompt + solution tokens; longer rows are truncated (keep it above your longest solution)."""
    save_steps: int = 1
    save_total_limit: int | None = 2
    logging_steps: int = 1
    seed: int = 0
    use_cpu: bool = True
    bf16: bool = False
    activation_checkpointing: bool = False
    report_to: list[str] = field(default_factory=list)
    sft_overrides: dict[str, Any] = field(default_factory=dict)
    """Any other SFTConfig field, passed through unchanged (SFTConfig validates it)."""

    def __post_init__(self) -> None:
        if self.max_steps == 0 or self.max_steps < -1:
            raise ValueError(f"max_steps must be >= 1 or -1, got {self.max_steps}")

    def to_sft_config(self):
        from trl import SFTConfig

        kw: dict[str, Any] = {
            "output_dir": self.output_dir,
            "learning_rate": self.learning_rate,
            "num_train_epochs": self.num_train_epochs,
            "max_steps": self.max_steps,
            "per_device_train_batch_size": self.per_device_train_batch_size,
            "gradient_accumulation_steps": self.gradient_accumulation_steps,
            "max_length": self.max_length,
            "save_strategy": "steps",
            "save_steps": self.save_steps,
            "save_total_limit": self.save_total_limit,
            "logging_steps": self.logging_steps,
            "seed": self.seed,
            "use_cpu": self.use_cpu,
            "bf16": self.bf16,
            **checkpointing_kwarg(self.activation_checkpointing),
            "report_to": list(self.report_to) or "none",
        }
        kw.update(self.sft_overrides)
        return SFTConfig(**kw)


def checkpointing_kwarg(enabled: bool) -> dict[str, bool]:
    """Activation checkpointing under the name this transformers takes: `activation_checkpointing` where it exists
    (5.24; `gradient_checkpointing` is deprecated there, with a warning per run), else `gradient_checkpointing` (5.17,
    the GPU machine's)."""
    from transformers import TrainingArguments

    names = {f.name for f in fields(TrainingArguments)}
    return {"activation_checkpointing" if "activation_checkpointing" in names else "gradient_checkpointing": enabled}


__all__ = ["VLLM_MODES", "CoderPhaseConfig", "GRPOPhaseConfig", "ProposerPhaseConfig", "SFTPhaseConfig",
           "checkpointing_kwarg"]  # fmt: skip
