"""What a task costs the judge: how many of its outputs are kept (a plan by output size) and admission by memory.

KernelBench ships tasks whose outputs are 6-8 GB. Fifteen output sets per side (5 trials, 5 replays, 2 wide trials,
3 timed outputs) would be 90-120 GB of host memory for one candidate, so the plan shrinks with the output
(`choose_plan`): the largest tier that keeps at most `kept_output_gb` of outputs per side, down to 2 trials, 1 replay
(the last trial's own buffer with new contents: the probe a cache keyed on the pointer fails), the scale trial and
1 timed output. The guards stay: only how often each is run changes.

Admission (`MemoryGate`): a worker is started only when its estimated GPU and host memory fit beside those already
admitted, so 8 workers never run one another out of device memory and the judge's process never exhausts host
memory. Estimates come from the task's footprint measured on the `meta` device before anything is allocated
(`harness.meta_footprint`), then from the reference's measured peak. A task whose footprint cannot fit the GPU alone
is told apart at once (`too_large`), never scored.
"""

from __future__ import annotations

import gc
import os
import threading
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass, replace

GB = 2**30
WORKER_GPU = 1 * GB  # a worker's CUDA context, allocator slack and the first Triton/cuBLAS workspaces
WORKER_HOST = 5 * GB // 2  # a worker's resident set: torch, the CUDA libraries and context, Triton, the task


@dataclass(frozen=True)
class Plan:
    """How many output sets one judging keeps: correctness trials, replay trials, wide trials, timed input sets, and
    the timing's fresh sets (only in a full plan: `JudgeOptions.timing_fresh`)."""

    trials: int
    replays: int
    wide: int
    timing_sets: int
    fresh: int = 0

    @property
    def sets(self) -> int:
        return self.trials + self.replays + self.wide + self.timing_sets + self.fresh


def choose_plan(full: Plan, out_bytes: int | None, kept_bytes: float) -> Plan:
    """The first plan of `full`, `full` without its fresh sets, a middle tier and the minimal one whose kept outputs
    fit `kept_bytes` per side (the minimal one when none does). Unknown sizes (None) keep the full plan."""
    tiers = [full, replace(full, fresh=0),
             Plan(min(full.trials, 3), min(full.replays, 2), min(full.wide, 2), min(full.timing_sets, 2)),
             Plan(min(full.trials, 2), min(full.replays, 1), min(full.wide, 1), 1)]  # fmt: skip
    if out_bytes is None:
        return full
    for plan in tiers:
        if plan.sets * out_bytes <= kept_bytes:
            return plan
    return tiers[-1]


@dataclass(frozen=True)
class Footprint:
    """Bytes of one forward's inputs, outputs and parameters (the `meta` device's measure, or the real one's)."""

    in_bytes: int
    out_bytes: int
    param_bytes: int

    def gpu_need(self, measured_peak: int | None = None, plan: Plan | None = None, copies: int = 2) -> int:
        """Device memory a worker of this task needs: its context, the parameters, the inputs and outputs of one call
        with as much again for intermediates and kept copies (or the reference's measured peak when larger); with
        `plan` (its outputs handed over on the device, `sandbox/devmem.py`), `copies` times the outputs it keeps as
        well: a candidate's exported copies and the judge's (2), a reference's exports (1: the judge keeps its own
        copies in the references' budget)."""
        need = WORKER_GPU + self.param_bytes + 2 * (self.in_bytes + self.out_bytes)
        kept = copies * plan.sets * self.out_bytes if plan is not None else 0
        return max(need, WORKER_GPU + (measured_peak or 0)) + kept

    def host_need(self, plan: Plan, on_device: bool = False) -> int:
        """Host memory a worker of this task holds: its resident set and the outputs it hands over (one memfd;
        none when they go over on the device)."""
        return WORKER_HOST + (0 if on_device else plan.sets * self.out_bytes)


def host_memory_bytes() -> int:
    """Memory the machine can give (MemAvailable at the first call, plus what this process already holds)."""
    try:
        with open("/proc/meminfo") as f:
            info = {line.split(":")[0]: int(line.split()[1]) * 1024 for line in f}
        return info.get("MemAvailable", info.get("MemTotal", 0))
    except OSError:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


class MemoryGate:
    """Admission by bytes over named resources (one per GPU, and `host`), first come first served.

    `hold({"gpu:0": n, "host": m})` blocks until every amount fits beside what is held, then holds them all at once
    (no partial holds, so no deadlock between resources). An amount larger than a resource's capacity is clamped to
    it: that job runs alone on the resource rather than never. Requests are served in arrival order, so a big task
    is not starved by a stream of small ones.
    """

    def __init__(self, capacity: dict[str, int]):
        self.capacity = dict(capacity)
        self._held = {k: 0 for k in capacity}
        self.peak = {k: 0 for k in capacity}
        self._cond = threading.Condition()
        self._later: deque[dict[str, int]] = deque()  # `release_later`: appended by finalizers, drained under the lock
        self._queue: deque[object] = deque()

    @property
    def held(self) -> dict[str, int]:
        """What is held now, per resource (finalizers' releases applied)."""
        with self._cond:
            self._drain()
            return dict(self._held)

    @property
    def waiting(self) -> int:
        """Requests waiting in the queue."""
        return len(self._queue)

    def describe(self) -> str:
        """One line of state for a stall report: held / capacity per resource (GB), peaks, requests waiting."""
        with self._cond:
            self._drain()
            parts = [f"{k} {self._held[k] / GB:.1f}/{self.capacity[k] / GB:.1f} (peak {self.peak[k] / GB:.1f})"
                     if self.capacity[k] >= GB else f"{k} {self._held[k]}/{self.capacity[k]}"  # a count: tokens
                     for k in self.capacity]  # fmt: skip
            return f"gate: {', '.join(parts)} GB; {len(self._queue)} waiting"

    def clamp(self, need: dict[str, int]) -> dict[str, int]:
        """`need` as the gate would hold it: each amount within its resource's capacity, unknown resources left out."""
        return {k: min(max(0, int(v)), self.capacity[k]) for k, v in need.items() if k in self.capacity}

    def acquire(self, need: dict[str, int], block: bool = True, on_wait=None,
                jump: bool = False) -> dict[str, int] | None:  # fmt: skip
        """Hold `need` (clamped to each capacity) and return what is held; without `block`, None at once when it does
        not fit now or others are waiting (it never jumps the queue, unless `jump`: for a resource no blocking request
        ever asks for, such as the references' budget, a queue of workers is no reason to refuse). Blocking, `jump`
        waits at the head of the queue, not at its end: for a request that those ahead of it wait for (the candidate
        of the one big task whose end the next big task's reference awaits). While it waits at the head of the queue
        it calls `on_wait()` each second (outside the gate's lock: the caller may drop idle holders there)."""
        need = self.clamp(need)
        if not block:
            with self._cond:
                self._drain()
                if (self._queue and not jump) or not self._fits(need):
                    return None
                self._take(need)
                return need
        ticket = object()
        with self._cond:
            (self._queue.appendleft if jump else self._queue.append)(ticket)
        while True:
            with self._cond:
                self._drain()
                if self._queue[0] is ticket and self._fits(need):
                    self._queue.popleft()
                    self._take(need)
                    return need
                idle = not self._cond.wait(timeout=1.0) and self._queue[0] is ticket
            if idle:
                if on_wait is not None:
                    on_wait()
                # Holds die with their references, and a reference in a reference cycle (an exception's
                # traceback) waits for the cycle collector, which an idle process may not run for a while.
                gc.collect()
                with self._cond:
                    self._drain()

    def _take(self, need: dict[str, int]) -> None:
        for k, v in need.items():
            self._held[k] += v
            self.peak[k] = max(self.peak[k], self._held[k])
        self._cond.notify_all()

    def release(self, held: dict[str, int]) -> None:
        with self._cond:
            self._give_back(held)
            self._drain()
            self._cond.notify_all()

    def release_later(self, held: dict[str, int]) -> None:
        """Release from a garbage-collection finalizer: no lock taken there (a finalizer that waits on a lock lets
        another thread run in the middle of whatever the collecting thread was doing; CPython 3.11's AST builder, for
        one, then fails with `SystemError: AST constructor recursion depth mismatch`). Applied at the gate's next
        use, and by waiters, woken here when the lock is free at once (never waiting for it), else within a second:
        a big task's reference, dying, hands its token to the next one."""
        self._later.append(held)  # atomic
        if self._cond.acquire(blocking=False):
            try:
                self._cond.notify_all()
            finally:
                self._cond.release()

    def _give_back(self, held: dict[str, int]) -> None:
        for k, v in held.items():
            self._held[k] -= v

    def _drain(self) -> None:
        while self._later:
            self._give_back(self._later.popleft())

    def _fits(self, need: dict[str, int]) -> bool:
        return all(self._held[k] + v <= self.capacity[k] for k, v in need.items())

    @contextmanager
    def hold(self, need: dict[str, int]):
        held = self.acquire(need)
        try:
            yield held
        finally:
            self.release(held)
