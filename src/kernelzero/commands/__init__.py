"""The `kernelzero` command's app and its subcommands, one module per area; heavy imports stay inside commands."""

from __future__ import annotations

import typer

from kernelzero import __version__
from kernelzero.commands.ui import fail

app = typer.Typer(
    name="kernelzero",
    help="Train and evaluate LLMs that write fast, correct GPU kernels (CUDA and Triton).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


MODEL_HELP = (
    "A local model directory, vllm:PATH, or openai:MODEL@URL (key from $OPENAI_API_KEY). "
    "Default: the tiny local model, randomly initialised (a smoke test: it writes no working kernel)."
)


def _print_version(value: bool) -> None:
    # An eager option's own callback runs while the options are parsed, before click asks for a subcommand; a
    # check in the group callback came too late (`kernelzero --version` said "Missing command.").
    if value:
        typer.echo(f"kernelzero {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", help="Print the version and exit.", is_eager=True,
                                 callback=_print_version, expose_value=True),  # fmt: skip
) -> None:
    """Train and evaluate LLMs that write fast, correct GPU kernels (CUDA and Triton)."""


__all__ = ["MODEL_HELP", "app", "fail"]

# Registration: each module adds its commands to `app` on import (cheap: no torch, no transformers).
from kernelzero.commands import data, evaluate, judge, loop, policies, propose  # noqa: E402, F401
