"""The `kernelzero` command: thin subcommands that import their heavy dependencies only when they run."""

from __future__ import annotations

import sys

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


def main() -> None:
    app(prog_name="kernelzero")


if __name__ == "__main__":
    sys.exit(main())
