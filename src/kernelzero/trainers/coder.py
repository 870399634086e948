"""The Coder's GRPO phase: `CoderGRPOTrainer` (TRL's GRPOTrainer with the CA-GRPO gate) and `run_coder_phase`.

Why an override and not a reward function: a group of `num_generations` rollouts can be split across processes, and
the gate needs the whole group's accuracy. `GRPOTrainer._calculate_rewards` returns the reward matrix *after*
gathering it from every process (rows = completions, each group's rows contiguous), so the override is the one place
that sees whole groups before TRL turns rewards into advantages. The override is a few lines around pure functions
(`kernelzero.rewards.cagrpo`); a unit test pins the private method's signature so a TRL upgrade fails loudly.

TRL then computes r = nansum(matrix * [1, beta]) per row and group-normalises it; we force
`multi_objective_aggregation="sum_then_normalize"`, since normalising each column separately would break
r_i = c_i * (1 + T(G) * beta * f(S_i)).

Dynamic sampling (DAPO), `dynamic_sampling=True`: groups that are all correct or all wrong (on correctness) are set
to NaN in the matrix, which TRL treats as unscorable: zero advantage, left out of the reward statistics. DAPO also
*refills* the batch with fresh informative groups; TRL 1.16 has no hook for that short of re-implementing
`_generate_and_score_completions` (~600 lines), so filtered groups still occupy batch slots (they carry no policy
gradient, but their tokens count in the "dapo" loss normaliser). Raise the generation batch to compensate.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from trl import GRPOTrainer

from kernelzero.judge.verdict import STATUSES, Verdict
from kernelzero.rewards.cagrpo import (
    GateConfig,
    gate_open_per_group,
    gate_reward_matrix,
    mask_groups,
    uninformative_groups,
)
from kernelzero.roles.coder import Judged, coder_messages, parse_coder_completion
from kernelzero.tasks import Task
from kernelzero.trainers.coder_rewards import CodeParser, JudgeFn, VerdictLedger, make_coder_reward_funcs
from kernelzero.trainers.common import (
    MetricsJsonlCallback,
    PhaseResult,
    finish_phase,
    load_policy,
    logger,
    record_step_metrics,
    resolve_resume,
    write_resolved_config,
)
from kernelzero.trainers.config import CoderPhaseConfig

PromptFn = Callable[[Task, str], list[dict]]
"""(task, backend) -> chat messages for one Coder rollout."""


def coder_prompt(task: Task, backend: str, brief: bool = False) -> list[dict]:
    """The Coder's chat for a task (kernelzero.roles.coder's prompt: rules, a worked example, the task; `brief`:
    the task alone)."""
    return coder_messages(task.source, backend, brief=brief)


def coder_answer(solution: str) -> str:
    """An assistant turn holding a solution, in the form `parse_coder_completion` reads back (SFT targets)."""
    return "```python\n" + solution.strip("\n") + "\n```"


@dataclass
class CoderRewardRecord:
    """One generation batch as the gate saw it, gathered over every process (rows in TRL's order): what the trainer
    decided and logged, so that the loop records it instead of deriving it a second time."""

    step: int
    group_size: int
    raw: torch.Tensor  # (N, 2) [correct, speedup] as the reward functions returned them
    gated: torch.Tensor  # (N, 2) what `_calculate_rewards` returned to TRL
    gate_open: torch.Tensor  # (B,) bool: T(G) of each group, the decision `gated` applies
    judged: list[Judged]  # (N,) completion, the code parsed from it (what the judge ran), verdict
    task_names: list[str]  # (N,)
    metrics: dict[str, float]  # `coder_step_metrics` of this batch, as the trainer logged them

    @property
    def verdicts(self) -> list[Verdict]:
        return [j.verdict for j in self.judged]

    @property
    def completions(self) -> list[str]:
        return [j.completion for j in self.judged]


def coder_step_metrics(
    raw: torch.Tensor,
    gated: torch.Tensor,
    gate_open: torch.Tensor,
    statuses: Sequence[str],
    beta: float,
    filtered: torch.Tensor | None = None,
) -> dict[str, float]:
    """Per-step Coder metrics, fixed keys in a fixed order, from what the gate decided (never re-derived: TRL's matrix
    is float32, and 7/10 compared with alpha 0.7 in float32 is below it).

    raw, gated: (N, 2) as the reward functions returned them and as handed to TRL; gate_open: (B,) T(G) per group;
    statuses: (N,); beta: the speedup column's weight; filtered: (B,) groups dropped by dynamic sampling, if it is
    on. NaN where undefined (TRL's log skips NaN)."""
    correct, speedup = raw[:, 0], raw[:, 1]  # (N,), (N,)
    scored = ~torch.isnan(correct)
    n_scored = int(scored.sum())
    has_scored = scored.view(gate_open.shape[0], -1).any(dim=1)  # (B,)
    timed = (correct == 1) & ~torch.isnan(speedup)
    weights = torch.tensor([1.0, beta], dtype=gated.dtype, device=gated.device)
    reward = gated.nan_to_num(0.0) @ weights  # (N,) TRL's weighted sum, in which an unscored row adds 0
    counts = Counter(statuses)
    metrics = {
        "coder/pass_rate": float(correct[scored].sum()) / n_scored if n_scored else math.nan,
        "coder/gate_open_share": float(gate_open[has_scored].double().mean()) if has_scored.any() else math.nan,
        "coder/reward_mean": float(reward.mean()) if reward.numel() else math.nan,
        "coder/speedup_correct_mean": float(speedup[timed].mean()) if timed.any() else math.nan,
        "coder/speed_ranked_share": float(speed_ranked_groups(gated, gate_open, beta)[has_scored].double().mean())
        if has_scored.any() else math.nan,
    }
    metrics.update({f"judge/status/{s}": float(counts.get(s, 0)) for s in STATUSES})
    if filtered is not None:
        metrics["coder/dynamic_sampling_filtered_share"] = float(filtered.float().mean())
    return metrics


def speed_ranked_groups(gated: torch.Tensor, gate_open: torch.Tensor, beta: float) -> torch.Tensor:
    """The groups in which the speed term tells correct rollouts apart, as a bool (B,): beta > 0, the gate is open
    and two correct rows carry different speed terms. Only there can speed move an advantage under per-group scaling
    (TRL's scale_rewards="group"): a term shared by every correct row of a group multiplies its rewards by one
    constant, which its std divides out again (identical correct completions, and the judge's one verdict per
    source, give exactly that).

    gated: (N, 2) as handed to TRL (column 1 is c_i * T(G) * f(S_i), NaN when unscored); gate_open: (B,); beta: the
    column's weight."""
    n_groups = gate_open.shape[0]
    correct = gated[:, 0].view(n_groups, -1)  # (B, G)
    term = gated[:, 1].view(n_groups, -1)  # (B, G)
    is_correct = correct == 1  # NaN compares False
    high = torch.where(is_correct, term, torch.full_like(term, -math.inf)).amax(dim=1)  # (B,)
    low = torch.where(is_correct, term, torch.full_like(term, math.inf)).amin(dim=1)  # (B,)
    return gate_open & (is_correct.sum(dim=1) >= 2) & (high > low) & (beta > 0)  # (B,)


def step_log_line(step: int, metrics: dict[str, float]) -> str:
    """The one fixed-order stdlib log line per generation step."""
    statuses = " ".join(f"{s}={int(metrics[f'judge/status/{s}'])}" for s in STATUSES if metrics[f"judge/status/{s}"])
    return (
        f"coder step {step} | pass {metrics['coder/pass_rate']:.3f} | gate open {metrics['coder/gate_open_share']:.3f}"
        f" | speedup(correct) {metrics['coder/speedup_correct_mean']:.3f} | {statuses}"
    )


class CoderGRPOTrainer(GRPOTrainer):
    """GRPOTrainer whose rewards come from the judge and pass through the CA-GRPO gate on the gathered matrix."""

    def __init__(
        self,
        *,
        judge_fn: JudgeFn,
        gate: GateConfig,
        parse_fn: CodeParser = parse_coder_completion,
        tasks: Sequence[Task] = (),
        dynamic_sampling: bool = False,
        on_rewards: Callable[[CoderRewardRecord], None] | None = None,
        **grpo_kwargs: Any,
    ):
        """`grpo_kwargs` go to GRPOTrainer (model, args, train_dataset, processing_class, callbacks...); the reward
        functions are ours. `tasks` are handed to the judge as they are (matched by name). `on_rewards` is called on
        the main process with every batch's record."""
        args = grpo_kwargs["args"]
        if args.multi_objective_aggregation != "sum_then_normalize" or list(args.reward_weights) != [1.0, gate.beta]:
            raise ValueError(
                "CA-GRPO needs sum_then_normalize and reward_weights [1, beta]; build args with "
                "CoderPhaseConfig.to_grpo_config"
            )
        self.ledger = VerdictLedger(judge_fn, parse_fn, {t.name: t for t in tasks})
        self.gate = gate
        self.dynamic_sampling = dynamic_sampling
        self.on_rewards = on_rewards
        self.last_record: CoderRewardRecord | None = None
        super().__init__(reward_funcs=make_coder_reward_funcs(self.ledger), **grpo_kwargs)

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        from accelerate.utils import gather_object

        self.ledger.reset()
        raw = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)  # (N, 2), gathered
        group_size = self.num_generations if self.model.training else self.num_generations_eval
        gated = gate_reward_matrix(raw, group_size, self.gate)  # (N, 2)
        gate_open = gate_open_per_group(raw, group_size, self.gate.alpha)  # (B,) the decision `gated` applies
        filtered = uninformative_groups(raw, group_size) if self.dynamic_sampling else None  # (B,)
        if filtered is not None:
            gated = mask_groups(gated, filtered, group_size)

        judged = gather_object(self.ledger.judged)
        names = gather_object([x["name"] for x in inputs])
        metrics = coder_step_metrics(raw.cpu(), gated.cpu(), gate_open.cpu(), [j.verdict.status for j in judged],
                                     self.gate.beta, filtered)  # fmt: skip
        mode = "train" if self.model.training else "eval"
        record_step_metrics(self._metrics[mode], metrics)
        self.last_record = CoderRewardRecord(self.state.global_step, group_size, raw, gated, gate_open, judged, names,
                                             metrics)  # fmt: skip
        if self.accelerator.is_main_process:
            logger.info(step_log_line(self.state.global_step, metrics))
            if self.on_rewards is not None:
                self.on_rewards(self.last_record)
        return gated


def coder_dataset(tasks: Sequence[Task], backends: Sequence[str], prompt_fn: PromptFn = coder_prompt):
    """One row per (task, backend): `prompt` (chat messages) plus `name`, `source`, `backend`, which TRL passes
    through to the reward functions. A task listed twice gives its rows twice."""
    from datasets import Dataset

    seen: dict[str, str] = {}
    for t in tasks:  # a task may repeat (the loop repeats a few tasks to fill a step), a name may not be shared
        if seen.setdefault(t.name, t.source) != t.source:
            raise ValueError(f"two different tasks are named {t.name!r}: verdicts and logs are keyed on task names")
    rows = [
        {"prompt": prompt_fn(t, b), "name": t.name, "source": t.source, "backend": b} for t in tasks for b in backends
    ]
    return Dataset.from_list(rows)


def build_coder_trainer(
    config: CoderPhaseConfig,
    tasks: Sequence[Task],
    judge_fn: JudgeFn,
    *,
    parse_fn: CodeParser = parse_coder_completion,
    prompt_fn: PromptFn = coder_prompt,
    model: Any = None,
    tokenizer: Any = None,
    on_rewards: Callable[[CoderRewardRecord], None] | None = None,
) -> CoderGRPOTrainer:
    """The configured trainer, not yet trained (`run_coder_phase` trains it; tests inspect it)."""
    if model is None:
        model, tokenizer = load_policy(config.model, tokenizer)
    args = config.to_grpo_config([1.0, config.gate.beta], multi_objective_aggregation="sum_then_normalize")
    write_resolved_config(config, config.output_dir)
    return CoderGRPOTrainer(
        judge_fn=judge_fn,
        gate=config.gate,
        parse_fn=parse_fn,
        tasks=tasks,
        dynamic_sampling=config.dynamic_sampling,
        on_rewards=on_rewards,
        model=model,
        args=args,
        train_dataset=coder_dataset(tasks, config.backends, prompt_fn),
        processing_class=tokenizer,
        callbacks=[MetricsJsonlCallback(f"{config.output_dir}/metrics.jsonl")],
    )


def run_coder_phase(
    config: CoderPhaseConfig,
    tasks: Sequence[Task],
    judge_fn: JudgeFn,
    *,
    parse_fn: CodeParser = parse_coder_completion,
    prompt_fn: PromptFn = coder_prompt,
    model: Any = None,
    tokenizer: Any = None,
    on_rewards: Callable[[CoderRewardRecord], None] | None = None,
    resume: bool | str = "auto",
) -> PhaseResult:
    """Train the Coder with CA-GRPO on `tasks`; resumes from the last checkpoint in `config.output_dir` by default
    (see `resolve_resume`). model/tokenizer: an already loaded policy, else loaded from `config.model`."""
    trainer = build_coder_trainer(
        config,
        tasks,
        judge_fn,
        parse_fn=parse_fn,
        prompt_fn=prompt_fn,
        model=model,
        tokenizer=tokenizer,
        on_rewards=on_rewards,
    )
    checkpoint = resolve_resume(config.output_dir, resume)
    trainer.train(resume_from_checkpoint=checkpoint)
    return finish_phase(trainer, config.output_dir, checkpoint)
