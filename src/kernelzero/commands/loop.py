"""`train`, `report`, `export`: the co-evolution loop and its run directory."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from kernelzero.commands import app, fail

# ---------------------------------------------------------------------------------------------------------------------
# The loop (issue 9): `train`, `report`, `export`. Heavy imports stay inside the commands.
# ---------------------------------------------------------------------------------------------------------------------
SMOKE_NOTE = (
    "This is a smoke-scale run: the tiny random model on CPU, the Triton interpreter (correctness only, no timing), "
    "one round of a few GRPO steps. It checks the machinery end to end; it does not train anything useful. "
    "A real run: on a GPU node, `accelerate launch --config_file configs/accelerate/zero3.yaml -m kernelzero.cli "
    "train --preset paper` (Qwen2.5-Coder-7B-Instruct, 4 rounds x 20 steps per role; see docs/loop.md)."
)


@app.command("train")
def train_command(
    config: Annotated[Path | None, typer.Option("--config", "-c", help="Run config (.yaml or .json): any subset "
                                                "of RunConfig's fields, nested.")] = None,
    preset: Annotated[str | None, typer.Option(help="Starting values: tiny (default, CPU smoke run) or paper.")] = None,
    resume: Annotated[Path | None, typer.Option(help="Continue the run in this directory (its config.json).")] = None,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Run directory (default runs/<timestamp>).")] = None,
    rounds: Annotated[int | None, typer.Option(min=1, help="Override the config's number of rounds.")] = None,
    seed: Annotated[int | None, typer.Option(help="Override the config's seed.")] = None,
    report: Annotated[bool, typer.Option(help="Write report.md and its plots at the end.")] = True,
) -> None:
    """Run the co-evolution loop: per round a Proposer phase, a validated task batch, a Coder phase (CA-GRPO)."""
    import logging
    import os

    from kernelzero.config import ConfigError, load_config

    main_rank = os.environ.get("RANK", "0") == "0"  # under accelerate launch / torchrun, rank 0 talks and checks

    if resume is not None and (config is not None or preset is not None or out is not None):
        fail("--resume RUN_DIR continues that run with its own config.json: drop --config/--preset/--out")
    if resume is not None:
        from kernelzero.coevolve import CONFIG_FILE
        from kernelzero.config import config_from_dict
        from kernelzero.runlog import read_json

        saved = read_json(resume / CONFIG_FILE)
        if saved is None:
            fail(f"--resume {resume}: not a run directory (no {CONFIG_FILE})")
        try:
            cfg = config_from_dict(saved)
        except ConfigError as e:
            fail(f"{resume / CONFIG_FILE}: {e}")
        run_dir = resume
    else:
        if config is not None and not config.exists():
            fail(f"--config {config} does not exist")
        try:
            cfg = load_config(config, preset)
        except ConfigError as e:
            fail(str(e))
        run_dir = out or Path("runs") / time.strftime("%Y%m%d-%H%M%S")
        if main_rank and (run_dir / "config.json").exists():
            fail(f"{run_dir} already holds a run: --resume {run_dir} to continue it, or choose another --out")
    if rounds is not None or seed is not None:
        import dataclasses

        if resume is not None:
            fail("--rounds/--seed cannot change a run being resumed")
        cfg = dataclasses.replace(cfg, rounds=rounds or cfg.rounds, seed=cfg.seed if seed is None else seed)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    smoke = cfg.preset == "tiny" and cfg.coder.model is None and main_rank
    if smoke:
        typer.echo(SMOKE_NOTE)
    if main_rank:
        typer.echo(f"run directory: {run_dir}")

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from kernelzero.coevolve import CoEvolution

    console = Console(stderr=True)
    start = time.monotonic()
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=False, disable=not main_rank) as progress:  # fmt: skip
        def say(message: str) -> None:
            if main_rank:
                progress.console.print(message, soft_wrap=True, markup=False, highlight=False)

        loop = CoEvolution(cfg, run_dir, say=say, progress=progress)
        loop.run()
    if report and main_rank:
        from kernelzero.report import write_report

        path = write_report(run_dir)
        typer.echo(f"report: {path}")
    if not main_rank:
        return
    typer.echo(f"done in {time.monotonic() - start:.0f} s: {run_dir}")
    if smoke:
        typer.echo("(smoke scale: see above for a real run)")


@app.command("report")
def report_command(run_dir: Annotated[Path, typer.Argument(help="A run directory of `kernelzero train`.")]) -> None:
    """Rebuild RUN_DIR/report.md and its plots from the run's JSONL records."""
    if not (run_dir / "config.json").exists():
        fail(f"{run_dir} is not a run directory (no config.json)")
    from kernelzero.report import write_report

    typer.echo(str(write_report(run_dir)))


@app.command("export")
def export_command(
    run_dir: Annotated[Path, typer.Argument(help="A run directory of `kernelzero train`.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Output folder: corpus.jsonl and dataset/.")],
) -> None:
    """Export every correct (task, solution, verdict) of a run as a datasets dataset and JSONL, ready for SFT."""
    if not (run_dir / "config.json").exists():
        fail(f"{run_dir} is not a run directory (no config.json)")
    from kernelzero.export import export_corpus

    n = export_corpus(run_dir, out)
    typer.echo(f"{n} verified solution(s) -> {out}/corpus.jsonl and {out}/dataset")
