"""The `kernelzero` Typer app and its root options; the command modules add their commands to it."""

from __future__ import annotations

import typer

from kernelzero import __version__

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
PROMPTS_HELP = (
    "Prompt style: full (rules and a worked example) or brief (the task or API set alone: a model cold-started "
    "from scratch, as `kernelzero study` trains them; `prompts: brief` in a train config)."
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
                                 callback=_print_version),  # fmt: skip
) -> None:
    """Train and evaluate LLMs that write fast, correct GPU kernels (CUDA and Triton)."""
