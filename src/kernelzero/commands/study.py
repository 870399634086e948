"""`study`: the learning study, from the cold-start corpus to the arms table (see `kernelzero.study.run`)."""

from __future__ import annotations

import dataclasses
import logging
import shutil
import time
from pathlib import Path
from typing import Annotated

import typer

from kernelzero.commands.app import app
from kernelzero.commands.ui import check_choice, check_file, fail, interruptible, quiet_library_warnings
from kernelzero.loop.config import ConfigError, merge, read_config_file
from kernelzero.study.config import (
    ARMS,
    CORPUS_FIELDS,
    SFT_FIELDS,
    StudyConfig,
    field_mismatch,
    pin_config,
    smoke_config,
)
from kernelzero.study.report import SMOKE_NOTE
from kernelzero.study.weights import pack as pack_folder
from kernelzero.study.weights import sft_weights, study_source


@app.command("study")
def study_command(
    out: Annotated[Path, typer.Option("--out", "-o", help="Study folder; a rerun resumes from it and other arms and "
                                      "seeds add to it.")] = Path("runs/study"),
    arm: Annotated[str, typer.Option(help=f"One of {', '.join(ARMS)}.")] = "main",
    seed: Annotated[int, typer.Option(min=0, help="Seeds the models' init, SFT, sampling and the loop.")] = 0,
    rounds: Annotated[int | None, typer.Option(min=1, help="Co-evolution rounds (default: 3; smoke: 1).")] = None,
    device: Annotated[str, typer.Option(help="auto (CUDA when present), cpu or cuda.")] = "auto",
    config: Annotated[Path | None, typer.Option("--config", "-c", help="A .yaml/.json file of StudyConfig fields "
                                                "(kernelzero.study.config) over the defaults.")] = None,
    smoke: Annotated[bool, typer.Option(help="Every stage at toy size on CPU: checks the pipeline, measures "
                                        "nothing.")] = False,
    corpus_from: Annotated[Path | None, typer.Option("--corpus-from", help="Start a new --out from the corpus of "
                                                     "another study (its folder or --pack file) instead of judging "
                                                     "it again: its corpus fields (tasks, shapes, judge) must equal "
                                                     "this config's; everything after the corpus may differ.")] = None,
    sft_from: Annotated[Path | None, typer.Option("--sft-from", help="Start a new --out (or a seed new to it) from "
                                                  "another study's corpus and this seed's SFT of both roles, weights "
                                                  "included (its folder, or its pack with weights.tgz.NN beside it): "
                                                  "its corpus and SFT fields must equal this config's; its "
                                                  "evaluations after SFT are taken where their fields equal too. The "
                                                  "loop and everything after it may differ.")] = None,
    judge_slots: Annotated[int | None, typer.Option(min=1, help="Live candidate workers per GPU of this "
                                                    "invocation's judges (default: the config's). How fast, never "
                                                    "what is judged: a study resumes with another value.")] = None,
    pack: Annotated[Path | None, typer.Option(help="When the invocation ends (done, failed or interrupted), also "
                                              "write the folder without weights to this .tar.gz (a few MB: what a "
                                              "lent machine can bring back). Unpacked into --out elsewhere, the "
                                              "study resumes; what needed the weights runs again.")] = None,
) -> None:
    """The learning study: a from-scratch Coder and Proposer on a controlled task family, SFT cold start, then the
    co-evolution loop; test-task pass@1 and fast_1 after SFT and after each round, for one arm and seed."""
    check_choice("--arm", arm, tuple(ARMS))
    check_choice("--device", device, ("auto", "cpu", "cuda"))
    if out.exists() and not out.is_dir():
        fail(f"--out {out}: not a folder")
    if smoke and device == "cuda":
        fail("--smoke runs on CPU: drop --device cuda")
    check_file("--config", config)
    if pack is not None and (pack.is_dir() or not pack.name.endswith((".tar.gz", ".tgz"))):
        fail(f"--pack {pack}: give a file name ending in .tar.gz or .tgz")
    base = smoke_config() if smoke else StudyConfig(device=device)
    try:
        cfg = merge(base, read_config_file(config)) if config is not None else base
    except ConfigError as e:
        fail(str(e))
    if rounds is not None:
        cfg = dataclasses.replace(cfg, rounds=rounds)
    if judge_slots is not None:
        cfg = dataclasses.replace(cfg, judge_slots=judge_slots)
    if smoke:
        typer.echo(SMOKE_NOTE)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    quiet_library_warnings()
    for flag, source in (("--corpus-from", corpus_from), ("--sft-from", sft_from)):
        if source is not None and not source.exists():
            fail(f"{flag} {source}: no such file or folder")
    if sft_from is not None and corpus_from not in (None, sft_from):
        fail(f"--sft-from {sft_from} takes its corpus too: drop --corpus-from {corpus_from}")
    source = sft_from or corpus_from
    take_corpus = source is not None and not (out / "corpus").exists()
    if source is not None and not take_corpus:
        # a rerun of the same command resumes, with the corpus the first invocation took (or judged)
        typer.echo(f"{out} holds a corpus already: its corpus is not taken from {source}")
    take_sft = sft_from is not None and not (out / f"seed-{seed}" / "sft").exists()
    try:
        if not (take_corpus or take_sft):
            pin_config(out, cfg)
        else:
            flag, fields = ("--sft-from", SFT_FIELDS) if take_sft else ("--corpus-from", CORPUS_FIELDS)
            with study_source(source, weights=take_sft) as (theirs, root):
                if differ := field_mismatch(theirs, cfg, fields):
                    raise ValueError(f"{flag} {source}: it was made with other {', '.join(differ)}")
                # ValueError before anything is written, when they are not all there
                weights = sft_weights(root, seed) if take_sft else {}
                pin_config(out, cfg)
                if take_corpus:
                    shutil.copytree(root / "corpus", out / "corpus")
                    typer.echo(f"corpus taken from {source}")
                if take_sft:
                    from kernelzero.study.merge import seed_start_from

                    for line in seed_start_from(root, theirs, out, seed, cfg, weights):
                        typer.echo(f"seed {seed} from {source}: {line}")
    except ValueError as e:
        fail(str(e))
    from kernelzero.study.run import Study

    start = time.monotonic()
    try:
        with interruptible(f"rerun the same command to resume from {out}"):
            summary = Study(cfg, out, arm=arm, seed=seed, say=lambda m: typer.echo(m)).run()
    finally:
        if pack is not None and out.is_dir():
            typer.echo(f"packed {out} without weights: {pack} ({pack_folder(out, pack) / 1e6:.1f} MB)")
    run = summary["runs"].get(f"{arm}/seed-{seed}", {})
    sft = (run.get("sft") or {}).get("pass@1")
    last = run["rounds"][-1]["pass@1"] if run.get("rounds") else None
    typer.echo(f"done in {time.monotonic() - start:.0f} s: test pass@1 after SFT {sft}, after the last round {last}"
               + (" (smoke: these numbers mean nothing)" if smoke else ""))  # fmt: skip
