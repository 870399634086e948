"""`eval`: a model or a folder of solutions on a task set, with pass@k and fast_p."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Annotated

import typer

from kernelzero.commands.app import MODEL_HELP as _MODEL_HELP
from kernelzero.commands.app import PROMPTS_HELP, app
from kernelzero.commands.ui import (
    TINY_NOTE,
    Progress,
    Stages,
    check_choice,
    check_dir,
    check_model,
    fail,
    interruptible,
    say,
)
from kernelzero.eval.evaluate import VERDICTS, find_solution, pin_config, read_records, run_eval, run_solutions, task_id
from kernelzero.eval.report import compare as compare_runs
from kernelzero.eval.report import render_markdown, write_report
from kernelzero.generation import GenerationError, SamplingConfig, load_policy
from kernelzero.judge.options import BACKENDS, DEVICES, JudgeOptions
from kernelzero.roles.coder import PROMPTS
from kernelzero.tasks import TaskLoadError, kernelbench_root, load_tasks

# Generation, judging and the report live in kernelzero.eval (evaluate.py, report.py, plots.py).


def _eval_tasks(tasks: str, kernelbench_dir: Path | None, level: list[int] | None):
    """Tasks from PATH or `kernelbench:LEVEL[,LEVEL]`/`kernelbench:all` (checkout: the flag or $KERNELBENCH_DIR)."""
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
        fail(f"--tasks {exc}")
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
    workers: Annotated[int | None, typer.Option(min=1, help="Concurrent judge workers (default: the pool's).")] = None,
    trials: Annotated[int, typer.Option(min=1, help="Correctness trials per candidate.")] = 5,
    max_new_tokens: Annotated[int, typer.Option(min=1, help="Cap on generated tokens per completion.")] = 1024,
    temperature: Annotated[float, typer.Option(min=0.0, help="Sampling temperature (0 = greedy).")] = 1.0,
    seed: Annotated[int | None, typer.Option(help="Sampling seed, where the backend supports one.")] = None,
    gen_device: Annotated[str, typer.Option(help="Device of a local transformers model: auto, cuda, cpu.")] = "auto",
    plots: Annotated[bool, typer.Option(help="Write the PNG figures.")] = True,
    prompts: Annotated[str, typer.Option(help=PROMPTS_HELP)] = "full",
) -> None:
    """Evaluate a model (or a folder of solutions) on a task set; print and write the report (resumable: rerun
    the same command with the same --out to continue; recorded attempts are neither regenerated nor re-judged)."""

    if compare:
        try:
            typer.echo(compare_runs(*compare), nl=False)
        except (OSError, ValueError, KeyError) as exc:
            fail(str(exc))
        return
    if tasks is None:
        fail("give --tasks PATH or --tasks kernelbench:LEVEL (or --compare DIR1 DIR2)")
    check_choice("--backend", backend, BACKENDS)
    check_choice("--device", device, DEVICES)
    check_choice("--gen-device", gen_device, DEVICES)
    check_choice("--prompts", prompts, PROMPTS)
    try:
        ks = sorted({int(x) for x in k.split(",") if x.strip()})
    except ValueError:
        fail(f"--k must be comma-separated integers, got {k!r}")
    n_per_task = 1 if solutions is not None else samples
    bad = [x for x in ks if not 1 <= x <= n_per_task]
    if not ks or bad:
        fail(f"--k {k}: every k must be between 1 and the samples per task ({n_per_task}"
             + (", one solution per task with --solutions)" if solutions is not None else "; raise --samples)"))
    check_dir("--solutions", solutions)
    if solutions is None:
        check_model("--model", model)
    if out is not None and out.exists() and not out.is_dir():
        fail(f"--out {out}: not a folder")
    the_tasks = _eval_tasks(tasks, kernelbench_dir, level)
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
        **({"prompts": prompts} if prompts != "full" and solutions is None else {}),  # older folders: full
    }
    try:
        pin_config(out, config)
        recorded = read_records(out / VERDICTS)
    except ValueError as exc:
        fail(str(exc))
    total = len(the_tasks) * config["samples"] * config["turns"]
    ids = {task_id(t) for t in the_tasks}
    done = sum(1 for r in recorded if r.task in ids and r.sample < config["samples"] and r.turn <= config["turns"])
    if done == total:
        say(f"{out}: all {total} attempt(s) are already recorded; rebuilding the report")
    elif done:
        say(f"resuming {out}: {done} of {total} attempt(s) already recorded (kept); "
            f"{'judging' if solutions else 'generating and judging'} the other {total - done}")  # fmt: skip
    if mode == "generate" and model is None and done < total:
        say(TINY_NOTE)
    say(f"eval: {len(the_tasks)} tasks, {config['model']}, {backend}, {mode} -> {out}")
    stage = Stages("eval")
    start = time.monotonic()
    policy = sampling = None
    if done == total:  # a finished run: rebuild its report without loading a model or starting the judge
        records = (run_solutions(the_tasks, solutions, backend=backend, judge_many=_judged_before, out_dir=out)
                   if solutions is not None else
                   run_eval(the_tasks, None, backend=backend, judge_fn=_judged_before, out_dir=out, samples=samples,
                            turns=turns))  # fmt: skip
        _report(out, records, ks, {**config, "device": None}, plots, start)
        return
    if mode == "generate":
        stage("loading the model")
        sampling = SamplingConfig(temperature=temperature, max_new_tokens=max_new_tokens, seed=seed)
        try:
            policy = load_policy(model, device=gen_device)
        except (GenerationError, ValueError, OSError) as exc:  # before any worker starts
            fail(f"--model {model}: {exc}")
    stage("loading the judge (torch)")
    from kernelzero.judge.pool import JudgePool

    def resume_hint() -> str:
        return f"rerun the same command with --out {out} to resume (recorded attempts are kept)"

    with (
        Progress(total - done, "attempts", lines_on_terminal=True) as bar,
        JudgePool(JudgeOptions(device=device, trials=trials), workers=workers) as pool,
        interruptible(resume_hint),
    ):
        def progress(rec) -> None:
            bar.advance(f"{rec.task} sample {rec.sample} turn {rec.turn}: {rec.verdict.status}")

        device_name = pool.judge_.device
        if solutions is not None:
            records = run_solutions(
                the_tasks, solutions, backend=backend, judge_many=pool.imap, out_dir=out, on_record=progress
            )
        else:
            try:
                # imap: each verdict is recorded (and the bar advances) as it comes, not when the whole turn is judged
                records = run_eval(the_tasks, policy, backend=backend, judge_fn=pool.judge,
                                   judge_many=pool.imap, out_dir=out, samples=samples, turns=turns,
                                   sampling=sampling, on_record=progress, brief=prompts == "brief")  # fmt: skip
            except (GenerationError, ValueError) as exc:
                fail(f"{exc} (recorded attempts are kept: {resume_hint()})", code=1)
    _report(out, records, ks, {**config, "device": device_name}, plots, start)


def _judged_before(requests=(), *more):
    """Stands in for the judge of a run whose every attempt is recorded: it is asked nothing."""
    if more or list(requests):
        raise RuntimeError("every attempt of this run is recorded, yet the judge was asked for a verdict")
    return []


def _report(out: Path, records, ks: list[int], meta: dict, plots: bool, start: float) -> None:
    env = next((r.verdict.env for r in records if isinstance(r.verdict.env, dict) and r.verdict.env), {})
    meta = {**meta, "device": meta.get("device") or env.get("device"), "gpu": env.get("gpu"),
            "date": time.strftime("%Y-%m-%d %H:%M")}  # fmt: skip
    summary = write_report(out, records, ks, meta, plots=plots)
    typer.echo(render_markdown(summary))
    typer.echo(f"wrote {out}/report.md, summary.json, verdicts.jsonl" + (", PNGs" if plots else "")
               + f"; total time {time.monotonic() - start:.1f} s")  # fmt: skip
