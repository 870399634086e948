"""What every training phase shares: the GRPO phase config, its mapping to TRL's GRPOConfig, model loading,
checkpoint resolution, the resolved-config file and the JSONL metrics log.

Defaults run the tiny model on CPU in seconds (bf16 off, `use_cpu`, 4 generations of 32 tokens, one step); the presets
for a real run live in `kernelzero.trainers.presets`.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, field, is_dataclass
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

logger = logging.getLogger("kernelzero.trainers")


class _Shorten(logging.Filter):
    """TRL warns about a group whose rewards are all None (judge infra_error) by printing every kwarg of the row:
    the whole prompt and completion, thousands of characters per warning. Keep the first line's worth."""

    LIMIT = 300

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if len(message) > self.LIMIT:
            record.msg, record.args = message[: self.LIMIT] + f"... [{len(message) - self.LIMIT} more characters]", ()
        return True


logging.getLogger("trl.trainer.grpo_trainer").addFilter(_Shorten())

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


@dataclass(frozen=True)
class PhaseResult:
    """What a phase leaves behind, for the co-evolution loop."""

    output_dir: Path
    final_model_dir: Path
    """The trained weights and tokenizer, loadable with from_pretrained (the next phase or round starts here)."""
    global_step: int
    resumed_from: str | None
    log_history: list[dict[str, Any]]


def resolve_model_path(model: str | None) -> str:
    """The configured model, or the tiny CPU model when none is configured."""
    if model is not None:
        return model
    from kernelzero.generation.tiny import tiny_model_path

    return str(tiny_model_path())


def load_policy(model: str | None, tokenizer: Any = None) -> tuple[Any, Any]:
    """(model, tokenizer) from a path or hub id; an already loaded model is passed through."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = resolve_model_path(model)
    policy = AutoModelForCausalLM.from_pretrained(path)
    tok = tokenizer if tokenizer is not None else AutoTokenizer.from_pretrained(path)
    if tok.pad_token is None:  # TRL pads prompts; a model without a pad token pads with EOS
        tok.pad_token = tok.eos_token
    return policy, tok


def resolve_resume(output_dir: str | Path, resume: bool | str) -> str | None:
    """The checkpoint to resume from: "auto" = the last one in output_dir if any, True = the last one (required),
    False = none, any other string = that checkpoint path."""
    from transformers.trainer_utils import get_last_checkpoint

    if resume is False:
        return None
    if resume is True or resume == "auto":
        last = get_last_checkpoint(str(output_dir)) if Path(output_dir).is_dir() else None
        if last is None and resume is True:
            raise FileNotFoundError(f"resume=True but no checkpoint-* in {output_dir}")
        return last
    if not Path(resume).is_dir():
        raise FileNotFoundError(f"resume checkpoint {resume} does not exist")
    return str(resume)


def write_resolved_config(config: Any, output_dir: str | Path, name: str = "phase_config.json") -> Path:
    """Write the phase config next to its outputs (DESIGN.md section 7: each run keeps its resolved config)."""
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / name
    data = asdict(config) if is_dataclass(config) else dict(config)
    path.write_text(json.dumps(data, indent=2, sort_keys=True, default=str))
    return path


class MetricsJsonlCallback(TrainerCallback):
    """Append every log record (TRL's metrics plus ours) as one JSON line; rank 0 only."""

    def __init__(self, path: str | Path):
        self.path = Path(path)

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not state.is_world_process_zero or not logs:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a") as f:
            f.write(json.dumps({"step": state.global_step, **logs}, default=float) + "\n")


def checkpointing_kwarg(enabled: bool) -> dict[str, bool]:
    """Activation checkpointing under the name this transformers takes: `activation_checkpointing` where it exists
    (5.24; `gradient_checkpointing` is deprecated there, with a warning per run), else `gradient_checkpointing` (5.17,
    the GPU machine's)."""
    import dataclasses

    from transformers import TrainingArguments

    names = {f.name for f in dataclasses.fields(TrainingArguments)}
    return {"activation_checkpointing" if "activation_checkpointing" in names else "gradient_checkpointing": enabled}


def record_step_metrics(store: Any, metrics: dict[str, float]) -> None:
    """Append a step's metrics to a TRL trainer's `_metrics[mode]`, leaving out undefined (NaN) ones: TRL logs a key
    whose values are all NaN as None, which transformers' loggers reject with a warning per key."""
    for key, value in metrics.items():
        if value == value:  # not NaN
            store[key].append(value)


def completion_text(completion: Any) -> str:
    """The assistant text of one TRL completion: a string, or a list of chat messages (conversational datasets)."""
    if isinstance(completion, str):
        return completion
    return "".join(m.get("content") or "" for m in completion if m.get("role", "assistant") == "assistant")


def finish_phase(trainer: Any, output_dir: str | Path, resumed_from: str | None) -> PhaseResult:
    """Save the final model and tokenizer under output_dir/final and summarise the phase."""
    final = Path(output_dir) / "final"
    trainer.save_model(str(final))
    if trainer.processing_class is not None and trainer.accelerator.is_main_process:
        trainer.processing_class.save_pretrained(str(final))
    return PhaseResult(
        output_dir=Path(output_dir),
        final_model_dir=final,
        global_step=trainer.state.global_step,
        resumed_from=resumed_from,
        log_history=list(trainer.state.log_history),
    )
