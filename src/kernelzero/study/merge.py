"""Several study folders made side by side, one per arm and seed, read as one study.

A queue of arms and seeds (`bench/study_parallel.py`) runs each `kernelzero study` in its own folder, so no two
processes ever write one file. An arm other than `main` starts from its seed's SFT, copied from that seed's folder
once the evaluation after SFT is done (`seed_arm_folder`). `merge` then gathers the folders into one study folder
without weights, and its report is the study's table."""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path

from kernelzero.study.config import EVAL_FIELDS, PROPOSER_EVAL_FIELDS, StudyConfig, field_mismatch
from kernelzero.study.run import LOOP_API_SETS, LOOP_TASKS, PROPOSER_EVAL_SFT, STAGES_LOG
from kernelzero.study.weights import WEIGHT_PREFIX, weightless

SEED_SHARED = ("models", "sft", "eval-sft", "proposer-eval-sft")
"""A seed's folders every arm of that seed starts from: its initial models, both roles' SFT, and both roles'
evaluations after SFT."""


def _config(folder: Path) -> dict:
    path = folder / "study_config.json"
    if not path.is_file():
        raise ValueError(f"{folder}: not a study folder (no study_config.json)")
    return json.loads(path.read_text(encoding="utf-8"))


def seed_arm_folder(main: Path, dest: Path, seed: int) -> None:
    """Start `dest`, the folder of another arm of `seed`, from `main`'s: its config, corpus, and the seed's models,
    SFT and evaluation after SFT (weights included; trainer checkpoints left out), so that arm trains from the very
    weights the main arm did and the report pairs both with one evaluation after SFT."""
    seed_dir = main / f"seed-{seed}"
    if not (seed_dir / "eval-sft" / "summary.json").is_file():
        raise ValueError(f"{main}: seed {seed}'s evaluation after SFT is not done")
    tmp = dest.with_name(dest.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    shutil.copy2(main / "study_config.json", tmp / "study_config.json")
    shutil.copytree(main / "corpus", tmp / "corpus")
    for name in (LOOP_TASKS, LOOP_API_SETS):
        if (main / name).is_file():
            shutil.copy2(main / name, tmp / name)
    checkpoints = shutil.ignore_patterns(f"{WEIGHT_PREFIX}*")
    for name in SEED_SHARED:
        if (seed_dir / name).is_dir():  # the Proposer's evaluation may not be done yet: the arm then runs its own
            shutil.copytree(seed_dir / name, tmp / seed_dir.name / name, ignore=checkpoints)
    tmp.rename(dest)  # whole or not at all: a copy cut short is not taken for a started arm


def seed_start_from(root: Path, theirs: dict, dest: Path, seed: int, config: StudyConfig,
                    weights: dict[str, tuple[Path, str]]) -> list[str]:  # fmt: skip
    """Start seed SEED of study folder `dest` (run with `config`) from another study's (`root`, its config `theirs`,
    whose SFT fields must equal: `kernelzero study --sft-from` checks): both roles' SFT, its records without
    checkpoints and the weights `study.weights.sft_weights` found (`weights`), and each evaluation after SFT that is
    done there with the same evaluation fields (else it runs here). One line per part, saying what was taken."""
    src = root / f"seed-{seed}"
    tmp = dest / f"seed-{seed}" / "sft.partial"
    shutil.rmtree(tmp, ignore_errors=True)
    for role, (final, _) in weights.items():
        shutil.copytree(src / "sft" / role, tmp / role, ignore=weightless)
        shutil.copytree(final, tmp / role / "final")
    tmp.rename(dest / f"seed-{seed}" / "sft")  # whole or not at all
    lines = ["sft: " + ", ".join(f"{role} {digest}" for role, (_, digest) in weights.items())]
    for name, fields in (("eval-sft", EVAL_FIELDS), (PROPOSER_EVAL_SFT, PROPOSER_EVAL_FIELDS)):
        if not (src / name / "summary.json").is_file():
            lines.append(f"{name}: not done there, runs here")
        elif differ := field_mismatch(theirs, config, fields):
            lines.append(f"{name}: made there with other {', '.join(differ)}, runs here")
        else:
            shutil.copytree(src / name, dest / f"seed-{seed}" / name, ignore=weightless)
            lines.append(f"{name}: taken")
    return lines


def _weights_of(eval_dir: Path) -> str | None:
    path = eval_dir / "summary.json"
    return (json.loads(path.read_text(encoding="utf-8")).get("meta") or {}).get("weights") if path.is_file() else None


def merge(folders: Sequence[str | Path], out: str | Path) -> list[str]:
    """Gather study folders of one config into `out` (which must not exist), without weights; returns what was taken,
    a line each. The corpus and loop tasks come from the first folder holding them; each `seed-S/ARM` may come from
    one folder only (ValueError otherwise); a seed's shared folders (`SEED_SHARED`) from the first folder that has
    them, so list the main arm's first. An evaluation after SFT of other weights than that one (an arm's SFT trained
    again elsewhere) goes to `seed-S/retired/`, where the report finds it for the arms that started from it."""
    folders, out = [Path(f) for f in folders], Path(out)
    if out.exists():
        raise ValueError(f"{out}: already exists")
    if not folders:
        raise ValueError("no study folders to merge")
    config = _config(folders[0])
    for folder in folders[1:]:
        other = _config(folder)
        diff = sorted(k for k in set(config) | set(other) if config.get(k) != other.get(k))
        if diff:
            raise ValueError(f"{folder}: a study with other settings than {folders[0]} ({', '.join(diff)})")
    out.mkdir(parents=True)
    shutil.copy2(folders[0] / "study_config.json", out / "study_config.json")
    taken, stages = [], []
    for folder in folders:
        for name in ("corpus", LOOP_TASKS, LOOP_API_SETS):
            src, dest = folder / name, out / name
            if src.exists() and not dest.exists():
                (shutil.copytree(src, dest) if src.is_dir() else shutil.copy2(src, dest))
                taken.append(f"{name} <- {folder}")
        if (folder / STAGES_LOG).is_file():
            stages.append((folder / STAGES_LOG).read_text(encoding="utf-8"))
        for seed_dir in sorted(folder.glob("seed-*")):
            for part in sorted(p for p in seed_dir.iterdir() if p.is_dir()):
                dest = out / seed_dir.name / part.name
                rel = f"{seed_dir.name}/{part.name}"
                if part.name == "retired":
                    shutil.copytree(part, dest, ignore=weightless, dirs_exist_ok=True)
                elif part.name not in SEED_SHARED:  # an arm
                    if dest.exists():
                        raise ValueError(f"{rel} is in two of the folders (the second: {folder})")
                    shutil.copytree(part, dest, ignore=weightless)
                    taken.append(f"{rel} <- {folder}")
                elif not dest.exists():
                    shutil.copytree(part, dest, ignore=weightless)
                    taken.append(f"{rel} <- {folder}")
                elif part.name.endswith("eval-sft") and _weights_of(part) not in (None, _weights_of(dest)):
                    aside = out / seed_dir.name / "retired" / f"{part.name}-{folder.name}"
                    shutil.copytree(part, aside / part.name, ignore=weightless)
                    taken.append(f"{rel} <- {folder}, other weights: set aside as {aside.relative_to(out)}")
    (out / STAGES_LOG).write_text("".join(stages), encoding="utf-8")
    return taken


__all__ = ["SEED_SHARED", "merge", "seed_arm_folder", "seed_start_from"]
