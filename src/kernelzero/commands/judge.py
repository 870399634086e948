"""`judge`: one candidate or a resumable JSONL batch through the sandboxed judge."""

from __future__ import annotations

from pathlib import Path

import typer

from kernelzero.commands import app, fail


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
