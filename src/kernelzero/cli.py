"""The `kernelzero` command: thin subcommands that import their heavy dependencies only when they run."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(
    name="kernelzero",
    help="Train and evaluate LLMs that write fast, correct GPU kernels (CUDA and Triton).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def fail(message: str, code: int = 2) -> None:
    """Print a one-line error naming the bad thing, then exit non-zero. Nothing already written is touched."""
    typer.echo(f"kernelzero: error: {message}", err=True)
    raise typer.Exit(code)


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", help="Print the version and exit.", is_eager=True),
) -> None:
    if version:
        from kernelzero import __version__

        typer.echo(__version__)
        raise typer.Exit(0)


# ---------------------------------------------------------------------------------------------------- judge
@app.command("judge")
def judge_cmd(
    task: Path | None = typer.Argument(None, help="Task file (KernelBench format)."),
    solution: Path | None = typer.Argument(None, help="Candidate source defining `class ModelNew`."),
    backend: str = typer.Option("triton", help="Kernel language of the candidate: cuda or triton."),
    device: str = typer.Option("auto", help="cuda, cpu (Triton interpreter, correctness only) or auto."),
    as_json: bool = typer.Option(False, "--json", help="Print the verdict as one JSON line."),
    batch: Path | None = typer.Option(None, help='JSONL of {"task": path, "solution": path, "backend": ...}.'),
    out: Path | None = typer.Option(None, help="With --batch: write one verdict JSON per input line, in order. "
                                               "An existing file is resumed: its lines are kept, not re-judged."),
    workers: int | None = typer.Option(None, help="Candidates judged concurrently (default: cores on CPU, 4 on GPU)."),
    trials: int = typer.Option(5, help="Correctness trials on fresh random inputs."),
) -> None:
    """Judge candidates in the sandbox: build, check against the reference on fresh inputs, time on GPU."""
    from kernelzero.judge import JudgeOptions

    try:
        options = JudgeOptions(device=device, trials=trials)
    except ValueError as exc:
        fail(str(exc))
    if batch is not None:
        from kernelzero.judge.batch import run_batch

        if out is None:
            fail("--batch needs --out FILE")
        try:
            counts = run_batch(batch, out, options, workers)
        except (OSError, ValueError) as exc:
            fail(str(exc))
        typer.echo(" ".join(f"{k}={v}" for k, v in sorted(counts.items())))
        return
    if task is None or solution is None:
        fail("give TASK and SOLUTION, or --batch IN.jsonl --out OUT.jsonl")
    from kernelzero.judge.batch import load_request

    try:
        t, source = load_request(task, solution)
    except (OSError, ValueError) as exc:
        fail(str(exc))
    from kernelzero.judge.pool import JudgePool

    with JudgePool(options, workers=1) as pool:
        verdict = pool.judge(t, source, backend)
    if as_json:
        typer.echo(verdict.to_json())
    else:
        from kernelzero.judge.batch import describe

        typer.echo(describe(verdict))
    raise typer.Exit(0 if verdict.correct else 1)


# ---------------------------------------------------------------------------------------------------- tasks, apis
# Owner: foundation (issue 2). Tasks are parsed, never executed; the apis commands read code, never import it.
@app.command("tasks")
def tasks_cmd(
    path: Path = typer.Argument(..., help="Task file, folder of task files, KernelBench checkout or .jsonl corpus."),
    level: list[int] = typer.Option(None, "--level", "-l", help="Keep only this level (repeatable)."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object per task: name, level, origin, apis, path."),
    out: Path | None = typer.Option(None, "--out", help="Also write the tasks as a JSONL corpus to this file."),
) -> None:
    """List tasks (name, level, the torch APIs each uses); exits non-zero naming every malformed file."""
    import json

    from kernelzero.apis import vocab_apis
    from kernelzero.tasks import TaskLoadError, load_tasks, write_corpus

    try:
        tasks = load_tasks(path, levels=tuple(level) if level else None)
    except TaskLoadError as exc:
        for err in exc.errors:
            typer.echo(f"kernelzero: error: {err}", err=True)
        fail(f"{len(exc.errors)} malformed task file(s) under {path}")
    except (OSError, ValueError) as exc:
        fail(str(exc))
    if as_json:
        for t in tasks:
            record = {"name": t.name, "level": t.level, "origin": t.origin, "apis": list(t.apis), "path": t.path}
            typer.echo(json.dumps(record))
    else:
        from rich.console import Console
        from rich.table import Table

        table = Table("level", "name", "APIs", box=None, pad_edge=False)
        table.columns[1].no_wrap = True  # names are identifiers: never cut them
        for t in tasks:
            table.add_row("-" if t.level is None else str(t.level), t.name, ", ".join(t.apis))
        Console(width=None if sys.stdout.isatty() else 200).print(table)
    if out is not None:
        write_corpus(tasks, out)
    per_level: dict[str, int] = {}
    for t in tasks:
        key = "no level" if t.level is None else f"level{t.level}"
        per_level[key] = per_level.get(key, 0) + 1
    empty = sum(not t.apis for t in tasks)
    no_vocab = sum(not vocab_apis(t.apis) for t in tasks)
    levels_text = ", ".join(f"{k}: {v}" for k, v in per_level.items())
    typer.echo(
        f"{len(tasks)} tasks ({levels_text}); {empty} with no API, {no_vocab} with no vocabulary API"
        + (f"; corpus written to {out}" if out is not None else ""),
        err=True,
    )


apis_app = typer.Typer(
    help="API vocabulary: mine co-occurrence from model code, sample API sets for the Proposer.",
    no_args_is_help=True,
)
app.add_typer(apis_app, name="apis")


@apis_app.command("mine")
def apis_mine_cmd(
    sources: list[str] = typer.Option(
        None, "--from", help="Folder or installed package to scan (repeatable). Default: transformers.models, torch.nn."
    ),
    out: Path = typer.Option(Path("api_cooccurrence.json"), "--out", help="Where to write the counts (JSON)."),
) -> None:
    """Count which vocabulary APIs appear together in one class's forward across real PyTorch code."""
    from kernelzero.apis.mine import DEFAULT_SOURCES, mine, save_cooccurrence

    try:
        co = mine(sources or DEFAULT_SOURCES, progress=sys.stderr.isatty())
    except ValueError as exc:
        fail(str(exc))
    save_cooccurrence(co, out)
    seen = sum(n > 0 for n in co.api_counts.values())
    typer.echo(
        f"mined {co.classes} classes in {co.files} files ({co.skipped_files} unparsable) from "
        f"{', '.join(co.sources)}: {seen}/{len(co.api_counts)} vocabulary APIs seen, "
        f"{len(co.pair_counts)} distinct pairs -> {out}"
    )


@apis_app.command("sample")
def apis_sample_cmd(
    n: int = typer.Option(4000, "--n", help="Number of API sets (half pairs, half triples)."),
    seed: int = typer.Option(0, "--seed", help="Random seed; the same seed gives the same sets."),
    exclude: list[str] = typer.Option(None, "--exclude", help="API never to draw (repeatable)."),
    counts: Path | None = typer.Option(None, "--counts", help="Counts from `apis mine` (default: packaged)."),
    as_json: bool = typer.Option(False, "--json", help='One JSON object per set: {"apis": [...]}.'),
    out: Path | None = typer.Option(None, "--out", help="Write the sets as JSONL here instead of printing them."),
) -> None:
    """Draw distinct API sets from mined co-occurrence, covering the whole vocabulary; summary on stderr."""
    import json

    from kernelzero.apis.mine import load_cooccurrence
    from kernelzero.apis.sample import SamplerConfig, sample_api_sets, summarize

    try:
        config = SamplerConfig(n=n, seed=seed, exclude=tuple(exclude or ()))
        sets = sample_api_sets(load_cooccurrence(counts), config)
    except (OSError, ValueError) as exc:
        fail(str(exc))
    lines = [json.dumps({"apis": list(s)}) if as_json or out else " ".join(s) for s in sets]
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("".join(line + "\n" for line in lines))
    else:
        typer.echo("\n".join(lines))
    sm = summarize(sets, config.exclude)
    typer.echo(
        f"{sm.sets} sets ({sm.distinct} distinct): {sm.pairs} pairs, {sm.triples} triples; "
        f"{sm.covered}/{sm.vocabulary} vocabulary APIs present; seed {seed}"
        + (f"; missing {len(sm.missing)}: {', '.join(sm.missing[:8])}" if sm.missing else "")
        + (", ..." if len(sm.missing) > 8 else "")
        + (f" -> {out}" if out is not None else ""),
        err=True,
    )


@apis_app.command("vocab")
def apis_vocab_cmd(as_json: bool = typer.Option(False, "--json", help="One JSON object per API.")) -> None:
    """List the vocabulary of kernel-worthy APIs by category, with the other spellings each one accepts."""
    import json

    from kernelzero.apis.vocab import ALIASES, VOCABULARY

    spellings: dict[str, list[str]] = {name: [] for name in VOCABULARY}
    for alias, name in ALIASES.items():
        if alias != name:
            spellings[name].append(alias)
    for name, cat in VOCABULARY.items():
        if as_json:
            typer.echo(json.dumps({"api": name, "category": cat, "aliases": spellings[name]}))
        else:
            typer.echo(f"{cat:<12} {name:<36} {' '.join(spellings[name])}")


# ---------------------------------------------------------------------------------------------------- end tasks, apis


# ---------------------------------------------------------------------------------------------------------------------
# Policies (issue 6): `solve` and `serve`. Heavy imports (torch, transformers, the judge) stay inside the commands.
# ---------------------------------------------------------------------------------------------------------------------

_MODEL_HELP = (
    "A local model directory, vllm:PATH, or openai:MODEL@URL (key from $OPENAI_API_KEY). "
    "Default: the tiny local model, built on first use."
)


@app.command("solve")
def solve_command(
    task: Annotated[Path, typer.Argument(help="A KernelBench-format task file (Model, get_inputs, get_init_inputs).")],
    backend: Annotated[str, typer.Option("--backend", "-b", help="Kernel language of the solutions: cuda or triton.")],
    model: Annotated[str | None, typer.Option("--model", "-m", help=_MODEL_HELP)] = None,
    samples: Annotated[int, typer.Option("--samples", "-n", min=1, help="Parallel solutions per turn.")] = 4,
    turns: Annotated[
        int, typer.Option("--turns", "-t", min=1, help="Refinement turns; at turn t>1 each sample sees its feedback.")
    ] = 1,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="New directory for the results (default: out/solve/TASK-TIME).")
    ] = None,
    max_new_tokens: Annotated[int, typer.Option(min=1, help="Cap on generated tokens per completion.")] = 1024,
    temperature: Annotated[float, typer.Option(min=0.0, help="Sampling temperature (0 = greedy).")] = 1.0,
    top_p: Annotated[float, typer.Option(help="Nucleus sampling threshold (1 = off).")] = 1.0,
    seed: Annotated[int | None, typer.Option(help="Sampling seed, where the backend supports one.")] = None,
    principles: Annotated[bool, typer.Option(help="Add the optimization principles (cold-start hints).")] = False,
    device: Annotated[str, typer.Option(help="Judge device: auto, cuda, or cpu (Triton interpreter).")] = "auto",
    gen_device: Annotated[str, typer.Option(help="Device of a local transformers model: auto, cuda, cpu.")] = "auto",
) -> None:
    """Generate solutions for one task, judge them, keep the best; print a table and write everything to --out."""
    import time

    from kernelzero.coder import BACKENDS, OPTIMIZATION_PRINCIPLES
    from kernelzero.generation.base import GenerationError, SamplingConfig
    from kernelzero.parsing import check_definitions
    from kernelzero.proposer import TASK_DEFINITIONS
    from kernelzero.tasks import Task

    if backend not in BACKENDS:
        fail(f"--backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    if not task.is_file():
        fail(f"no task file at {task}")
    the_task = Task.from_file(task)
    reason = getattr(check_definitions(the_task.source, TASK_DEFINITIONS), "reason", None)
    if reason:
        fail(f"{task} is not a KernelBench-format task: {reason}")
    out = out or Path("out") / "solve" / f"{the_task.name}-{time.strftime('%Y%m%d-%H%M%S')}"
    if out.exists() and any(out.iterdir()):
        fail(f"--out {out} already holds files; name a new or empty directory")
    try:
        sampling = SamplingConfig(temperature=temperature, top_p=top_p, max_new_tokens=max_new_tokens, seed=seed)
    except ValueError as e:
        fail(str(e))
    judge_fn = _judge_fn(device)
    from kernelzero.generation import load_policy
    from kernelzero.solve import solve, solve_table, write_solve_outputs

    try:
        policy = load_policy(model, device=gen_device)
    except (GenerationError, ValueError) as e:
        fail(str(e))

    def progress(r) -> None:
        typer.echo(f"turn {r.turn} sample {r.sample}: {r.verdict.status}", err=True)

    typer.echo(f"solving {the_task.name} with {policy.name}: {samples} samples x {turns} turns ({backend})", err=True)
    try:
        result = solve(
            the_task,
            policy,
            backend=backend,
            judge_fn=judge_fn,
            samples=samples,
            turns=turns,
            sampling=sampling,
            principles=OPTIMIZATION_PRINCIPLES if principles else None,
            on_rollout=progress,
        )
    except GenerationError as e:
        fail(str(e), code=1)
    from rich.console import Console

    Console(width=None if sys.stdout.isatty() else 160).print(solve_table(result))  # logs get the whole table
    write_solve_outputs(result, out)
    best = result.best
    verdict = "solved" if result.solved else "not solved"
    typer.echo(f"{verdict}; best: sample {best.sample} turn {best.turn} ({best.verdict.status}); wrote {out}")


def _judge_fn(device: str):
    """The real judge as solve's `judge_fn(task, code, backend)`; a clear error if this build has none yet."""
    try:
        from kernelzero.judge import JudgeOptions, judge
    except ImportError as e:
        fail(f"the judge is not available in this build ({e})")

    def judge_fn(task, code: str, backend: str):
        return judge(task, code, backend=backend, options=JudgeOptions(device=device))

    return judge_fn


@app.command("serve")
def serve_command(
    model: Annotated[str | None, typer.Option("--model", "-m", help=_MODEL_HELP)] = None,
    host: Annotated[str, typer.Option(help="Address to bind (loopback by default).")] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", "-p", min=0, help="Port to bind; 0 picks a free one (printed).")
    ] = 8000,
    name: Annotated[str, typer.Option(help="Model name clients must send in requests.")] = "tiny",
    api_key: Annotated[str | None, typer.Option(help="Require `Authorization: Bearer KEY` on requests.")] = None,
    device: Annotated[str, typer.Option(help="Device of a local transformers model: auto, cuda, cpu.")] = "auto",
) -> None:
    """Serve a model over an OpenAI-compatible /v1/chat/completions endpoint (n >= 1, no streaming)."""
    import logging

    from kernelzero.generation import GenerationError, load_policy
    from kernelzero.serve import make_server

    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        policy = load_policy(model, device=device)
        server = make_server(policy, host, port, api_key=api_key, served_name=name)
    except (GenerationError, ValueError) as e:
        fail(str(e))
    except OSError as e:
        fail(f"cannot bind {host}:{port}: {e.strerror or e}")
    bound_host, bound_port = server.server_address[:2]
    typer.echo(f"kernelzero serve: {name} ({policy.name}) on http://{bound_host}:{bound_port}/v1")
    sys.stdout.flush()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


# ---------------------------------------------------------------------------------------------------------------------
# Curriculum (issue 7): `propose`. Heavy imports (torch, transformers, the judge) stay inside the command.
# ---------------------------------------------------------------------------------------------------------------------


@app.command("propose")
def propose_command(
    n: Annotated[int, typer.Option("--n", "-n", min=1, help="Tasks to propose (one per API set).")] = 8,
    model: Annotated[str | None, typer.Option("--model", "-m", help=_MODEL_HELP)] = None,
    apis: Annotated[
        Path | None, typer.Option(help="API sets, one per line (default: sampled from co-occurrence).")
    ] = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="Valid tasks (JSONL); the summary goes beside it.")] = Path(
        "tasks.jsonl"
    ),
    coder: Annotated[str | None, typer.Option(help="Coder model spec: judge --k samples per valid task.")] = None,
    k: Annotated[int, typer.Option(min=0, help="Coder samples per valid task (with --coder).")] = 4,
    backend: Annotated[str, typer.Option(help="Kernel language of the Coder's samples: cuda or triton.")] = "triton",
    device: Annotated[str, typer.Option(help="Where tasks (and the judge) run: auto, cpu or cuda.")] = "auto",
    gen_device: Annotated[str, typer.Option(help="Device of local transformers models: auto, cuda, cpu.")] = "auto",
    validate: Annotated[
        Path | None, typer.Option(help="Only validate the hand-written task files of this folder and print verdicts.")
    ] = None,
    apis_from_name: Annotated[
        bool, typer.Option(help="With --validate: a file's API set is its name split on '__' (nn.Linear__F.gelu.py).")
    ] = False,
    kernelbench: Annotated[Path | None, typer.Option(help="KernelBench checkout to decontaminate against.")] = None,
    pool: Annotated[
        Path | None,
        typer.Option(help="Run directory: new tasks must not duplicate its pool.jsonl; valid ones (and their Coder "
                     "record) are added to it, and its frontier map is drawn beside it."),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the API-set sampler and of generation.")] = 0,
    max_new_tokens: Annotated[int, typer.Option(min=1, help="Cap on generated tokens per completion.")] = 1024,
    temperature: Annotated[float, typer.Option(min=0.0, help="Sampling temperature (0 = greedy).")] = 1.0,
    workers: Annotated[int | None, typer.Option(help="Concurrent validation workers (default: CPU count).")] = None,
) -> None:
    """Propose tasks from API sets, validate them in the sandbox, write the valid ones and the rejection reasons."""
    from kernelzero.curriculum.pool import TaskPool
    from kernelzero.curriculum.propose import reasons_table
    from kernelzero.curriculum.validate import ValidationConfig, Validator

    try:
        config = ValidationConfig(device=device, workers=workers)
    except ValueError as e:
        fail(str(e))
    if kernelbench is not None and not kernelbench.exists():
        fail(f"--kernelbench {kernelbench} does not exist")
    task_pool = TaskPool.load(pool) if pool is not None else None
    validator = Validator(config, pool=task_pool.index if task_pool else None, kernelbench=kernelbench)
    if validate is not None:
        _validate_folder(validate, validator, apis_from_name)
        return
    from kernelzero.curriculum.propose import propose_batch, read_api_sets, write_outputs
    from kernelzero.generation import load_policy
    from kernelzero.generation.base import GenerationError, SamplingConfig

    if apis is not None:
        try:
            sets = read_api_sets(apis)
        except (OSError, ValueError) as e:
            fail(f"--apis: {e}")
        if not sets:
            fail(f"--apis {apis} holds no API set")
        sets = [sets[i % len(sets)] for i in range(n)]
    else:
        from kernelzero.apis import SamplerConfig, load_cooccurrence, sample_api_sets

        sets = sample_api_sets(load_cooccurrence(), SamplerConfig(n=n, seed=seed))
    try:
        policy = load_policy(model, device=gen_device)
        coder_policy = load_policy(coder, device=gen_device) if coder else None
    except (GenerationError, ValueError) as e:
        fail(str(e))
    judge_fn = None
    if coder_policy is not None:
        from kernelzero.judge import JudgeOptions
        from kernelzero.judge.pool import JudgePool

        judge_fn = JudgePool(JudgeOptions(device=device)).judge
    sampling = SamplingConfig(temperature=temperature, max_new_tokens=max_new_tokens, seed=seed)
    try:
        summary = propose_batch(policy, sets, validator, sampling=sampling, coder=coder_policy, k=k,
                                judge_fn=judge_fn, backend=backend,
                                on_stage=lambda m: typer.echo(m, err=True))  # fmt: skip
    except GenerationError as e:
        fail(str(e), code=1)
    tasks_path, summary_path = write_outputs(summary, out)
    if task_pool is not None:
        _update_pool(task_pool, summary, pool)
    typer.echo(reasons_table(summary.counts, len(summary.proposals)))
    for p in summary.proposals:
        if p.samples is not None:
            typer.echo(f"{p.name}: l={p.success_rate} over {p.samples} samples, reward={p.reward}")
    typer.echo(f"wrote {summary.counts.get('valid', 0)} valid tasks to {tasks_path}; summary: {summary_path}")


def _update_pool(task_pool, summary, run_dir: Path) -> None:
    """Add the batch's valid tasks (renamed by round) and their Coder record to the pool; redraw the frontier map."""
    from dataclasses import replace

    from kernelzero.curriculum.frontier import api_rates, pair_rates
    from kernelzero.curriculum.report import frontier_heatmap, hardest_table

    task_pool.next_round()
    for p in summary.proposals:
        if p.result.valid:
            entry = task_pool.add(replace(p.task(), name=f"r{task_pool.round:03d}_{p.name}"))
            if p.samples:
                task_pool.record(entry.name, p.successes, p.samples)
    path = task_pool.save(run_dir)
    typer.echo(f"pool: {len(task_pool)} tasks ({len(task_pool.hard())} hard) in {path}")
    records = task_pool.records()
    if any(k for _, _, k in records):
        png = frontier_heatmap(pair_rates(records), run_dir / "frontier.png")
        typer.echo(hardest_table(api_rates(records)))
        typer.echo(f"frontier map: {png}")


def _validate_folder(folder: Path, validator, apis_from_name: bool) -> None:
    from collections import Counter

    from kernelzero.curriculum.propose import reasons_table
    from kernelzero.curriculum.validate import validate_folder

    if not folder.is_dir():
        fail(f"--validate {folder} is not a folder")
    results = validate_folder(folder, validator, apis_from_name=apis_from_name)
    if not results:
        fail(f"no .py task files in {folder}")
    width = max(len(r.name) for r in results)
    for r in results:
        verdict = "valid" if r.valid else f"REJECTED {r.reason}"
        detail = f": {r.detail.splitlines()[0][:110]}" if r.detail else ""
        typer.echo(f"{r.name:<{width}}  {verdict}{detail}")
    typer.echo("")
    typer.echo(reasons_table(Counter("valid" if r.valid else r.reason for r in results), len(results)))


# ---------------------------------------------------------------------------------------------------- end curriculum

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
    import time

    if compare:
        from kernelzero.eval_report import compare as compare_runs

        try:
            typer.echo(compare_runs(*compare), nl=False)
        except (OSError, ValueError, KeyError) as exc:
            fail(str(exc))
        return
    start = time.monotonic()
    from kernelzero.coder import BACKENDS

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
    from kernelzero.evaluate import find_solution, pin_config, run_eval, run_solutions
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
    from kernelzero.eval_report import write_report

    gpu = next((r.verdict.env.get("gpu") for r in records if isinstance(r.verdict.env, dict)), None)
    meta = {**config, "device": device_name, "gpu": gpu, "date": time.strftime("%Y-%m-%d %H:%M")}
    summary = write_report(out, records, ks, meta, plots=plots)
    from kernelzero.eval_report import render_markdown

    typer.echo(render_markdown(summary))
    typer.echo(f"wrote {out}/report.md, summary.json, verdicts.jsonl" + (", PNGs" if plots else "")
               + f"; total time {time.monotonic() - start:.1f} s")  # fmt: skip


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
    import time

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


def main() -> None:
    app(prog_name="kernelzero")


if __name__ == "__main__":
    sys.exit(main())
