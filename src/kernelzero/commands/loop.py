"""`train`, `sft`, `report`, `export`: the co-evolution loop, the SFT cold start, and what is made of a run."""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
import re
import time
from pathlib import Path
from typing import Annotated

import typer

from kernelzero.commands.app import PROMPTS_HELP, app
from kernelzero.commands.evaluate import _eval_tasks
from kernelzero.commands.ui import (
    Stages,
    check_choice,
    check_dir,
    check_file,
    fail,
    interruptible,
    quiet_library_warnings,
    say,
)
from kernelzero.eval.export import eval_corpus_rows, eval_tasks_spec
from kernelzero.eval.report import is_eval_dir, rebuild_report
from kernelzero.loop import coevolve
from kernelzero.loop.coevolve import CONFIG_FILE
from kernelzero.loop.config import PRESETS, ConfigError, config_from_dict, load_config
from kernelzero.loop.export import corpus_rows, load_pairs, write_corpus_rows
from kernelzero.loop.report import write_report
from kernelzero.loop.runlog import read_json
from kernelzero.roles.coder import BACKENDS, PROMPTS

SMOKE_NOTE = (
    "This is a smoke-scale run: the tiny random model on CPU, the Triton interpreter (correctness only, no timing), "
    "one round of a few GRPO steps. It checks the machinery end to end; it does not train anything useful. "
    "A real run: on a GPU node, `accelerate launch --config_file configs/accelerate/zero3.yaml -m kernelzero.cli "
    "train --preset paper` (Qwen2.5-Coder-7B-Instruct, 4 rounds x 20 steps per role; see docs/loop.md)."
)
RUN_KINDS = "a training run (config.json) or an eval folder (eval_config.json and verdicts.jsonl)"


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
    """Run the co-evolution loop: per round a Proposer phase, a validated task batch, a Coder phase (CA-GRPO).
    Interrupted, it continues with `kernelzero train --resume RUN_DIR`."""
    main_rank = os.environ.get("RANK", "0") == "0"  # under accelerate launch / torchrun, rank 0 talks and checks

    if resume is not None and (config is not None or preset is not None or out is not None):
        fail("--resume RUN_DIR continues that run with its own config.json: drop --config/--preset/--out")
    if resume is not None and (rounds is not None or seed is not None or coder_model is not None):
        fail("--rounds/--seed/--coder-model cannot change a run being resumed")
    if preset is not None:
        check_choice("--preset", preset, PRESETS)
    check_file("--config", config)
    if coder_model is not None:
        check_dir("--coder-model", Path(coder_model), "local model folder")
    if resume is not None:
        check_dir("--resume", resume, "run directory")
        saved = read_json(resume / CONFIG_FILE)
        if saved is None:
            fail(f"--resume {resume}: not a run directory (no {CONFIG_FILE})")
        try:
            cfg = config_from_dict(saved)
        except ConfigError as e:
            fail(f"{resume / CONFIG_FILE}: {e}")
        run_dir = resume
    else:
        try:
            cfg = load_config(config, preset)
        except ConfigError as e:
            fail(str(e))
        run_dir = out or Path("runs") / time.strftime("%Y%m%d-%H%M%S")
        if main_rank and (run_dir / CONFIG_FILE).exists():
            fail(f"{run_dir} already holds a run: --resume {run_dir} to continue it, or choose another --out")
    if rounds is not None or seed is not None or coder_model is not None:
        cfg = dataclasses.replace(cfg, rounds=rounds or cfg.rounds, seed=cfg.seed if seed is None else seed,
                                  coder=dataclasses.replace(cfg.coder, model=coder_model or cfg.coder.model))
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    quiet_library_warnings()
    smoke = cfg.preset == "tiny" and cfg.coder.model is None and main_rank
    if smoke:
        typer.echo(SMOKE_NOTE)
    if main_rank:
        typer.echo(f"resuming the run in {run_dir} (its config.json)" if resume is not None else
                   f"run directory: {run_dir}")  # fmt: skip
        Stages("train")("loading the trainers (torch, transformers, trl)")

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    start = time.monotonic()
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=False, disable=not main_rank) as progress:  # fmt: skip
        def say_line(message: str) -> None:
            if main_rank:
                progress.console.print(message, soft_wrap=True, markup=False, highlight=False)

        with interruptible(f"nothing committed is lost: continue with `kernelzero train --resume {run_dir}`"):
            loop = coevolve.CoEvolution(cfg, run_dir, say=say_line, progress=progress)
            loop.run()
    if report and main_rank:
        path = write_report(run_dir)
        typer.echo(f"report: {path}")
    if not main_rank:
        return
    typer.echo(f"done in {time.monotonic() - start:.0f} s: {run_dir}")
    if smoke:
        typer.echo("(smoke scale: see above for a real run)")


def _last_checkpoint(out: Path) -> Path | None:
    steps = [(int(m.group(1)), p) for p in out.glob("checkpoint-*") if (m := re.fullmatch(r"checkpoint-(\d+)", p.name))]
    return max(steps)[1] if steps else None


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
    prompts: Annotated[str, typer.Option(help=PROMPTS_HELP)] = "full",
) -> None:
    """Supervised cold start of the Coder on verified (task, solution) pairs; resumes from --out's last checkpoint.

    The pairs are rendered with the same Coder prompt the GRPO phase uses, so the model learns the answer format RL
    rewards. Start `kernelzero train --coder-model OUT/final` from the result."""
    check_choice("--prompts", prompts, PROMPTS)
    wanted = tuple(b.strip() for b in backends.split(",") if b.strip())
    if not wanted or any(b not in BACKENDS for b in wanted):
        fail(f"--backends {backends!r}: expected a comma-separated subset of {', '.join(BACKENDS)}")
    check_choice("--device", device, ("auto", "cpu", "cuda"))
    if lr is not None and not lr > 0:
        fail(f"--lr {lr}: expected a learning rate > 0")
    if pairs != "builtin" and not (Path(pairs) / "corpus.jsonl").exists():
        fail(f"--pairs {pairs}: neither `builtin` nor an export folder (no {Path(pairs) / 'corpus.jsonl'})")
    if model is not None:
        check_dir("--model", Path(model), "local model folder")
    if out.exists() and not out.is_dir():
        fail(f"--out {out}: not a folder")
    last = _last_checkpoint(out)
    if last is not None:
        say(f"resuming from {last} (the last checkpoint in {out}); a new --out starts afresh")
    quiet_library_warnings()
    Stages("sft")("loading the trainer (torch, transformers, trl)")
    import torch

    from kernelzero.trainers.coder import coder_prompt
    from kernelzero.trainers.sft import SFTPhaseConfig, builtin_pairs, run_sft

    if pairs == "builtin":
        chosen = builtin_pairs(wanted)
    else:
        chosen = [p for p in load_pairs(pairs) if p.backend in wanted]
    if not chosen:
        fail(f"--pairs {pairs}: no pair with backend in {', '.join(wanted)}")
    on_gpu = device == "cuda" or (device == "auto" and torch.cuda.is_available())
    tiny = model is None
    steps = steps or (120 if tiny else -1)
    # Log at least at the last step: with logging every 10 steps a 2-step run logged no loss at all, and the final
    # line said "loss nan" while the trainer's own summary had one.
    logging_steps = min(10, steps) if steps > 0 else 10
    save_steps = max(1, steps // 4) if steps > 0 else 500
    cfg = SFTPhaseConfig(output_dir=str(out), model=model, max_steps=steps,
                         learning_rate=lr or (3e-3 if tiny else 2e-5),
                         per_device_train_batch_size=batch_size or (min(8, len(chosen)) if tiny else 1),
                         save_steps=save_steps, logging_steps=logging_steps, use_cpu=not on_gpu,
                         sft_overrides={"lr_scheduler_type": "constant_with_warmup", "warmup_steps": 5})  # fmt: skip
    typer.echo(f"SFT on {len(chosen)} pair(s) ({', '.join(wanted)}), {cfg.max_steps} step(s), lr {cfg.learning_rate}, "
               f"{'GPU' if on_gpu else 'CPU'} -> {out}")  # fmt: skip
    with interruptible(f"rerun the same command to resume from the last checkpoint in {out} (one every "
                       f"{save_steps} step(s))"):  # fmt: skip
        result = run_sft(cfg, chosen, prompt_fn=functools.partial(coder_prompt, brief=prompts == "brief"))
    logged = next((h for h in reversed(result.log_history) if "loss" in h), {})
    summary = next((h for h in reversed(result.log_history) if "train_loss" in h), {})
    loss = logged.get("loss", summary.get("train_loss"))
    accuracy = logged.get("mean_token_accuracy")
    typer.echo(f"done: step {result.global_step}"
               + (f", loss {float(loss):.4g}" if loss is not None else "")
               + (f", token accuracy {float(accuracy):.3f}" if accuracy is not None else "")
               + f"; model: {result.final_model_dir}")  # fmt: skip


@app.command("report")
def report_command(
    run_dir: Annotated[Path, typer.Argument(help="A run directory of `kernelzero train`, or an output folder of "
                                            "`kernelzero eval`.")],
    k: Annotated[str | None, typer.Option("--k", help="Eval folders: comma-separated k for pass@k (default: the "
                                          "ones the eval reported).")] = None,
    plots: Annotated[bool, typer.Option(help="Write the PNG figures.")] = True,
) -> None:
    """Rebuild the report.md and plots of a training run or an eval folder from its JSONL records alone."""
    check_dir("RUN_DIR", run_dir, "run directory")
    ks = None
    if k is not None:
        try:
            ks = sorted({int(x) for x in k.split(",") if x.strip()})
        except ValueError:
            fail(f"--k must be comma-separated integers, got {k!r}")
    if is_eval_dir(run_dir):
        try:
            rebuild_report(run_dir, ks, plots=plots)
        except ValueError as exc:
            fail(str(exc))
        typer.echo(str(run_dir / "report.md"))
        return
    if not (run_dir / CONFIG_FILE).exists():
        fail(f"{run_dir} is neither {RUN_KINDS}")
    if k is not None:
        fail("--k applies to eval folders; a training run's report has no pass@k")
    typer.echo(str(write_report(run_dir)))


@app.command("export")
def export_command(
    run_dir: Annotated[Path, typer.Argument(help="A run directory of `kernelzero train`, or an output folder of "
                                            "`kernelzero eval`.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Output folder: corpus.jsonl and dataset/.")],
    kernelbench_dir: Annotated[Path | None, typer.Option(help="Eval folders of kernelbench:LEVEL tasks: the "
                                                         "KernelBench checkout (else $KERNELBENCH_DIR).")] = None,
) -> None:
    """Export every correct (task, solution, verdict) of a run or an eval as a datasets dataset and JSONL, for SFT."""
    check_dir("RUN_DIR", run_dir, "run directory")
    if out.exists() and not out.is_dir():
        fail(f"--out {out}: not a folder")
    if is_eval_dir(run_dir):
        spec = eval_tasks_spec(run_dir)
        try:
            rows = eval_corpus_rows(run_dir, _eval_tasks(spec, kernelbench_dir, None))
        except KeyError as exc:
            fail(f"{exc.args[0]}; export from the folder the eval ran in")
    elif (run_dir / CONFIG_FILE).exists():
        rows = corpus_rows(run_dir)
    else:
        fail(f"{run_dir} is neither {RUN_KINDS}")
    n = write_corpus_rows(rows, out)
    typer.echo(f"{n} verified solution(s) -> {out}/corpus.jsonl and {out}/dataset")
