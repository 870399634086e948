"""The Proposer's GRPO phase: `ProposerGRPOTrainer` and `run_proposer_phase`.

One reward column, `frontier`. Its async reward function works in two stages: it parses and validates every proposed
task concurrently (`validate_fn(name, task_source, api_set) -> ValidationResult`), then makes one
`coder_samples_fn(tasks)` call over all the valid ones: k judged samples each of the current, frozen Coder, in one
generation and one judging batch (both injected: validation and Coder sampling belong to other modules); a task's
l(m) is its samples' mean correctness. Each proposal becomes a `curriculum.proposals.Proposal`.
The column is r_P(m) = 1 - 2|l(m) - 0.5|, or rho for an invalid or unparseable task, or None when l(m) could not be
measured (TRL leaves that rollout out).

The repetition penalty is a property of the whole batch, which can be split across processes, so it is applied like
CA-GRPO's gate: in the `_calculate_rewards` override, on the gathered column, with the gathered task sources.
"""

from __future__ import annotations

import asyncio
import inspect
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from trl import GRPOTrainer

from kernelzero.curriculum.proposals import Proposal, proposed_task_name
from kernelzero.curriculum.validate import ValidationResult
from kernelzero.rewards.proposer import ProposerRewardConfig, penalised_rewards, proposer_reward
from kernelzero.roles.coder import Judged
from kernelzero.roles.parsing import ParsedCode
from kernelzero.roles.proposer import parse_proposer_completion, proposer_messages
from kernelzero.tasks import Task
from kernelzero.trainers.coder_rewards import CodeParser
from kernelzero.trainers.common import (
    MetricsJsonlCallback,
    PhaseResult,
    completion_text,
    finish_phase,
    load_policy,
    logger,
    record_step_metrics,
    resolve_resume,
    write_resolved_config,
)
from kernelzero.trainers.config import ProposerPhaseConfig

ValidateFn = Callable[[str, str, Sequence[str]], ValidationResult | Awaitable[ValidationResult]]
"""`validate_fn(name, task_source, api_set) -> ValidationResult`, sync or async (only an async one runs concurrently:
a sync one runs on the event loop, one task after another); `curriculum.validate.Validator.validate_async` is one."""
CoderSamplesFn = Callable[[list[Task]], Sequence[Sequence[Judged]] | Awaitable[Sequence[Sequence[Judged]]]]
"""`coder_samples_fn(tasks) -> k judged samples of the frozen Coder per task, in task order`, called once per reward
batch with all its valid tasks (`curriculum.proposals.coder_samples` is one); async, or sync (run in a thread, off
TRL's event loop). A task's l(m) is its samples' mean correctness (None when no sample could be scored, e.g. infra
failures)."""


@dataclass
class ProposerRewardRecord:
    """One generation batch, gathered over every process (rows in TRL's order)."""

    step: int
    group_size: int
    raw: torch.Tensor  # (N, 1) r_P / rho / NaN from the reward function
    final: torch.Tensor  # (N, 1) after the repetition penalty: what TRL turned into advantages
    proposals: list[Proposal]  # (N,) each with its final reward and, when measured, its judged Coder samples
    metrics: dict[str, float]  # `proposer_step_metrics` of this batch, as the trainer logged them


class ProposalLedger:
    """Evaluates one batch of proposals (parse, validate, Coder samples) and keeps them for the trainer. In a run of
    several processes each evaluates its own share of the batch."""

    def __init__(self, validate_fn: ValidateFn, coder_samples_fn: CoderSamplesFn, parse_fn: CodeParser):
        self.validate_fn = validate_fn
        self.coder_samples_fn = coder_samples_fn
        self.parse_fn = parse_fn
        self.proposals: list[Proposal] | None = None
        self.seconds: dict[str, float] = {}  # the last batch's wall time: validation, then the Coder's samples

    def reset(self) -> None:
        self.proposals = None
        self.seconds = {}

    async def evaluate_batch(self, completions: Sequence[Any], api_sets: Sequence[Sequence[str]]) -> list[Proposal]:
        """Validate every proposal concurrently, then measure l(m) of the valid ones with one `coder_samples_fn` call
        (none when no proposal is valid): the Coder's generations and judging of a batch run together, not task
        after task."""
        t0 = time.monotonic()
        jobs = [self._validate_one(completion_text(c), tuple(a)) for c, a in zip(completions, api_sets, strict=True)]
        proposals = list(await asyncio.gather(*jobs))
        t1 = time.monotonic()
        valid = [p for p in proposals if p.valid]
        if valid:
            for p, judged in zip(valid, await self._coder_samples([p.task() for p in valid]), strict=True):
                p.record_samples(judged)
        self.proposals = proposals
        self.seconds = {"validate": t1 - t0, "coder_samples": time.monotonic() - t1}
        return proposals

    async def _coder_samples(self, tasks: list[Task]) -> Sequence[Sequence[Judged]]:
        fn = self.coder_samples_fn
        # a sync one (a Coder's `generate`, a judge pool) would block TRL's event loop: it runs in a thread
        out = fn(tasks) if inspect.iscoroutinefunction(fn) else await asyncio.to_thread(fn, tasks)
        return (await out) if inspect.isawaitable(out) else out

    async def _validate_one(self, text: str, api_set: tuple[str, ...]) -> Proposal:
        parsed = self.parse_fn(text)
        if not isinstance(parsed, ParsedCode):
            name = proposed_task_name(text)
            return Proposal(name, api_set, None, ValidationResult(name, "parse", parsed.reason, api_set))
        name = proposed_task_name(parsed.code)
        result = self.validate_fn(name, parsed.code, api_set)
        return Proposal(name, api_set, parsed.code, (await result) if inspect.isawaitable(result) else result)


def make_proposer_reward_func(ledger: ProposalLedger, rho: float) -> Callable[..., Awaitable[list[float | None]]]:
    """The TRL reward function `frontier`; reads the dataset's `apis` column."""

    async def frontier(prompts, completions, apis, log_extra=None, **_: Any):
        proposals = await ledger.evaluate_batch(completions, apis)
        if log_extra is not None:
            log_extra("valid", [p.valid for p in proposals])
            log_extra("success_rate", [p.success_rate for p in proposals])
            log_extra("reason", [p.validation.reason or "" for p in proposals])
            log_extra("detail", [p.validation.detail[:200] for p in proposals])
        return [proposer_reward(p.valid, p.success_rate, rho) for p in proposals]

    return frontier


def proposer_step_metrics(proposals: Sequence[Proposal], raw: torch.Tensor, final: torch.Tensor) -> dict:
    """Per-step Proposer metrics. raw, final: (N, 1). NaN where undefined. reward_mean: over the rollouts TRL scored;
    duplicate_share: share of valid tasks whose reward the repetition penalty lowered; frontier_share: share of
    measured tasks with 0 < l(m) < 1."""
    n = len(proposals)
    valid = [p for p in proposals if p.valid]
    rates = [p.success_rate for p in valid if p.success_rate is not None]
    penalised = (raw[:, 0] - final[:, 0]) > 0  # (N,) NaN compares False
    scored = final[:, 0][~torch.isnan(final[:, 0])]  # (<=N,)
    return {
        "proposer/valid_share": len(valid) / n if n else math.nan,
        "proposer/parse_failure_share": sum(p.source is None for p in proposals) / n if n else math.nan,
        "proposer/reward_mean": float(scored.double().mean()) if scored.numel() else math.nan,
        "proposer/coder_success_mean": sum(rates) / len(rates) if rates else math.nan,
        "proposer/frontier_share": sum(0.0 < r < 1.0 for r in rates) / len(rates) if rates else math.nan,
        "proposer/duplicate_share": float(penalised.sum()) / len(valid) if valid else math.nan,
    }


class ProposerGRPOTrainer(GRPOTrainer):
    """GRPOTrainer rewarding tasks on the Coder's frontier, with the batch-wide repetition penalty."""

    def __init__(
        self,
        *,
        validate_fn: ValidateFn,
        coder_samples_fn: CoderSamplesFn,
        reward: ProposerRewardConfig,
        parse_fn: CodeParser = parse_proposer_completion,
        on_rewards: Callable[[ProposerRewardRecord], None] | None = None,
        **grpo_kwargs: Any,
    ):
        self.ledger = ProposalLedger(validate_fn, coder_samples_fn, parse_fn)
        self.reward_config = reward
        self.on_rewards = on_rewards
        self.last_record: ProposerRewardRecord | None = None
        super().__init__(reward_funcs=[make_proposer_reward_func(self.ledger, reward.rho)], **grpo_kwargs)

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        from accelerate.utils import gather_object

        self.ledger.reset()
        raw = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)  # (N, 1), gathered
        proposals = gather_object(self.ledger.proposals)
        rewards = [None if math.isnan(r) else r for r in raw[:, 0].tolist()]
        sources = [p.source if p.valid else None for p in proposals]
        final = penalised_rewards(rewards, sources, self.reward_config)
        for p, r in zip(proposals, final, strict=True):
            p.reward = r
        final_t = torch.tensor([math.nan if r is None else r for r in final], dtype=raw.dtype, device=raw.device)
        final_t = final_t.unsqueeze(1)  # (N, 1)
        metrics = proposer_step_metrics(proposals, raw.cpu(), final_t.cpu())
        # where this process's share of the batch spent its time (validation, the Coder's generation and judging)
        metrics.update({f"proposer/{k}_s": v for k, v in self.ledger.seconds.items()})
        mode = "train" if self.model.training else "eval"
        record_step_metrics(self._metrics[mode], metrics)
        group_size = self.num_generations if self.model.training else self.num_generations_eval
        self.last_record = ProposerRewardRecord(self.state.global_step, group_size, raw, final_t, proposals, metrics)
        if self.accelerator.is_main_process:
            logger.info(
                "proposer step %d | valid %.3f | coder success %.3f | duplicates %.3f | validate %.1fs | coder %.1fs",
                self.state.global_step,
                metrics["proposer/valid_share"],
                metrics["proposer/coder_success_mean"],
                metrics["proposer/duplicate_share"],
                self.ledger.seconds.get("validate", math.nan),
                self.ledger.seconds.get("coder_samples", math.nan),
            )
            if self.on_rewards is not None:
                self.on_rewards(self.last_record)
        return final_t


def proposer_dataset(api_sets: Sequence[Sequence[str]], prompt_fn: Callable[[Sequence[str]], list[dict]]):
    """One row per API set: `prompt` (chat messages) and `apis` (passed through to the reward function)."""
    from datasets import Dataset

    return Dataset.from_list([{"prompt": prompt_fn(a), "apis": list(a)} for a in api_sets])


def build_proposer_trainer(
    config: ProposerPhaseConfig,
    api_sets: Sequence[Sequence[str]],
    validate_fn: ValidateFn,
    coder_samples_fn: CoderSamplesFn,
    *,
    parse_fn: CodeParser = parse_proposer_completion,
    prompt_fn: Callable[[Sequence[str]], list[dict]] = proposer_messages,
    model: Any = None,
    tokenizer: Any = None,
    on_rewards: Callable[[ProposerRewardRecord], None] | None = None,
) -> ProposerGRPOTrainer:
    """The configured trainer, not yet trained (`run_proposer_phase` trains it; tests inspect it)."""
    if model is None:
        model, tokenizer = load_policy(config.model, tokenizer)
    write_resolved_config(config, config.output_dir)
    return ProposerGRPOTrainer(
        validate_fn=validate_fn,
        coder_samples_fn=coder_samples_fn,
        reward=config.reward,
        parse_fn=parse_fn,
        on_rewards=on_rewards,
        model=model,
        args=config.to_grpo_config([1.0]),
        train_dataset=proposer_dataset(api_sets, prompt_fn),
        processing_class=tokenizer,
        callbacks=[MetricsJsonlCallback(f"{config.output_dir}/metrics.jsonl")],
    )


def run_proposer_phase(
    config: ProposerPhaseConfig,
    api_sets: Sequence[Sequence[str]],
    validate_fn: ValidateFn,
    coder_samples_fn: CoderSamplesFn,
    *,
    parse_fn: CodeParser = parse_proposer_completion,
    prompt_fn: Callable[[Sequence[str]], list[dict]] = proposer_messages,
    model: Any = None,
    tokenizer: Any = None,
    on_rewards: Callable[[ProposerRewardRecord], None] | None = None,
    resume: bool | str = "auto",
) -> PhaseResult:
    """Train the Proposer on prompts built from `api_sets`; resumes from output_dir's last checkpoint by default."""
    trainer = build_proposer_trainer(
        config,
        api_sets,
        validate_fn,
        coder_samples_fn,
        parse_fn=parse_fn,
        prompt_fn=prompt_fn,
        model=model,
        tokenizer=tokenizer,
        on_rewards=on_rewards,
    )
    checkpoint = resolve_resume(config.output_dir, resume)
    trainer.train(resume_from_checkpoint=checkpoint)
    return finish_phase(trainer, config.output_dir, checkpoint)
