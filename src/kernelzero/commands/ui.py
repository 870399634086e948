"""What every command prints besides its results: one-line errors, checks of flags and inputs, progress, interrupts.

Conventions every command keeps (tests/unit/test_cli_first_contact.py holds them to it):
- a usage or input error is one line on stderr, `kernelzero: error: ...`, naming the flag or file and what to do,
  exit 2; a job that ran and failed exits 1; an interrupt (Ctrl-C) exits 130 and says how to resume where a rerun
  resumes. Flags and input files are checked before any heavy import or worker start, so a mistake costs a second;
- progress of anything longer than a few seconds goes to stderr, a rich bar on a terminal and plain lines when
  piped (a log then still shows that work is going on);
- stdout holds results only, so it can be piped.
"""

from __future__ import annotations

import sys
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn

import typer

from kernelzero.generation import parse_model_spec
from kernelzero.judge.sandbox.process import kill_workers

TINY_NOTE = (
    "no --model given: using the tiny local model, randomly initialised (a smoke test of the machinery: it writes no "
    "working kernel). Pass --model DIR, vllm:PATH or openai:MODEL@URL for a real one."
)


class _Interrupts:
    """Whether a command already said how it was interrupted (then `cli.main` adds nothing)."""

    said = False


interrupts = _Interrupts()
_START = time.monotonic()  # about when the command started: this module loads with the CLI, before any command


def fail(message: str, code: int = 2) -> NoReturn:
    """Print a one-line error naming the bad thing, then exit non-zero. Nothing already written is touched."""
    typer.echo(f"kernelzero: error: {' '.join(message.split())}", err=True)
    raise typer.Exit(code)


def say(message: str) -> None:
    """One progress or status line on stderr (stdout is kept for results)."""
    typer.echo(message, err=True)


def check_choice(flag: str, value: str, allowed: Sequence[str]) -> None:
    if value not in allowed:
        fail(f"{flag} must be one of {', '.join(allowed)}, got {value!r}")


def check_file(flag: str, path: Path | None, what: str = "file") -> None:
    """`flag` names a file that must exist (no-op when the option was not given)."""
    if path is not None and not path.is_file():
        fail(f"{flag} {path}: no such {what}" if not path.exists() else f"{flag} {path}: not a {what}")


def check_dir(flag: str, path: Path | None, what: str = "folder") -> None:
    if path is not None and not path.is_dir():
        fail(f"{flag} {path}: no such {what}" if not path.exists() else f"{flag} {path}: not a {what}")


def check_model(flag: str, spec: str | None) -> None:
    """A model spec that can be loaded at all: its form, and for local weights that the folder is there. Checked
    before a judge pool or a run directory is set up, so a typo costs nothing (an openai: endpoint is checked by
    its backend, when it is first asked)."""
    try:
        kind, args = parse_model_spec(spec)
    except ValueError as exc:
        fail(f"{flag}: {exc}")
    if kind in ("hf", "vllm") and not Path(args["path"]).is_dir():
        fail(f"{flag} {spec}: no model folder at {args['path']} (local weights; or vllm:PATH, openai:MODEL@URL)")


def check_probability(flag: str, value: float) -> None:
    if not 0 < value <= 1:
        fail(f"{flag} {value}: expected a value in (0, 1]")


@contextmanager
def interruptible(resume: str | Callable[[], str] | None = None) -> Iterator[None]:
    """Turn Ctrl-C into exit 130 with one line saying what to do next (`resume`: how to continue, if anything can
    be continued; a callable is asked at that moment, so it can count what is done), and stop the sandbox workers
    this process started."""
    try:
        yield
    except KeyboardInterrupt:
        hint = resume() if callable(resume) else resume
        interrupts.said = True
        typer.echo("\nkernelzero: interrupted" + (f"; {hint}" if hint else ""), err=True)
        kill_workers()  # else the judge's threads (and so the exit) wait for their running jobs: tens of seconds
        raise typer.Exit(130) from None


def print_table(table) -> None:
    """A rich table on stdout: fitted to a terminal; piped, at its natural width with no line padded (rich pads every
    cell to its column, so a piped `tasks` listing came out as 194-column lines of trailing blanks)."""
    from rich.console import Console

    if sys.stdout.isatty():
        Console().print(table)
        return
    import io

    buf = io.StringIO()
    Console(file=buf, width=100_000, color_system=None).print(table, crop=False)
    typer.echo("\n".join(line.rstrip() for line in buf.getvalue().splitlines()))


def quiet_library_warnings() -> None:
    """Silence library warnings that say nothing to a user of the command: TRL 1.16 (pinned) reads transformers'
    deprecated `is_gradient_checkpointing` at every generation, one FutureWarning per phase. Our own warnings and
    any other library's stay."""
    warnings.filterwarnings("ignore", message=r"`is_gradient_checkpointing` is deprecated", category=FutureWarning)


class Progress:
    """Progress over a known number of items on stderr: a rich bar on a terminal, `[i/N] label` lines when piped.

    with Progress(total, "judging") as bar:
        bar.advance("line 3: ok")
    """

    def __init__(self, total: int, description: str, *, lines_on_terminal: bool = False, every_s: float = 0.0):
        """lines_on_terminal: on a terminal, also print each item's label above the bar (not only when piped).
        every_s: piped, print at most one line per this many seconds (and the last), for many quick items."""
        self.total, self.description, self.done = total, description, 0
        self.lines_on_terminal, self.every_s = lines_on_terminal, every_s
        self._bar = None
        self._last = time.monotonic()

    def __enter__(self) -> Progress:
        if sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
            from rich.progress import Progress as RichProgress

            self._bar = RichProgress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                     TimeElapsedColumn(), console=Console(stderr=True), transient=True)  # fmt: skip
            self._bar.__enter__()
            self._job = self._bar.add_task(self.description, total=self.total)
        else:
            say(f"{self.description}: {self.total} to do")
        return self

    def advance(self, label: str = "") -> None:
        self.done += 1
        if self._bar is not None:
            if label and self.lines_on_terminal:
                self._bar.console.print(label, markup=False, highlight=False, soft_wrap=True)
            self._bar.advance(self._job)
        elif self.done == self.total or time.monotonic() - self._last >= self.every_s:
            self._last = time.monotonic()
            say(f"[{self.done}/{self.total}] {label}".rstrip())

    def track(self, items):
        """Yield `items`, advancing once per item (labelled by the item)."""
        for item in items:
            yield item
            self.advance(str(item))

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.__exit__(*exc)


class Stages:
    """Named stages of one long job, one stderr line each with the seconds since the command started, so a user
    sees what the silent seconds are spent on (start-up and imports are most of a CPU judge)."""

    def __init__(self, prefix: str):
        self.prefix = prefix

    def __call__(self, message: str) -> None:
        say(f"{self.prefix}: {message} [{time.monotonic() - _START:.1f} s]")
