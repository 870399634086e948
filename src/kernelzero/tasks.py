"""The Task record and loading of KernelBench-format task files (never executed here: parsed only)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Task:
    """One KernelBench-format module: `Model`, `get_inputs`, `get_init_inputs` (DESIGN.md section 2)."""

    name: str
    source: str
    origin: str = "user"  # kernelbench | proposed | user | recycled
    level: int | None = None
    apis: tuple[str, ...] = field(default=())
    path: str | None = None

    @classmethod
    def from_file(cls, path: str | Path, **kw) -> Task:
        p = Path(path)
        return cls(name=p.stem, source=p.read_text(), path=str(p), **kw)
