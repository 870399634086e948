"""`propose`: Proposer tasks from API sets, validated in the sandbox."""

from __future__ import annotations

import contextlib
from collections import Counter
from pathlib import Path
from typing import Annotated

import typer

from kernelzero.apis import SamplerConfig, load_cooccurrence, sample_api_sets
from kernelzero.commands.app import MODEL_HELP as _MODEL_HELP
from kernelzero.commands.app import PROMPTS_HELP, app
from kernelzero.commands.ui import TINY_NOTE, check_choice, check_dir, check_file, check_model, fail, say
from kernelzero.curriculum.frontier import api_rates, pair_rates
from kernelzero.curriculum.heatmap import frontier_heatmap, hardest_table
from kernelzero.curriculum.pool import TaskPool
from kernelzero.curriculum.proposals import propose_batch, read_api_sets, reasons_table, write_outputs
from kernelzero.curriculum.validate import ValidationConfig, Validator, validate_folder
from kernelzero.generation import GenerationError, SamplingConfig, load_policy
from kernelzero.judge.options import BACKENDS, DEVICES, JudgeOptions
from kernelzero.roles.coder import PROMPTS

# Heavy imports (torch, transformers, the judge) stay inside the command.


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
    prompts: Annotated[str, typer.Option(help=PROMPTS_HELP)] = "full",
) -> None:
    """Propose tasks from API sets, validate them in the sandbox, write the valid ones and the rejection reasons."""
    # Every flag and input is checked before the validator, a model or a judge worker starts.
    check_choice("--backend", backend, BACKENDS)
    check_choice("--prompts", prompts, PROMPTS)
    check_choice("--device", device, DEVICES)
    check_choice("--gen-device", gen_device, DEVICES)
    if workers is not None and workers < 1:
        fail(f"--workers {workers}: expected at least 1")
    check_dir("--validate", validate)
    if pool is not None and pool.exists() and not pool.is_dir():  # a missing one starts a new pool there
        fail(f"--pool {pool}: not a folder")
    check_file("--apis", apis)
    if kernelbench is not None and not kernelbench.exists():
        fail(f"--kernelbench {kernelbench} does not exist")
    if validate is None:
        check_model("--model", model)
        check_model("--coder", coder)
        if model is None:
            say(TINY_NOTE)
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
    if apis is not None:
        try:
            sets = read_api_sets(apis)
        except (OSError, ValueError) as e:
            fail(f"--apis: {e}")
        if not sets:
            fail(f"--apis {apis} holds no API set")
        sets = [sets[i % len(sets)] for i in range(n)]
    else:
        sets = sample_api_sets(load_cooccurrence(), SamplerConfig(n=n, seed=seed))
    try:
        policy = load_policy(model, device=gen_device)
        coder_policy = load_policy(coder, device=gen_device) if coder else None
    except (GenerationError, ValueError) as e:
        fail(str(e))
    judges = contextlib.nullcontext()
    if coder_policy is not None:
        from kernelzero.judge.pool import JudgePool

        judges = JudgePool(JudgeOptions(device=device))
    sampling = SamplingConfig(temperature=temperature, max_new_tokens=max_new_tokens, seed=seed)
    try:
        with judges as judge_pool:  # closed on the way out: its warm workers and build farm do not outlive the batch
            summary = propose_batch(policy, sets, validator, sampling=sampling, coder=coder_policy, k=k,
                                    judge_fn=judge_pool.judge if judge_pool is not None else None,
                                    judge_many=judge_pool.judge_many if judge_pool is not None else None,
                                    backend=backend,
                                    on_stage=lambda m: typer.echo(m, err=True), brief=prompts == "brief")  # fmt: skip
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
    """Add the batch's valid tasks and their Coder record to the pool; redraw the frontier map. A task's name is its
    content's (`proposed_task_name`), and the validator rejected every copy of a pool task, so names never clash."""
    task_pool.next_round()
    for p in summary.proposals:
        if p.valid:
            entry = task_pool.add(p.task())
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
