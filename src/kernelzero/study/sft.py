"""The study's SFT cold start of either role, through the project's SFT path (`trainers.sft.run_sft`), with the
stopping rule fixed in `StudyConfig`: a plateau of the validation loss on held-out training-pair examples.

The Coder learns (task -> writer solution) with the Coder prompt the GRPO phase uses; the Proposer learns (API set
-> valid family task) with the Proposer prompt, its answer a ```python block as `parse_proposer_completion` reads it.
The held-out split is drawn by task, seeded; both splits are training-pair tasks only (the test pairs never reach
SFT), and `pairs.jsonl` records which example went where so that this can be checked from the files.
"""

from __future__ import annotations

import functools
import json
import math
import random
from collections.abc import Callable
from pathlib import Path

from transformers import TrainerCallback

from kernelzero.roles.proposer import proposer_messages
from kernelzero.study.config import StudyConfig
from kernelzero.study.weights import weights_digest
from kernelzero.tasks import Task
from kernelzero.trainers.coder import coder_prompt
from kernelzero.trainers.config import SFTPhaseConfig
from kernelzero.trainers.sft import SolutionPair, run_sft


class PlateauStop(TrainerCallback):
    """Stop training once the evaluation loss has failed `patience` times in a row to beat the best loss so far by
    more than `min_improvement` (relative). Every evaluation is kept in `history`, for the record of the stage."""

    def __init__(self, patience: int, min_improvement: float):
        self.patience, self.min_improvement = patience, min_improvement
        self.best, self.bad = math.inf, 0
        self.history: list[tuple[int, float]] = []
        self.stopped_at: int | None = None

    def on_train_begin(self, args, state, control, **kwargs):
        # A run resumed from a checkpoint starts with that checkpoint's log: replay its evaluations, so the rule
        # judges the whole history and not only what this process saw.
        self.best, self.bad, self.history = math.inf, 0, []
        for entry in state.log_history:
            if "eval_loss" in entry:
                self.see(entry["step"], entry["eval_loss"])

    def on_evaluate(self, args, state, control, metrics=None, **kwargs):
        loss = (metrics or {}).get("eval_loss")
        if loss is not None and self.see(state.global_step, loss):
            self.stopped_at = state.global_step
            control.should_training_stop = True

    def see(self, step: int, loss: float) -> bool:
        """Record one evaluation; whether the rule now says stop."""
        self.history.append((step, float(loss)))
        if loss < self.best * (1.0 - self.min_improvement):
            self.best, self.bad = float(loss), 0
        else:
            self.bad += 1
        return self.bad >= self.patience


def role_pairs(role: str, corpus: Path) -> list[SolutionPair]:
    """The role's SFT examples: Coder pairs from corpus.jsonl, Proposer (API set -> task source) from proposer.jsonl.
    A Proposer example is a SolutionPair whose `solution` is the task source (rendered by `proposer_prompt`)."""
    name = "corpus.jsonl" if role == "coder" else "proposer.jsonl"
    rows = [json.loads(x) for x in (corpus / name).read_text(encoding="utf-8").splitlines() if x.strip()]
    pairs = []
    for r in rows:
        task = Task(name=r["task_name"], source=r["task_source"], origin="proposed", apis=tuple(r["apis"]))
        pairs.append(SolutionPair(task, r["solution"] if role == "coder" else r["task_source"], "triton"))
    if len(pairs) < 2:
        raise ValueError(f"{corpus / name}: {len(pairs)} example(s); SFT with a validation split needs at least 2")
    return pairs


def proposer_prompt(task: Task, backend: str, brief: bool = False) -> list[dict]:
    """The Proposer's chat for the task's API set (`backend` is unused: a task is backend-free)."""
    return proposer_messages(task.apis, brief=brief)


def split(pairs: list[SolutionPair], fraction: float, seed: int) -> tuple[list[SolutionPair], list[SolutionPair]]:
    """(train, validation), validation at least one example and at most all but one, drawn by a seeded shuffle."""
    order = list(range(len(pairs)))
    random.Random(f"sft-split:{seed}").shuffle(order)
    n_val = min(len(pairs) - 1, max(1, round(fraction * len(pairs))))
    val = set(order[:n_val])
    return [p for i, p in enumerate(pairs) if i not in val], [p for i, p in enumerate(pairs) if i in val]


def sft_role(role: str, corpus: Path, init: Path, out: Path, config: StudyConfig, seed: int,
             say: Callable[[str], None], before: str | None = None) -> dict:  # fmt: skip
    """Cold-start one role from its initial weights into `out/final` (the lowest-loss checkpoint, or the last weights:
    `StudyConfig.sft_keep`) and record the run in `out/done.json` (returned), with its weights' digest; `before`: the
    digest an earlier training of the same role recorded (its weights gone, `study.weights`), and the record says
    whether this one reproduced it."""
    train, val = split(role_pairs(role, corpus), config.val_fraction, seed)
    out.mkdir(parents=True, exist_ok=True)
    rows = [{"task_name": p.task.name, "task_source": p.task.source, "apis": list(p.task.apis), "split": s}
            for s, ps in (("train", train), ("val", val)) for p in ps]  # fmt: skip
    (out / "pairs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    every, best = config.sft_eval_every, config.sft_keep == "best"
    on_cpu = config.device == "cpu" or (config.device == "auto" and not _cuda())
    cfg = SFTPhaseConfig(output_dir=str(out), model=str(init), learning_rate=config.sft_lr,
                         max_steps=config.sft_max_steps, per_device_train_batch_size=config.sft_batch,
                         max_length=config.models.shape.max_position_embeddings, save_steps=every,
                         save_total_limit=2, logging_steps=min(every, 10), seed=seed, use_cpu=on_cpu,
                         sft_overrides={"eval_strategy": "steps", "eval_steps": every, "load_best_model_at_end": best,
                                        "metric_for_best_model": "eval_loss", "per_device_eval_batch_size":
                                        config.sft_batch, "lr_scheduler_type": config.sft_scheduler,
                                        "warmup_steps": min(50, config.sft_max_steps // 10)})  # fmt: skip
    # `last` trains every step and only records the validation loss: the rule never stops it
    stop = PlateauStop(config.sft_patience if best else math.inf, config.sft_min_improvement)
    prompt_fn = functools.partial(proposer_prompt if role == "proposer" else coder_prompt,
                                  brief=config.prompts == "brief")  # the prompts the loop and the evaluation use
    result = run_sft(cfg, train, eval_pairs=val, callbacks=[stop], prompt_fn=prompt_fn)
    reason = f"plateau at step {stop.stopped_at}" if stop.stopped_at is not None else "max steps"
    record = {"role": role, "train": len(train), "val": len(val), "steps": result.global_step, "stopped": reason,
              "best_eval_loss": stop.best if stop.history else None, "evals": stop.history,
              "final": str(result.final_model_dir), "weights": weights_digest(result.final_model_dir)}  # fmt: skip
    if before is not None:  # trained again: did the same data, seed and settings give the same weights?
        record["reproduced"] = before == record["weights"]
    say(f"  sft {role}: {len(train)} train / {len(val)} val examples, {result.global_step} steps, stopped by "
        f"{reason}, best validation loss {record['best_eval_loss']}")  # fmt: skip
    (out / "done.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return record


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


__all__ = ["PlateauStop", "proposer_prompt", "role_pairs", "sft_role", "split"]
