"""`solve` and `serve`: generate with a model, judge, keep the best; an OpenAI-compatible server."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Annotated

import typer

from kernelzero.commands import MODEL_HELP as _MODEL_HELP
from kernelzero.commands import app, fail

# ---------------------------------------------------------------------------------------------------------------------
# Policies (issue 6): `solve` and `serve`. Heavy imports (torch, transformers, the judge) stay inside the commands.
# ---------------------------------------------------------------------------------------------------------------------



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

    from kernelzero.generation.base import GenerationError, SamplingConfig
    from kernelzero.roles.coder import BACKENDS, OPTIMIZATION_PRINCIPLES
    from kernelzero.roles.parsing import check_definitions
    from kernelzero.roles.proposer import TASK_DEFINITIONS
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
    from kernelzero.eval.solve import solve, solve_table, write_solve_outputs
    from kernelzero.generation import load_policy

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
    from kernelzero.generation.serve import make_server

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
