"""The `kernelzero` entry point. Subcommands live in `kernelzero.commands`, one module per area."""

from __future__ import annotations

import sys

import typer

try:  # typer 0.2x carries its own copy of click; older typers use click itself
    from typer._click import exceptions as click_errors
except ImportError:  # pragma: no cover
    from click import exceptions as click_errors

from kernelzero.commands import app, fail
from kernelzero.commands.ui import interrupts

__all__ = ["app", "fail", "main"]


def main(args: list[str] | None = None) -> int:
    """Run the app; usage errors come out as one line (`kernelzero: error: ...`, exit 2) like the commands' own
    errors, instead of click's boxed usage screen, and an interrupt always says that it was one (exit 130)."""
    try:
        code = app(args=args, prog_name="kernelzero", standalone_mode=False)
    except click_errors.NoArgsIsHelpError as exc:  # `kernelzero apis`: the help is the answer
        typer.echo(exc.ctx.get_help() if exc.ctx else exc.format_message())
        return 2
    except click_errors.UsageError as exc:
        where = exc.ctx.command_path if exc.ctx else "kernelzero"
        typer.echo(f"kernelzero: error: {exc.format_message().rstrip('.')} (see `{where} --help`)", err=True)
        return exc.exit_code
    except click_errors.ClickException as exc:
        typer.echo(f"kernelzero: error: {exc.format_message()}", err=True)
        return exc.exit_code
    except typer.Abort:  # EOF on a prompt
        return 1
    if code == 130 and not interrupts.said:  # typer turns a KeyboardInterrupt into exit 130 without a word
        typer.echo("\nkernelzero: interrupted", err=True)
    return code if isinstance(code, int) else 0


if __name__ == "__main__":
    sys.exit(main())
