"""The `kernelzero` entry point. Subcommands live in `kernelzero.commands`, one module per area."""

from __future__ import annotations

import sys

from kernelzero.commands import app, fail

__all__ = ["app", "fail", "main"]


def main() -> None:
    app(prog_name="kernelzero")


if __name__ == "__main__":
    sys.exit(main())
