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
    coder_model: Annotated[str | None, typer.Option(help="Start the Coder from this local model (e.g. the final/ "
                                                    "of `kernelzero sft`) instead of the config's.")] = None,
    report: Annotated[bool, typer.Option(help="Write report.md and its plots at the end.")] = True,
) -> None:
    """Run the co-evolution loop: per round a Proposer phase, a validated task batch, a Coder phase (CA-GRPO)."""
    import logging
    import os

    from kernelzero.loop.config import ConfigError, load_config

    main_rank = os.environ.get("RANK", "0") == "0"  # under accelerate launch / torchrun, rank 0 talks and checks

    if resume is not None and (config is not None or preset is not None or out is not None):
        fail("--resume RUN_DIR continues that run with its own config.json: drop --config/--preset/--out")
    if resume is not None:
        from kernelzero.loop.coevolve import CONFIG_FILE
        from kernelzero.loop.config import config_from_dict
        from kernelzero.loop.runlog import read_json

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
    if rounds is not None or seed is not None or coder_model is not None:
        import dataclasses

        if resume is not None:
            fail("--rounds/--seed/--coder-model cannot change a run being resumed")
        if coder_model is not None and not Path(coder_model).is_dir():
            fail(f"--coder-model {coder_model}: not a local model directory")
        cfg = dataclasses.replace(cfg, rounds=rounds or cfg.rounds, seed=cfg.seed if seed is None else seed,
                                  coder=dataclasses.replace(cfg.coder, model=coder_model or cfg.coder.model))
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    smoke = cfg.preset == "tiny" and cfg.coder.model is None and main_rank
    if smoke:
        typer.echo(SMOKE_NOTE)
    if main_rank:
        typer.echo(f"run directory: {run_dir}")

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from kernelzero.loop.coevolve import CoEvolution

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
        from kernelzero.loop.report import write_report

        path = write_report(run_dir)
        typer.echo(f"report: {path}")
    if not main_rank:
        return
    typer.echo(f"done in {time.monotonic() - start:.0f} s: {run_dir}")
    if smoke:
        typer.echo("(smoke scale: see above for a real run)")


@app.command("sft")
def sft_command(
    pairs: Annotated[str, typer.Option(help="`builtin` (the seed tasks' verified Triton and CUDA solutions) or an "
                                       "export folder of `kernelzero export` (its corpus.jsonl).")] = "builtin",
    out: Annotated[Path, typer.Option("--out", "-o", help="Output folder: checkpoints, metrics.jsonl, final/.")] = Path(
        "runs/sft"),
    model: Annotated[str | None, typer.Option(help="Local model directory. Default: the tiny local model.")] = None,
    backends: Annotated[str, typer.Option(help="Keep pairs of these backends (comma-separated).")] = "triton,cuda",
    steps: Annotated[int | None, typer.Option(min=1, help="Optimizer steps (default: 120 for the tiny model, which "
                                              "then reproduces the pairs; else one epoch).")] = None,
    lr: Annotated[float | None, typer.Option(help="Learning rate (default: 3e-3 for the tiny model, else "
                                             "2e-5).")] = None,
    batch_size: Annotated[int | None, typer.Option(min=1, help="Pairs per device and step (default: up to 8 for "
                                                   "the tiny model, else 1).")] = None,
    device: Annotated[str, typer.Option(help="auto (CUDA when present), cpu or cuda.")] = "auto",
) -> None:
    """Supervised cold start of the Coder on verified (task, solution) pairs; resumes from --out's last checkpoint.

    The pairs are rendered with the same Coder prompt the GRPO phase uses, so the model learns the answer format RL
    rewards. Start `kernelzero train --coder-model OUT/final` from the result."""
    from kernelzero.roles.coder import BACKENDS

    wanted = tuple(b.strip() for b in backends.split(",") if b.strip())
    if not wanted or any(b not in BACKENDS for b in wanted):
        fail(f"--backends {backends!r}: expected a comma-separated subset of {', '.join(BACKENDS)}")
    if device not in ("auto", "cpu", "cuda"):
        fail(f"--device {device!r}: expected auto, cpu or cuda")
    if pairs != "builtin" and not (Path(pairs) / "corpus.jsonl").exists():
        fail(f"--pairs {pairs}: neither `builtin` nor an export folder (no {Path(pairs) / 'corpus.jsonl'})")
    if model is not None and not Path(model).is_dir():
        fail(f"--model {model}: not a local model directory")
    import torch

    from kernelzero.trainers.sft import SFTPhaseConfig, builtin_pairs, run_sft

    if pairs == "builtin":
        chosen = builtin_pairs(wanted)
    else:
        from kernelzero.loop.export import load_pairs

        chosen = [p for p in load_pairs(pairs) if p.backend in wanted]
    if not chosen:
        fail(f"--pairs {pairs}: no pair with backend in {', '.join(wanted)}")
    on_gpu = device == "cuda" or (device == "auto" and torch.cuda.is_available())
    tiny = model is None
    steps = steps or (120 if tiny else -1)
    cfg = SFTPhaseConfig(output_dir=str(out), model=model, max_steps=steps,
                         learning_rate=lr or (3e-3 if tiny else 2e-5),
                         per_device_train_batch_size=batch_size or (min(8, len(chosen)) if tiny else 1),
                         save_steps=max(1, steps // 4) if steps > 0 else 500, logging_steps=10, use_cpu=not on_gpu,
                         sft_overrides={"lr_scheduler_type": "constant_with_warmup", "warmup_steps": 5})  # fmt: skip
    typer.echo(f"SFT on {len(chosen)} pair(s) ({', '.join(wanted)}), {cfg.max_steps} step(s), lr {cfg.learning_rate}, "
               f"{'GPU' if on_gpu else 'CPU'} -> {out}")  # fmt: skip
    result = run_sft(cfg, chosen)
    last = next((h for h in reversed(result.log_history) if "loss" in h), {})
    typer.echo(f"done: step {result.global_step}, loss {last.get('loss', float('nan')):.4g}, token accuracy "
               f"{last.get('mean_token_accuracy', float('nan')):.3f}; model: {result.final_model_dir}")  # fmt: skip


@app.command("report")
def report_command(run_dir: Annotated[Path, typer.Argument(help="A run directory of `kernelzero train`.")]) -> None:
    """Rebuild RUN_DIR/report.md and its plots from the run's JSONL records."""
    if not (run_dir / "config.json").exists():
        fail(f"{run_dir} is not a run directory (no config.json)")
    from kernelzero.loop.report import write_report

    typer.echo(str(write_report(run_dir)))


@app.command("export")
def export_command(
    run_dir: Annotated[Path, typer.Argument(help="A run directory of `kernelzero train`.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Output folder: corpus.jsonl and dataset/.")],
) -> None:
    """Export every correct (task, solution, verdict) of a run as a datasets dataset and JSONL, ready for SFT."""
    if not (run_dir / "config.json").exists():
        fail(f"{run_dir} is not a run directory (no config.json)")
    from kernelzero.loop.export import export_corpus

    n = export_corpus(run_dir, out)
    typer.echo(f"{n} verified solution(s) -> {out}/corpus.jsonl and {out}/dataset")
