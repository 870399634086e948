"""Where a judgment's wall time goes, by stage (`Verdict.stage_s`): for throughput work, never a reward."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable


def marks(stage_s: dict[str, float], prefix: str) -> Callable[[str], None]:
    """`mark(name)`: record in `stage_s[prefix + name]` the seconds since the previous mark (or this call)."""
    last = [time.monotonic()]

    def mark(name: str) -> None:
        now = time.monotonic()
        stage_s[prefix + name] = round(now - last[0], 3)
        last[0] = now

    return mark


def add_split(stage_s: dict[str, float], stage: str, split: object) -> None:
    """Record a worker's own split of `stage` (`messages.Split`: part -> seconds) as `stage_s[stage.part]`; the
    worker's word, so at most 8 parts of short names, and figures only."""
    for part, seconds in list(split.items())[:8] if isinstance(split, dict) else ():
        stage_s[f"{stage}.{str(part)[:24]}"] = round(float(seconds), 3)


@contextlib.contextmanager
def stopwatch(stage_s: dict[str, float], name: str):
    """Record in `stage_s[name]` the wall seconds the block took, when it completes (where throughput goes)."""
    t0 = time.monotonic()
    yield
    stage_s[name] = round(time.monotonic() - t0, 3)


@contextlib.contextmanager
def waited(stage_s: dict[str, float], name: str, lock):
    """Hold `lock`, recording in `stage_s[name]` how long it took to get it."""
    t0 = time.monotonic()
    with lock:
        stage_s[name] = round(time.monotonic() - t0, 3)
        yield
