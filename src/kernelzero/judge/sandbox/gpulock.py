"""A per-GPU shared/exclusive lock: correctness trials share the GPU, timing has it alone.

`with lock:` is exclusive (what `Judge.timing_lock` has always been); `with lock.shared():` admits any number of
holders at once but none while an exclusive holder runs. Writers are preferred: once a timing waits, no new trials
start, so timing is not starved by a stream of trials and no trial's kernels overlap a timed module's.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class SharedExclusiveLock:
    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._shared = 0
        self._exclusive = False
        self._waiting = 0  # exclusive requests waiting

    def __enter__(self) -> SharedExclusiveLock:
        with self._cond:
            self._waiting += 1
            self._cond.wait_for(lambda: not self._exclusive and self._shared == 0)
            self._waiting -= 1
            self._exclusive = True
        return self

    def __exit__(self, *exc: object) -> None:
        with self._cond:
            self._exclusive = False
            self._cond.notify_all()

    @contextmanager
    def shared(self) -> Iterator[None]:
        with self._cond:
            self._cond.wait_for(lambda: not self._exclusive and self._waiting == 0)
            self._shared += 1
        try:
            yield
        finally:
            with self._cond:
                self._shared -= 1
                self._cond.notify_all()
