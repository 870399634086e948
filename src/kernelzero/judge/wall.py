"""The `side_stream` guard's clock: a module's calls timed by the wall between device-wide syncs against the current
stream's events around the same calls (`timing.time_model` runs `wall_rounds` after its timed loop).

Work a module launches on a stream of its own escapes the events the timed loop reads, and shows in the wall: the
guard rejects where the wall exceeds the span by SIDE_STREAM_MIN_MS and by the span itself (`hides_work`). What the
machine adds to every call at that moment (the host waking on a loaded CPU, the GPU time-sliced with other
processes) is not the module's: before each of its calls a tiny kernel of the judge's own is measured the same way,
and that control's median excess is taken out of the module's walls. In the second GPU study (4 studies at once on
an H100, before the control) `side_stream` rejected 27-88 of 768 Coder rollouts a run: honest 13 us Triton kernels
read 0.29 ms of wall, and one source's verdict counts for every rollout that wrote it. A round whose medians still
look like hidden work is measured again after a pause, up to twice, and the least hidden round kept: work on a side
stream shows in every round, a moment's contention (a dying context of a hung candidate killed just before) passes.
On an H100, 3 of 45 honest CUDA candidates of a loaded batch showed 0.2-1.6 ms of wall over 0.006-0.09 ms of span in
one round. The host's wait for a CPU inside each wall (`RunQueueWait`) is recorded beside them, not taken out: with
a spinning sync, time the host waited for a core may be time the GPU spent on hidden work.
"""

from __future__ import annotations

import statistics
from gc import disable as _gc_disable  # bound at import, before any candidate code runs in the worker
from gc import enable as _gc_enable
from gc import isenabled as _gc_isenabled
from os import O_RDONLY as _O_RDONLY
from os import close as _os_close
from os import open as _os_open
from os import pread as _os_pread
from time import sleep as _host_sleep

SIDE_STREAM_MIN_MS = 0.2  # wall minus event time an honest call never shows (host launch cost is ~0.01-0.1 ms)
WALL_ROUND_PAUSES_S = (0.1, 0.5)  # before the second and third wall-clock rounds of a call that looked hidden
CONTROL_BYTES = 512  # the control kernel's buffer: one small fill, a launch and next to no work


def hides_work(wall_ms: float, span_ms: float) -> bool:
    """A call's median wall time (device-wide syncs around it) exceeds its span (the current stream's events
    around it) by more than SIDE_STREAM_MIN_MS and by more than the span itself: work on a stream the events do not
    see (the `side_stream` guard's rule)."""
    hidden = wall_ms - span_ms
    return hidden > SIDE_STREAM_MIN_MS and hidden > span_ms


class RunQueueWait:
    """This thread's time spent runnable but not running, waiting for a CPU (seconds; the second field of
    /proc/thread-self/schedstat, in ns), for the wall-clock calls: on a loaded machine the host waits for a core
    between the two syncs, time that is neither the module's work nor the GPU's. None where the kernel keeps no such
    figure. The file and the reads are bound at import, before candidate code runs: a module cannot feed it."""

    def __init__(self) -> None:
        try:
            self.fd: int | None = _os_open("/proc/thread-self/schedstat", _O_RDONLY)
        except OSError:
            self.fd = None

    def __call__(self) -> float | None:
        if self.fd is None:
            return None
        try:
            return int(_os_pread(self.fd, 64, 0).split()[1]) / 1e9
        except (OSError, ValueError, IndexError):
            return None

    def close(self) -> None:
        if self.fd is not None:
            _os_close(self.fd)
            self.fd = None


def _bracket(bound, waited, call, *args) -> tuple[float, float, float]:
    """`call(*args)` between device-wide syncs: its wall (ms), its span on the current stream's events (ms) and the
    host's wait for a CPU inside the wall (ms, `waited`: a `RunQueueWait`)."""
    a, b = bound.event(enable_timing=True), bound.event(enable_timing=True)
    bound.synchronize()
    w0, t0 = waited(), bound.perf_counter()
    a.record()
    call(*args)
    b.record()
    bound.synchronize()
    t1, w1 = bound.perf_counter(), waited()
    wait = w1 - w0 if w0 is not None and w1 is not None and w1 >= w0 else 0.0
    return (t1 - t0) * 1e3, bound.elapsed(a, b), wait * 1e3


def _wall_and_span(bound, model, input_sets: list[list], calls: int, control,
                   waited=lambda: None) -> dict[str, list[float]]:  # fmt: skip
    """Per call (ms): wall clock between device-wide syncs (`wall`) and the current stream's events around the same
    call with nothing queued before it (`span`: the host's enqueue and the stream's work, no cover), each call right
    after the same measure of `control`, a tiny kernel of the judge's own (`control`: its wall less its span), and
    the host's wait for a CPU inside each call's wall (`wait`). The control's excess is what the machine adds to any
    call at that moment (the host waking on a loaded CPU, the GPU time-sliced with other processes); work on a side
    stream adds to the module's calls only. The module's last call ended in a device-wide sync, so none of its work
    runs into the next control."""
    out: dict[str, list[float]] = {"wall": [], "span": [], "wait": [], "control": []}
    for i in range(calls):
        k_wall, k_span, _ = _bracket(bound, waited, control) if control is not None else (0.0, 0.0, 0.0)
        wall, span, wait = _bracket(bound, waited, model, *input_sets[i % len(input_sets)])
        for key, v in (("wall", wall), ("span", span), ("wait", wait), ("control", k_wall - k_span)):
            out[key].append(v)
    return out


def wall_rounds(bound, model, input_sets: list[list], calls: int,
                control: bool = True) -> tuple[list[float], list[float], dict]:  # fmt: skip
    """The module's walls less the control's excess, its spans (ms per call, from the round with the least hidden
    time) and the figures to record: rounds measured, the control's excess taken out, the median wait for a CPU.
    The garbage collector is off meanwhile, so no finalizer of the module's can run inside a control's bracket.
    `control` False (`TimingConfig.wall_control`): no control kernel, the walls as read (the protocol before it)."""
    where = next((d for d in (getattr(t, "device", None) for t in input_sets[0]) if d is not None), "cpu")
    cell = bound.scratch(CONTROL_BYTES, where)  # beside the inputs: on their GPU
    rounds = []  # (median wall - median span, the round's figures, the control's median excess) per round
    waited, collecting = RunQueueWait(), _gc_isenabled()
    _gc_disable()
    try:
        for pause in (0.0, *WALL_ROUND_PAUSES_S):
            if pause:
                _host_sleep(pause)
            got = _wall_and_span(bound, model, input_sets, calls, (lambda: bound.zero(cell)) if control else None,
                                 waited)  # fmt: skip
            excess = max(0.0, statistics.median(got["control"]))
            wall_median, span_median = statistics.median(got["wall"]) - excess, statistics.median(got["span"])
            rounds.append((wall_median - span_median, got, excess))
            if not hides_work(wall_median, span_median):
                break
    finally:
        waited.close()
        if collecting:
            _gc_enable()
    _, got, excess = min(rounds, key=lambda r: r[0])
    figures = {"wall_rounds": len(rounds), "wall_control_ms": round(excess, 4),
               "wall_waited_ms": round(statistics.median(got["wait"]), 4)}  # fmt: skip
    return [max(0.0, w - excess) for w in got["wall"]], got["span"], figures
