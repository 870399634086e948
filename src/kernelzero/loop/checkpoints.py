"""A training phase's checkpoints when the loop resumes: torn ones removed, finished ones not re-trained, and the
test-only fault inside a checkpoint write. Also silences transformers' log printing under the loop's progress bars.

transformers writes `checkpoint-N/` in place (weights, optimizer, RNG state, then trainer_state.json last) and
`get_last_checkpoint` picks the highest N whether complete or not, so a kill mid-save would make the next resume fail;
and a phase resumed from a checkpoint at max_steps trains one step more (transformers 5.24). The loop calls
`clean_torn_checkpoints` and `finished_checkpoint` before every phase.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from pathlib import Path

from kernelzero.loop.runlog import FAULT_ENV, fault


def checkpoint_step(ckpt: Path) -> int | None:
    """The global step a complete checkpoint-N folder was saved at; None for one a kill left incomplete
    (transformers writes trainer_state.json last)."""
    try:
        return int(json.loads((ckpt / "trainer_state.json").read_text())["global_step"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def clean_torn_checkpoints(output_dir: Path) -> list[str]:
    """Delete checkpoint-N folders a kill left incomplete."""
    removed = []
    for ckpt in sorted(output_dir.glob("checkpoint-*")) if output_dir.is_dir() else []:
        if checkpoint_step(ckpt) is None:
            shutil.rmtree(ckpt)
            removed.append(ckpt.name)
    return removed


def last_checkpoint(output_dir: Path) -> tuple[int, Path] | None:
    """(step, folder) of the phase's latest complete checkpoint, where it resumes from; None without one."""
    found = [(step, c) for c in output_dir.glob("checkpoint-*") if (step := checkpoint_step(c)) is not None]
    return max(found, default=None)


def finished_checkpoint(output_dir: Path, max_steps: int) -> Path | None:
    """The phase's complete checkpoint at (or past) max_steps, if a kill came after it and before the commit."""
    for ckpt in sorted(output_dir.glob("checkpoint-*")) if output_dir.is_dir() else []:
        step = checkpoint_step(ckpt)
        if step is not None and step >= max_steps:
            return ckpt
    return None


_TRAINING_STATE = {"optimizer.pt", "scheduler.pt", "rng_state.pth", "trainer_state.json", "training_args.bin"}


def export_final(checkpoint: Path, final: Path) -> None:
    """Copy a checkpoint's weights and tokenizer (not its optimizer or RNG state) to `final`, atomically."""
    tmp = final.with_name(final.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(checkpoint, tmp, ignore=lambda _d, names: [n for n in names if n in _TRAINING_STATE])
    shutil.rmtree(final, ignore_errors=True)
    tmp.rename(final)


@contextlib.contextmanager
def quiet_trainer_prints(quiet: bool):
    """With a progress display on, TRL's bars are off (disable_tqdm) and transformers then prints every log dict to
    stdout (PrinterCallback); silence that: the same values are in metrics.jsonl, TensorBoard and the step lines."""
    if not quiet:
        yield
        return
    from transformers.trainer_callback import PrinterCallback

    original = PrinterCallback.on_log
    PrinterCallback.on_log = lambda self, args, state, control, logs=None, **kw: None
    try:
        yield
    finally:
        PrinterCallback.on_log = original


@contextlib.contextmanager
def checkpoint_fault(phase: str):
    """Test hook: with KZ_FAULT_AT=<phase>:checkpoint the process dies inside a TRL checkpoint write, after the
    weights and optimizer are saved and before trainer_state.json (a torn checkpoint)."""

    if os.environ.get(FAULT_ENV) != f"{phase}:checkpoint":
        yield
        return
    from transformers import Trainer

    original = Trainer._save_rng_state

    def dying(self, output_dir):
        fault(f"{phase}:checkpoint")
        return original(self, output_dir)

    Trainer._save_rng_state = dying
    try:
        yield
    finally:
        Trainer._save_rng_state = original
