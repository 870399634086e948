"""The `kernelzero` command's app and its subcommands, one module per area; heavy imports stay inside commands."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="kernelzero",
    help="Train and evaluate LLMs that write fast, correct GPU kernels (CUDA and Triton).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


MODEL_HELP = (
    "A local model directory, vllm:PATH, or openai:MODEL@URL (key from $OPENAI_API_KEY). "
    "Default: the tiny local model, built on first use."
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


# Registration: each module adds its commands to `app` on import (cheap: no torch, no transformers).
from kernelzero.commands import data, evaluate, judge, loop, policies, propose  # noqa: E402, F401
