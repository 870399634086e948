"""What every training phase shares at run time: model loading, checkpoint resolution, the resolved-config file,
the JSONL metrics log and the phase's result. The phase configs themselves are in `kernelzero.trainers.config`."""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, is_dataclass
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from kernelzero.generation.tiny import tiny_model_path

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
    """Write the phase config next to its outputs (each run keeps its resolved config beside its outputs)."""
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
