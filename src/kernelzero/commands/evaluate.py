"""`eval`: a model or a folder of solutions on a task set, with pass@k and fast_p."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from kernelzero.commands import MODEL_HELP as _MODEL_HELP
from kernelzero.commands import app, fail

# Evaluation (issue 10): `eval`. Generation, judging and the report live in evaluate.py, eval_report.py, eval_plots.py.
# ---------------------------------------------------------------------------------------------------------------------


def _eval_tasks(tasks: str, kernelbench_dir: Path | None, level: list[int] | None):
    """Tasks from PATH or `kernelbench:LEVEL[,LEVEL]`/`kernelbench:all` (checkout: the flag or $KERNELBENCH_DIR)."""
    import os

    from kernelzero.tasks import TaskLoadError, kernelbench_root, load_tasks

    levels = tuple(level) if level else None
    if tasks.startswith("kernelbench:"):
        spec = tasks.split(":", 1)[1]
        root = kernelbench_dir or (Path(os.environ["KERNELBENCH_DIR"]) if os.environ.get("KERNELBENCH_DIR") else None)
        if root is None:
            fail(f"--tasks {tasks} needs a KernelBench checkout: pass --kernelbench-dir DIR or set $KERNELBENCH_DIR")
        if kernelbench_root(root) is None:
            fail(f"{root} is not a KernelBench checkout (no level1..level4 folders in it or in its KernelBench/)")
        try:
            levels = None if spec == "all" else tuple(int(x) for x in spec.split(","))
        except ValueError:
            fail(f"--tasks {tasks}: expected kernelbench:LEVEL, kernelbench:1,2 or kernelbench:all")
        path: Path = root
    else:
        path = Path(tasks)
    try:
        found = load_tasks(path, levels=levels)
    except TaskLoadError as exc:
        fail(f"{len(exc.errors)} malformed task file(s) under {path}, first: {exc.errors[0]}")
    except (OSError, ValueError) as exc:
        fail(str(exc))
    if not found:
        fail(f"no tasks in {tasks}" + (f" at levels {levels}" if levels else ""))
    return found


@app.command("eval")
def eval_command(
    tasks: Annotated[str | None, typer.Option("--tasks", help="Task file/folder/corpus, or kernelbench:LEVEL.")] = None,
    model: Annotated[str | None, typer.Option("--model", "-m", help=_MODEL_HELP)] = None,
    backend: Annotated[str, typer.Option("--backend", "-b", help="Kernel language: cuda or triton.")] = "triton",
    samples: Annotated[int, typer.Option("--samples", "-n", min=1, help="Samples (refinement chains) per task.")] = 1,
    k: Annotated[str, typer.Option("--k", help="Comma-separated k for pass@k; each k <= --samples.")] = "1",
    turns: Annotated[int, typer.Option("--turns", "-t", min=1, help="Refinement turns per sample.")] = 1,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Run directory; an existing one is resumed.")] = None,
    solutions: Annotated[
        Path | None, typer.Option("--solutions", help="Judge this folder of solutions (NAME.py or levelL/NAME.py).")
    ] = None,
    only_with_solutions: Annotated[
        bool, typer.Option(help="With --solutions: drop tasks that have no solution file instead of counting them.")
    ] = False,
    kernelbench_dir: Annotated[Path | None, typer.Option(help="KernelBench checkout (else $KERNELBENCH_DIR).")] = None,
    level: Annotated[list[int] | None, typer.Option("--level", "-l", help="Keep only this level (repeatable).")] = None,
    compare: Annotated[
        tuple[Path, Path] | None, typer.Option("--compare", help="Print two finished runs side by side, then exit.")
    ] = None,
    device: Annotated[str, typer.Option(help="Judge device: auto, cuda, or cpu (Triton interpreter).")] = "auto",
    workers: Annotated[int | None, typer.Option(help="Concurrent judge workers (default: the pool's).")] = None,
    trials: Annotated[int, typer.Option(min=1, help="Correctness trials per candidate.")] = 5,
    max_new_tokens: Annotated[int, typer.Option(min=1, help="Cap on generated tokens per completion.")] = 1024,
    temperature: Annotated[float, typer.Option(min=0.0, help="Sampling temperature (0 = greedy).")] = 1.0,
    seed: Annotated[int | None, typer.Option(help="Sampling seed, where the backend supports one.")] = None,
    gen_device: Annotated[str, typer.Option(help="Device of a local transformers model: auto, cuda, cpu.")] = "auto",
    plots: Annotated[bool, typer.Option(help="Write the PNG figures.")] = True,
) -> None:
    """Evaluate a model (or a folder of solutions) on a task set; print and write the report (resumable)."""

    if compare:
        from kernelzero.eval.report import compare as compare_runs

        try:
            typer.echo(compare_runs(*compare), nl=False)
        except (OSError, ValueError, KeyError) as exc:
            fail(str(exc))
        return
    start = time.monotonic()
    from kernelzero.roles.coder import BACKENDS

    if tasks is None:
        fail("give --tasks PATH or --tasks kernelbench:LEVEL (or --compare DIR1 DIR2)")
    if backend not in BACKENDS:
        fail(f"--backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    try:
        ks = sorted({int(x) for x in k.split(",") if x.strip()})
    except ValueError:
        fail(f"--k must be comma-separated integers, got {k!r}")
    n_per_task = 1 if solutions is not None else samples
    bad = [x for x in ks if not 1 <= x <= n_per_task]
    if not ks or bad:
        fail(f"--k {k}: every k must be between 1 and the samples per task ({n_per_task}"
             + (", one solution per task with --solutions)" if solutions is not None else "; raise --samples)"))
    if solutions is not None and not solutions.is_dir():
        fail(f"--solutions {solutions} is not a folder")
    the_tasks = _eval_tasks(tasks, kernelbench_dir, level)
    from kernelzero.eval.evaluate import find_solution, pin_config, run_eval, run_solutions
    from kernelzero.judge import JudgeOptions

    if solutions is not None and only_with_solutions:
        the_tasks = [t for t in the_tasks if find_solution(t, solutions) is not None]
        if not the_tasks:
            fail(f"no task under {tasks} has a solution file in {solutions}")
    mode = "solutions" if solutions is not None else "generate"
    out = out or Path("out") / "eval" / time.strftime("%Y%m%d-%H%M%S")
    config = {
        "tasks": tasks,
        "backend": backend,
        "mode": mode,
        "model": str(solutions) if solutions else model or "tiny",
        "samples": n_per_task,
        "turns": 1 if solutions is not None else turns,
    }
    try:
        options = JudgeOptions(device=device, trials=trials)
        pin_config(out, config)
    except ValueError as exc:
        fail(str(exc))
    from kernelzero.judge.pool import JudgePool

    total = len(the_tasks) * config["samples"] * config["turns"]
    seen = [0]

    def progress(rec) -> None:
        seen[0] += 1
        where = f"{rec.task} sample {rec.sample} turn {rec.turn}"
        typer.echo(f"[{seen[0]}/{total}] {where}: {rec.verdict.status}", err=True)

    typer.echo(f"eval: {len(the_tasks)} tasks, {config['model']}, {backend}, {mode} -> {out}", err=True)
    with JudgePool(options, workers=workers) as pool:
        device_name = pool.judge_.device
        if solutions is not None:
            records = run_solutions(
                the_tasks, solutions, backend=backend, judge_many=pool.imap, out_dir=out, on_record=progress
            )
        else:
            from kernelzero.generation import GenerationError, SamplingConfig, load_policy

            try:
                sampling = SamplingConfig(temperature=temperature, max_new_tokens=max_new_tokens, seed=seed)
                policy = load_policy(model, device=gen_device)
                records = run_eval(
                    the_tasks,
                    policy,
                    backend=backend,
                    judge_fn=pool.judge,
                    judge_many=pool.judge_many,
                    out_dir=out,
                    samples=samples,
                    turns=turns,
                    sampling=sampling,
                    on_record=progress,
                )
            except (GenerationError, ValueError) as exc:
                fail(str(exc), code=1)
    from kernelzero.eval.report import write_report

    gpu = next((r.verdict.env.get("gpu") for r in records if isinstance(r.verdict.env, dict)), None)
    meta = {**config, "device": device_name, "gpu": gpu, "date": time.strftime("%Y-%m-%d %H:%M")}
    summary = write_report(out, records, ks, meta, plots=plots)
    from kernelzero.eval.report import render_markdown

    typer.echo(render_markdown(summary))
    typer.echo(f"wrote {out}/report.md, summary.json, verdicts.jsonl" + (", PNGs" if plots else "")
               + f"; total time {time.monotonic() - start:.1f} s")  # fmt: skip
