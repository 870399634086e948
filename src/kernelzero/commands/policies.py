"""`solve` and `serve`: generate with a model, judge, keep the best; an OpenAI-compatible server."""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path
from typing import Annotated

import typer

from kernelzero.commands.app import MODEL_HELP as _MODEL_HELP
from kernelzero.commands.app import PROMPTS_HELP, app
from kernelzero.commands.ui import (
    TINY_NOTE,
    Stages,
    check_choice,
    check_model,
    check_probability,
    fail,
    interruptible,
    print_table,
    say,
)
from kernelzero.eval.solve import solve, solve_table, write_solve_outputs
from kernelzero.generation import GenerationError, SamplingConfig, load_policy
from kernelzero.generation.serve import make_server
from kernelzero.judge.options import BACKENDS, DEVICES, JudgeOptions
from kernelzero.roles.coder import OPTIMIZATION_PRINCIPLES, PROMPTS
from kernelzero.tasks import Task, TaskFormatError, check_source


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
    prompts: Annotated[str, typer.Option(help=PROMPTS_HELP)] = "full",
) -> None:
    """Generate solutions for one task, judge them, keep the best; print a table and write everything to --out."""
    check_choice("--backend", backend, BACKENDS)
    check_choice("--prompts", prompts, PROMPTS)
    check_choice("--device", device, DEVICES)
    check_choice("--gen-device", gen_device, DEVICES)
    check_probability("--top-p", top_p)
    if backend == "cuda" and device == "cpu":
        fail("--backend cuda needs a GPU: CUDA solutions cannot be judged with --device cpu")
    if not task.is_file():
        fail(f"no task file at {task}" if not task.exists() else f"{task}: not a file")
    the_task = Task.from_file(task)
    try:
        check_source(the_task.source, str(task))
    except TaskFormatError as exc:
        fail(str(exc))
    check_model("--model", model)
    out = out or Path("out") / "solve" / f"{the_task.name}-{time.strftime('%Y%m%d-%H%M%S')}"
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        fail(f"--out {out} already holds files; name a new or empty directory")
    sampling = SamplingConfig(temperature=temperature, top_p=top_p, max_new_tokens=max_new_tokens, seed=seed)
    if model is None:
        say(TINY_NOTE)
    stage = Stages("solve")
    stage("loading the model")
    try:
        policy = load_policy(model, device=gen_device)
    except (GenerationError, ValueError, OSError) as e:
        fail(f"--model {model}: {e}")
    stage("loading the judge (torch)")
    from kernelzero.judge.pool import JudgePool

    def progress(r) -> None:
        say(f"turn {r.turn} sample {r.sample}: {r.verdict.status}")

    say(f"solving {the_task.name} with {policy.name}: {samples} samples x {turns} turns ({backend})")
    with JudgePool(JudgeOptions(device=device)) as pool, interruptible(f"nothing was written ({out} is written at "
                                                                        "the end)"):  # fmt: skip
        if backend == "cuda" and pool.judge_.device != "cuda":
            fail("--backend cuda needs a GPU, and this machine has none")
        try:
            result = solve(the_task, policy, backend=backend, judge_fn=pool.judge, judge_many=pool.judge_many,
                           samples=samples, turns=turns, sampling=sampling,
                           principles=OPTIMIZATION_PRINCIPLES if principles else None,
                           on_rollout=progress, brief=prompts == "brief")  # fmt: skip
        except GenerationError as e:
            fail(str(e), code=1)
    print_table(solve_table(result))
    write_solve_outputs(result, out)
    best = result.best
    verdict = "solved" if result.solved else "not solved"
    typer.echo(f"{verdict}; best: sample {best.sample} turn {best.turn} ({best.verdict.status}); wrote {out}")


@app.command("serve")
def serve_command(
    model: Annotated[str | None, typer.Option("--model", "-m", help=_MODEL_HELP)] = None,
    host: Annotated[str, typer.Option(help="Address to bind (loopback by default).")] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", "-p", min=0, max=65535, help="Port to bind; 0 picks a free one (printed).")
    ] = 8000,
    name: Annotated[str, typer.Option(help="Model name clients must send in requests.")] = "tiny",
    api_key: Annotated[str | None, typer.Option(help="Require `Authorization: Bearer KEY` on requests.")] = None,
    device: Annotated[str, typer.Option(help="Device of a local transformers model: auto, cuda, cpu.")] = "auto",
) -> None:
    """Serve a model over an OpenAI-compatible /v1/chat/completions endpoint (n >= 1, no streaming)."""
    check_choice("--device", device, DEVICES)
    check_model("--model", model)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if model is None:
        say(TINY_NOTE)
    Stages("serve")("loading the model")
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
    except KeyboardInterrupt:  # Ctrl-C is how a server is stopped: a normal end
        say("kernelzero serve: stopped")
    finally:
        server.server_close()
