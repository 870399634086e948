"""A per-GPU shared/exclusive lock: correctness trials share the GPU, timing has it alone.

`with lock:` is exclusive (what `Judge.timing_lock` has always been); `with lock.shared():` admits any number of
holders at once but none while an exclusive holder runs. Writers are preferred: once a timing waits, no new trials
start, so timing is not starved by a stream of trials and no trial's kernels overlap a timed module's.

The preference lapses while a shared holder has held the lock for `lapse_s` or more (a hanging candidate, until the
hang watch kills it; a long trial of a big task): the waiting timing cannot start before that holder leaves anyway,
so new trials are let in beside it instead of every worker on the GPU idling behind one stuck candidate. Once no
holder is that old the preference holds again; the timing waits only for the young trials already in.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

LAPSE_S = 1.0  # a trial holding the GPU this long no longer keeps others out on behalf of a waiting timing


class SharedExclusiveLock:
    def __init__(self, lapse_s: float = LAPSE_S, clock: Callable[[], float] = time.monotonic) -> None:
        self._cond = threading.Condition()
        self._shared: dict[int, float] = {}  # holder ticket -> when it took the lock
        self._tickets = itertools.count()
        self._exclusive = False
        self._waiting = 0  # exclusive requests waiting
        self.lapse_s, self._clock = lapse_s, clock

    def __enter__(self) -> SharedExclusiveLock:
        with self._cond:
            self._waiting += 1
            self._cond.wait_for(lambda: not self._exclusive and not self._shared)
            self._waiting -= 1
            self._exclusive = True
        return self

    def __exit__(self, *exc: object) -> None:
        with self._cond:
            self._exclusive = False
            self._cond.notify_all()

    def _lapse_in(self) -> float | None:
        """Seconds until the oldest holder has held `lapse_s` (0: it has); None without holders."""
        if not self._shared:
            return None
        return max(0.0, min(self._shared.values()) + self.lapse_s - self._clock())

    def _may_share(self) -> bool:
        return not self._exclusive and (self._waiting == 0 or self._lapse_in() == 0.0)

    @contextmanager
    def shared(self) -> Iterator[None]:
        with self._cond:
            while not self._may_share():
                left = None if self._exclusive else self._lapse_in()
                self._cond.wait(None if left is None else left + 0.01)  # woken early by any release
            ticket = next(self._tickets)
            self._shared[ticket] = self._clock()
        try:
            yield
        finally:
            with self._cond:
                del self._shared[ticket]
                self._cond.notify_all()
