"""The `kernelzero` command: the app (`app.py`), what every command prints besides its results (`ui.py`), and the
commands, one module per area, each adding its own to the app on import. Heavy imports (torch, transformers, trl)
stay inside the commands, so `kernelzero --help` answers at once."""

from __future__ import annotations

from kernelzero.commands import data, evaluate, judge, loop, policies, propose, study  # noqa: F401 (registration)
from kernelzero.commands.app import MODEL_HELP, app
from kernelzero.commands.ui import fail

__all__ = ["MODEL_HELP", "app", "fail"]
