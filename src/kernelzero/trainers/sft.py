"""The Coder's supervised cold start: TRL's SFTTrainer on (task, solution) pairs.

Each pair becomes a conversational prompt-completion row: the prompt is the same Coder prompt the GRPO phase uses,
the completion is the solution formatted the way the Coder parser reads answers back, so SFT teaches exactly the
format RL then rewards. The loss covers the completion only (TRL's default for prompt-completion data).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from kernelzero.roles.coder import BACKENDS
from kernelzero.tasks import SEED_PREFIX, Task, seed_tasks
from kernelzero.trainers.coder import PromptFn, coder_answer, coder_prompt
from kernelzero.trainers.common import (
    MetricsJsonlCallback,
    PhaseResult,
    finish_phase,
    load_policy,
    logger,
    resolve_resume,
    write_resolved_config,
)
from kernelzero.trainers.config import SFTPhaseConfig


@dataclass(frozen=True)
class SolutionPair:
    """A task with a reference solution (a full source defining ModelNew) for one backend."""

    task: Task
    solution: str
    backend: str = "triton"

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise ValueError(f"SolutionPair.backend must be one of {BACKENDS}, got {self.backend!r}")


def _data_root():
    return resources.files("kernelzero").joinpath("data")


def builtin_pairs(backends: Iterable[str] = ("triton", "cuda")) -> list[SolutionPair]:
    """The shipped seed tasks (`tasks.seed_tasks("builtin")`, named `seed-<stem>`) paired with their judged
    solutions (`data/seed_solutions/<backend>/<stem>.py`); one pair per task and backend."""
    backends = tuple(backends)
    for backend in backends:
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    pairs = []
    for task in sorted(seed_tasks("builtin"), key=lambda t: t.name):
        file = task.name.removeprefix(SEED_PREFIX) + ".py"
        for backend in backends:
            solution = _data_root().joinpath("seed_solutions", backend, file)
            if not solution.is_file():
                raise FileNotFoundError(f"seed task {file!r} has no {backend} solution: expected "
                                        f"kernelzero/data/seed_solutions/{backend}/{file}")  # fmt: skip
            pairs.append(SolutionPair(task, solution.read_text(encoding="utf-8"), backend))
    return pairs


def sft_dataset(
    pairs: Iterable[SolutionPair | tuple[Task, str]],
    prompt_fn: PromptFn = coder_prompt,
    answer_fn: Callable[[str], str] = coder_answer,
):
    """Conversational prompt-completion rows: prompt = the Coder prompt, completion = the formatted solution."""
    from datasets import Dataset

    rows = []
    for p in pairs:
        pair = p if isinstance(p, SolutionPair) else SolutionPair(*p)
        rows.append(
            {
                "prompt": prompt_fn(pair.task, pair.backend),
                "completion": [{"role": "assistant", "content": answer_fn(pair.solution)}],
            }
        )
    if not rows:
        raise ValueError("the SFT dataset is empty")
    return Dataset.from_list(rows)


def build_sft_trainer(
    config: SFTPhaseConfig,
    pairs: Iterable[SolutionPair | tuple[Task, str]],
    *,
    prompt_fn: PromptFn = coder_prompt,
    model: Any = None,
    tokenizer: Any = None,
    eval_pairs: Iterable[SolutionPair | tuple[Task, str]] | None = None,
    callbacks: Sequence[Any] = (),
):
    """The configured SFTTrainer, not yet trained. `eval_pairs`, rendered like the training pairs, are the
    evaluation set (its loss is what `eval_strategy` and `load_best_model_at_end` in `sft_overrides` act on)."""
    from trl import SFTTrainer

    if model is None:
        model, tokenizer = load_policy(config.model, tokenizer)
    write_resolved_config(config, config.output_dir)
    dataset = sft_dataset(pairs, prompt_fn)
    trainer = SFTTrainer(
        model=model,
        args=config.to_sft_config(),
        train_dataset=dataset,
        eval_dataset=sft_dataset(eval_pairs, prompt_fn) if eval_pairs is not None else None,
        processing_class=tokenizer,
        callbacks=[MetricsJsonlCallback(f"{config.output_dir}/metrics.jsonl"), *callbacks],
    )
    # TRL silently drops rows whose completion was truncated away entirely (prompt longer than max_length)
    kept = len(trainer.train_dataset)
    if kept == 0:
        raise ValueError(f"every SFT row's prompt exceeds max_length={config.max_length} tokens: raise max_length")
    if kept < len(dataset):
        logger.warning("SFT: %d of %d rows dropped (prompt longer than max_length)", len(dataset) - kept, len(dataset))
    return trainer


def run_sft(
    config: SFTPhaseConfig,
    pairs: Iterable[SolutionPair | tuple[Task, str]],
    *,
    prompt_fn: PromptFn = coder_prompt,
    model: Any = None,
    tokenizer: Any = None,
    resume: bool | str = "auto",
    eval_pairs: Iterable[SolutionPair | tuple[Task, str]] | None = None,
    callbacks: Sequence[Any] = (),
) -> PhaseResult:
    """Fine-tune the Coder on (task, solution) pairs; resumes from output_dir's last checkpoint by default."""
    trainer = build_sft_trainer(config, pairs, prompt_fn=prompt_fn, model=model, tokenizer=tokenizer,
                                eval_pairs=eval_pairs, callbacks=callbacks)
    checkpoint = resolve_resume(config.output_dir, resume)
    trainer.train(resume_from_checkpoint=checkpoint)
    return finish_phase(trainer, config.output_dir, checkpoint)
