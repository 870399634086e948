"""`judge`: one candidate, or a resumable JSONL batch keyed by input, through the sandboxed judge."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import typer

from kernelzero.commands.app import app
from kernelzero.commands.ui import Progress, Stages, check_choice, check_file, fail, interruptible, say
from kernelzero.judge.batch import BatchRecord, describe, load_request, plan_batch, run_batch
from kernelzero.judge.options import BACKENDS, DEVICES, JudgeOptions
from kernelzero.tasks import TaskFormatError

# A frame of the task's own code in a reference worker's traceback (the worker saves the task as task.py).
_TASK_FRAME = re.compile(r'File "[^"]*/task\.py", line (\d+), in (\S+)')
# The worker prefixes its error with the stage that raised; the user needs the exception, not our stage names.
_STAGE_PREFIX = re.compile(r"^(harness|init|forward|inputs|build|import|compile|load): ")


@app.command("judge")
def judge_cmd(
    task: Path | None = typer.Argument(None, help="Task file (KernelBench format)."),
    solution: Path | None = typer.Argument(None, help="Candidate source defining `class ModelNew`, or a saved "
                                           "completion: its last ```python block defining ModelNew is judged."),
    backend: str = typer.Option("triton", help="Kernel language of the candidate (with --batch: of lines that "
                                "name none): cuda or triton."),
    device: str = typer.Option("auto", help="cuda, cpu (Triton interpreter, correctness only) or auto."),
    as_json: bool = typer.Option(False, "--json", help="Print the verdict as one JSON line."),
    batch: Path | None = typer.Option(None, help='JSONL of {"task": path, "solution": path, "backend": ...}.'),
    out: Path | None = typer.Option(None, help="With --batch: one record per input line (its paths, line number "
                                    "and verdict). An existing file is resumed: a line whose task, solution and "
                                    "backend are unchanged keeps its verdict; any other is judged."),
    workers: int | None = typer.Option(None, min=1, help="Candidates judged concurrently (default: cores on CPU, "
                                       "4 on GPU)."),
    trials: int = typer.Option(5, min=1, help="Correctness trials on fresh random inputs."),
) -> None:
    """Judge candidates in the sandbox: build, check against the reference on fresh inputs, time on GPU.

    Exit status: 0 the candidate is correct, 1 it is not (or the judge failed), 2 a usage or input error (a
    missing or malformed file, a task that fails on its own). With --batch: 0 every line was judged, 1 some line
    got infra_error (not judged: rerun), 2 some input line is malformed or names a missing file."""
    check_choice("--backend", backend, BACKENDS)
    check_choice("--device", device, DEVICES)
    if backend == "cuda" and device == "cpu" and batch is None:
        fail("--backend cuda needs a GPU: CUDA candidates cannot be judged with --device cpu")
    options = JudgeOptions(device=device, trials=trials)
    if batch is not None:
        if task is not None or solution is not None:
            fail("give TASK SOLUTION, or --batch IN.jsonl --out OUT.jsonl, not both")
        _judge_batch(batch, out, options, workers, backend)
        return
    if task is None or solution is None:
        fail("give TASK and SOLUTION files, or --batch IN.jsonl --out OUT.jsonl")
    try:
        the_task, code = load_request(task, solution)
    except (OSError, TaskFormatError) as exc:  # checked before torch loads: a malformed task costs no sandbox
        fail(str(exc))
    stage = Stages("judge")
    stage("loading the judge (torch)")
    from kernelzero.judge.pool import JudgePool

    with JudgePool(options, workers=1) as pool, interruptible():
        if backend == "cuda" and pool.judge_.device != "cuda":
            fail("--backend cuda needs a GPU, and this machine has none")
        stage(f"judging on {pool.judge_.device}: the task's reference Model, then the candidate, each in its own "
              "sandbox worker" + (" (Triton interpreter: correctness only, not timed)" if pool.judge_.device == "cpu"
                                  else ""))  # fmt: skip
        verdict = pool.judge(the_task, code, backend)
        reference_error = pool.judge_.reference(the_task).error if verdict.guard == "reference" else None
    if as_json:
        typer.echo(verdict.to_json())
    if reference_error is not None:  # the task is at fault, not the candidate: an input error
        fail(_task_error_line(reference_error, task))
    if not as_json:
        typer.echo(describe(verdict))
    raise typer.Exit(0 if verdict.correct else 1)


def _task_error_line(error: str, task: Path) -> str:
    """One line for a reference that failed: the exception the task raised and, when its own code raised it, where."""
    head = _STAGE_PREFIX.sub("", error.strip().splitlines()[0] if error.strip() else "no message")
    frames = _TASK_FRAME.findall(error)
    where = f"{task}:{frames[-1][0]} (in {frames[-1][1]})" if frames else str(task)
    return f"{where}: the task's own Model fails in the sandbox, so no candidate can be judged against it: {head}"


def _judge_batch(batch: Path, out: Path | None, options: JudgeOptions, workers: int | None, backend: str) -> None:
    check_file("--batch", batch)
    if out is None:
        fail("--batch needs --out FILE (one record per input line; an existing file is resumed)")
    if out.resolve() == batch.resolve():
        fail(f"--out {out} is the --batch input itself; name another file")
    if out.exists() and not out.is_file():
        fail(f"--out {out}: not a file")
    plan = plan_batch(batch, out, default_backend=backend)
    if options.device == "cpu":  # a CUDA line would get infra_error, and no rerun on this machine could change that
        for it in plan.items:
            if it.request is not None and it.request[2] == "cuda" and it.record.line not in plan.reused:
                it.request, it.record.error = None, "backend cuda needs a GPU (this batch runs with --device cpu)"
    if plan.foreign > 1 and not plan.earlier and not plan.unkeyed:
        fail(f"--out {out} exists and holds no batch records: name another file (or delete it)")
    n, todo = len(plan.items), plan.todo
    bad = [it.record for it in plan.items if it.request is None]
    if plan.earlier or plan.unkeyed:
        say(f"resuming {out}: {len(plan.reused)} of {n} line(s) already judged with the same task, solution and "
            f"backend (kept); judging {len(todo)}" + (f"; {len(bad)} input line(s) cannot be judged" if bad else ""))
    if plan.unkeyed:
        say(f"  {plan.unkeyed} verdict line(s) of {out} are in the older format, which named no input: judged again")
    judged = [0]  # lines judged (and written) by this run

    def progress_line(record: BatchRecord, reused: bool) -> str:
        what = "kept" if reused else record.status
        detail = record.error or (record.verdict.feedback.splitlines()[0][:100] if record.verdict and
                                  record.verdict.feedback and not reused else "")  # fmt: skip
        paths = f" ({record.task}, {record.solution})" if record.task is not None else ""
        return f"line {record.line}{paths}: {what}" + (f": {detail}" if detail else "")

    def resume_hint() -> str:
        return (f"{len(plan.reused) + judged[0]} of {n} line(s) are judged in {out}; rerun the same command to "
                "resume (judged lines are kept)")  # fmt: skip

    with Progress(n, f"judging {batch}", lines_on_terminal=bool(bad)) as bar:
        def on_record(record: BatchRecord, reused: bool) -> None:
            judged[0] += not reused and record.verdict is not None
            bar.advance(progress_line(record, reused))

        if todo:
            Stages("judge")(f"loading the judge (torch) for {len(todo)} line(s)")
            from kernelzero.judge.pool import JudgePool

            with JudgePool(options, workers) as pool, interruptible(resume_hint):
                records = run_batch(plan, out, pool.imap, on_record)
        else:
            records = run_batch(plan, out, None, on_record)
    result = Counter(r.status for r in records)
    typer.echo(" ".join(f"{k}={v}" for k, v in sorted(result.items())) + f" -> {out}")
    if bad:
        first = bad[0]
        fail(f"{len(bad)} input line(s) could not be judged, first: {batch}:{first.line}: {first.error}; fix them and "
             "rerun the same command (judged lines are kept)")  # fmt: skip
    # The judge could not judge these; a failing reference is the task's fault (an input error), anything else is
    # the machine's (a rerun judges them again).
    broken = sorted({r.task for r in records if r.verdict and r.verdict.guard == "reference"})
    if broken:
        fail(f"{len(broken)} task(s) fail on their own in the sandbox (infra_error [reference]), first: {broken[0]}; "
             f"see the feedback in {out}, fix the task and rerun")  # fmt: skip
    if result.get("infra_error"):
        fail(f"{result['infra_error']} line(s) got infra_error (not judged, see their feedback in {out}); rerun the "
             "same command to judge them again", code=1)  # fmt: skip
