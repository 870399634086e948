"""GPU timing of one module: CUDA events per call, L2 flushed between calls, rotated inputs, device-wide sync.

Runs inside a worker. The same function times the reference (eager and `torch.compile`) and the candidate, so the
two figures of a speedup are measured the same way. Each call is bracketed by a device-wide synchronize, and its
wall time is recorded beside its event time: work hidden on a side stream escapes the events but not the wall
clock, which is what the `side_stream` guard compares. Events are the reported figure.

Host launch latency is hidden behind GPU work queued before each call's start event: the L2 flush (a read of a buffer
larger than L2; `triton.testing.do_bench` writes one), and then a sleep kernel sized to outlast the host's enqueue of
one call (three times the slowest enqueue seen in the warm-up, 20 us to 2 ms), the launch cover. Without it a kernel of
a few microseconds was timed as the host's Python and launcher time whenever the flush ended first: the same candidate
measured 19.7 us then 6.5 us in two fresh judgings on an H200 while the eager reference (C++ dispatch, shorter enqueue)
held at 10.5 us, and builds running on the same CPU moved it further. With the cover, each call's events span its own
GPU work whatever the host's load; a call that synchronizes with the host inside itself still shows its gaps (the cover
ends before them).

Each cover is audited (an event before it gives its GPU length, set against the host's time from its launch to the
call's return): where the host may have outrun more than 1 in 20 covers, as when builds load the CPU after the
cover was sized on a quiet one, the calls are timed once more behind a cover of twice the host's slowest. The audit
comes back with the figures (`cover_audit`).

Where a small kernel's inputs lie in memory moves its time: on an H200 the same eager `(x - y).abs()` over the same
64 x 256 inputs, copied to other offsets in one process, took 5.9 or 6.9 us (two modes), while repeats at one place
agreed within 0.5%; a fresh process, whose allocator places the inputs elsewhere, draws one mode or the other. So
small inputs (`place_max_bytes`, all input sets together) are timed from `placements` copies laid out at fixed
phases of a 2 MB page, the calls rotating over them, and the reported median is the mean of the copies' medians:
the candidate and its reference, in different processes, are timed over the same virtual layouts, and what depends
on physical pages averages over eight draws instead of one.

A two-kernel eager module still reads in two modes by process: on an H100 `(x - y).abs()` took 7.1-7.4 us in a
long-lived process and 6.1-6.8 us in fresh ones, the 8 copies of one timing agreeing. Neither the launch cover's
length, nor where the intermediate or the output lies, nor copies 66 MB apart moved it (`bench/timing_probe.py`).
So the flush buffer, the copies and all the timed calls allocate from one private pool made for the timing
(`own_pool`): a timed call's pages lie beside the flush buffer's whatever the process mapped before. That this
removes the mode is not yet measured (`bench/timing_probe.py`: `pool` against `no_pool`, long-lived and fresh).
With `graphs` (on by default) small tasks are also timed replaying CUDA graphs captured from the module, one launch
per call whatever the module launches (`graph_timing`, which also says how a module that computes only while captured
is kept from those figures); a speedup divides graph figures where both sides have them (`comparable`). On an H100
that held the two-kernel module's speedups within 4.3% over six judgings, where eager calls moved 17.4%.
"""

from __future__ import annotations

import contextlib
import statistics
from dataclasses import asdict, dataclass

from kernelzero.judge.wall import wall_rounds

FRESH_FACTOR = 3.0  # a call on new values may take this many times the timed median ...
FRESH_MIN_MS = 0.02  # ... plus this much (a launch-bound kernel's single call jitters by microseconds)


def slower_on_fresh(fresh_ms: float, median_ms: float) -> bool:
    """A call on input values never seen took more than FRESH_FACTOR times the timed calls' median plus
    FRESH_MIN_MS: the timed calls, which repeat a few input sets, were not all computing (the `fresh_inputs` rule)."""
    return fresh_ms > FRESH_FACTOR * median_ms + FRESH_MIN_MS


@dataclass
class TimingConfig:
    warmup: int = 5
    min_calls: int = 20
    max_calls: int = 200
    budget_s: float = 2.0  # aim for this much timed GPU work per module, within [min_calls, max_calls]
    flush_l2: bool = True
    l2_flush_bytes: int = 256 * 2**20  # > 2x the H200's 60 MB L2
    flush_reads: bool = True
    """Flush by reading the buffer (a sum: L2 left holding clean lines) instead of writing zeros into it (L2 left
    holding dirty lines, written back to memory while the next timed call runs, in an order set by where the buffer
    lies). Off: zeros, as `triton.testing.do_bench` flushes. On since 6fa72e6, where an H100 judged as before with it
    (15 of 16 timings within bound, kernels of 50 us or more within 1.5%): it did not remove the per-process mode of
    a two-kernel eager reference it was suspected of (7.27 against 6.32-6.63 us), but leaves no write-back inside a
    timed call; `bench/timing_probe.py` compares both."""
    launch_cover: bool = True  # a sleep kernel before each call's start event, outlasting the host's enqueue
    cover_min_us: float = 20.0
    cover_max_us: float = 2000.0
    placements: int = 8  # copies of small inputs, at fixed phases of a 2 MB page, the timed calls rotate over
    place_max_bytes: int = 16 * 2**20  # inputs larger than this (all sets together) are timed where they lie
    own_pool: bool = True
    """The L2 flush buffer, the placed copies and all the timed calls allocate (the module's intermediates and
    outputs) from a private pool made for the timing (`own_pool`): new memory, side by side, whatever the process did
    before. Only where the inputs are placed: a large task's outputs would be held twice (the process's pool from the
    warm-up, then this one). The copies and calls in a pool of their own with the flush buffer outside it did not
    move the two-kernel mode on an H100 (`bench/README.md`); with the flush buffer inside, not yet measured."""
    calls_per_placement: int = 5  # at least this many timed calls per copy
    wall_control: bool = True  # the `side_stream` walls less a control kernel's excess (`wall.wall_rounds`)
    graphs: bool = True
    """Where the inputs are placed and there are two input sets or more, also time the calls replayed from captured
    CUDA graphs (`graph_timing`: one graph per copy and set, no host launch inside a call), reported under `graphs`
    beside the eager events; the judge compares a candidate's and its reference's graph figures where both have
    them. A two-kernel eager module's figure moved 15% between processes eagerly, 2.6% from graphs (H100,
    `bench/README.md`)."""


PAGE = 2 * 2**20  # a GPU's large page; placements differ by their phase within one
ALIGN = 512  # each placed tensor starts on this boundary, as the caching allocator's do (Triton's 16-byte rule holds)


def _up(n: int, to: int) -> int:
    return -(-n // to) * to


def placeable(bound, input_sets: list[list], count: int, max_bytes: int) -> int | None:
    """The bytes one placed copy of `input_sets` spans (`placed_sets`), or None where placing does not apply: fewer
    than two copies, no tensor, a tensor that is not contiguous or needs grad, tensors on two devices, or more than
    `max_bytes`."""
    if count < 2:
        return None
    tensors = [x for args in input_sets for x in args if isinstance(x, bound.tensor_type)]
    if not tensors or len({x.device for x in tensors}) > 1:
        return None
    if any(x.requires_grad or not x.is_contiguous() for x in tensors):
        return None
    span = sum(_up(x.numel() * x.element_size(), ALIGN) for x in tensors)
    return span if span <= max_bytes else None


def placed_sets(bound, input_sets: list[list], count: int, max_bytes: int) -> list[list[list]] | None:
    """`count` copies of `input_sets`, each copy's tensors laid out back to back (ALIGN-aligned) from a fixed phase of
    a PAGE-sized page of one new block: copy p starts p/count of a page past a page boundary, so where the copies lie
    does not depend on what the process allocated before. None where placing does not apply (`placeable`)."""
    span = placeable(bound, input_sets, count, max_bytes)
    if span is None:
        return None
    tensors = [x for args in input_sets for x in args if isinstance(x, bound.tensor_type)]
    stride = _up(span, PAGE) + PAGE  # each copy in pages of its own
    arena = bound.empty_bytes(count * stride + PAGE, tensors[0].device)
    base = -arena.data_ptr() % PAGE  # the arena's first page boundary
    copies = []
    for p in range(count):
        offset, sets = base + p * stride + _up(p * PAGE // count, ALIGN), []
        for args in input_sets:
            placed = []
            for x in args:
                if isinstance(x, bound.tensor_type):
                    size = x.numel() * x.element_size()
                    view = arena[offset : offset + size].view(x.dtype).view(x.shape)
                    bound.copy(view, x)
                    offset += _up(size, ALIGN)
                    x = view
                placed.append(x)
            sets.append(placed)
        copies.append(sets)
    return copies


def launch_cover_cycles(bound, enqueue_s: list[float], cfg: TimingConfig) -> tuple[int, float]:
    """(GPU cycles for `bound.sleep`, microseconds they last): three times the slowest of the host enqueue times
    `enqueue_s`, within [cover_min_us, cover_max_us]. The sleep's rate is measured here on this GPU (its clock)."""
    cover_us = min(cfg.cover_max_us, max(cfg.cover_min_us, 3e6 * max(enqueue_s)))
    probe = 200_000  # ~0.1 ms at an H200's ~2 GHz
    start, end = bound.event(enable_timing=True), bound.event(enable_timing=True)
    bound.sleep(1000)  # the first launch loads the kernel's module (CUDA's lazy loading, ~0.5 ms of host time):
    bound.synchronize()  # inside the events, it read as a 0.3 GHz clock on the H200 and the cover came out 3x short
    best_ms = float("inf")
    for _ in range(3):  # the least: another process's kernel sharing the GPU only stretches a probe
        start.record()
        bound.sleep(probe)
        end.record()
        bound.synchronize()
        best_ms = min(best_ms, bound.elapsed(start, end))
    cycles_per_us = probe / max(best_ms * 1e3, 1e-3)
    return int(cover_us * cycles_per_us), cover_us


@contextlib.contextmanager
def own_pool(bound):
    """This thread's CUDA allocations, inside, from a new private pool of the caching allocator (`torch.cuda.MemPool`,
    driven as `torch.cuda.use_mem_pool` does, through functions `Bound` took before candidate code ran): new segments,
    released once the pool and the last of its tensors are gone, so where a timed module's own tensors lie no longer
    depends on what the process allocated and freed before. A plain block where torch has no private pools."""
    if getattr(bound, "pool_api", None) is None:
        yield
        return
    make, begin, end, release, current = bound.pool_api
    pool, device = make(), current()
    begin(device, pool.id)
    try:
        yield
    finally:
        end(device, pool.id)
        release(device, pool.id)


def summarize(times_ms: list[float]) -> dict:
    """Median, inter-quartile range and min of a list of per-call times (ms)."""
    ordered = sorted(times_ms)
    if len(ordered) >= 4:
        q = statistics.quantiles(ordered, n=4)
        iqr = q[2] - q[0]
    else:
        iqr = ordered[-1] - ordered[0]
    return {"median_ms": statistics.median(ordered), "iqr_ms": iqr, "min_ms": ordered[0], "n": len(ordered)}


def _timed_calls(bound, model, copies, n, flush, unpin, cover, checked, capture, replays=None):
    """The timed loop of `time_model`: per call the flush, the cover and the call between its events; call i uses
    input set i % k of copy (i // k) % len(copies) (or, with `replays`, replays that copy's and set's graph). Returns
    the event times (ms), each cover's GPU length (us), the host's time from each cover's launch to the call's
    return (s), and the captured outputs. An event before each cover gives its GPU length: a call whose host time
    exceeds it may have been reached by the GPU before the host finished enqueuing it (its events then hold host
    gaps)."""
    k = len(copies[0])
    starts = [bound.event(enable_timing=True) for _ in range(n)]
    ends = [bound.event(enable_timing=True) for _ in range(n)]
    marks = [bound.event(enable_timing=True) for _ in range(n)] if cover is not None else []
    host_s: list[float] = []
    captured: dict[int, object] = {}
    for i in range(n):
        if flush is not None:
            unpin()  # before the flush, every call: the module may pin its inputs again inside forward
            flush()
        if cover is not None:
            marks[i].record()
            t0 = bound.perf_counter()
            bound.sleep(cover[0])
        starts[i].record()
        c = (i // k) % len(copies)
        out = replays[c][i % k]() if replays is not None else model(*copies[c][i % k])
        ends[i].record()
        if cover is not None:
            host_s.append(bound.perf_counter() - t0)
        if capture is not None and checked.get(i % k) == i:
            captured[i % k] = capture(out)
    bound.synchronize()  # device-wide: every stream
    event_ms = [bound.elapsed(a, b) for a, b in zip(starts, ends)]
    return event_ms, [bound.elapsed(a, b) * 1e3 for a, b in zip(marks, starts)], host_s, captured


def _checked_calls(bound, k: int, n: int) -> dict[int, int]:
    """Per input set j, the one timed call (of n) whose output is kept: a random one among those that use set j, so a
    module cannot tell which of its calls must be right."""
    return {j: j + k * bound.randbelow(max(1, (n - 1 - j) // k + 1)) for j in range(min(k, n))}


def _placed_summary(event_ms: list[float], k: int, count: int) -> tuple[dict, list[float]]:
    """The summary of calls rotated over `count` placed copies (call i used copy (i // k) % count), its median the
    mean of the copies' medians (a typical layout's time, not whichever one the process drew), and those medians."""
    per_copy = [statistics.median(t for i, t in enumerate(event_ms) if (i // k) % count == p) for p in range(count)]
    return {**summarize(event_ms), "median_ms": statistics.fmean(per_copy)}, per_copy


def graph_timing(bound, model, copies, n, flush, unpin, cover, capture, expected: dict, fresh_sets=()) -> dict:
    """The timed calls again, each replaying a CUDA graph captured from the module on that copy and input set: the
    host launches one graph per call whatever the module launches. `{"status": "ok", "events", "placements",
    "cover_audit"}`, or `{"status": why not}` where the figures would not be the module's own work:

    - each graph is captured (after a warm-up call on a side stream, as torch asks) on the inputs as they are, then
      every copy's input set j takes set (j + 1) % k's values before any replay, so what a module computed while
      being captured (or left in a buffer of its own) is for the wrong inputs;
    - one replay of each graph must then give, bit for bit, the eager timed call's output (`expected`, what
      `capture` kept) of the set whose values it now reads; otherwise (nondeterministic kernels too) `differs`;
    - the values then move on once more before the timed replays, one random replay per set of which is checked
      the same way (a graph that computes on its first replay only is `differs`);
    - then each of `fresh_sets` (values never seen, made after the eager timed loop; `expected` holds their eager
      outputs after the loop's) is written into one graph's inputs and replayed once, timed: a wrong output is
      `differs`, a replay slower than `slower_on_fresh` allows is `fresh` (a graph that copies outputs it kept for
      the values it was replayed on, rather than computing them, is not timed from graphs);
    - a module that cannot be captured (a host sync, an allocation outside the graph's pool) is `uncapturable`;
      two input sets are needed, of one shape each (`sets`), and the graph API (`unavailable`).
    The eager figures stay the reported `events` either way; the judge uses these where candidate and reference both
    have them (`core`)."""
    api, k = getattr(bound, "graph_api", None), len(copies[0])
    if api is None or capture is None or k < 2 or len(expected) < k:
        return {"status": "unavailable"}
    tensors = [[i for i, x in enumerate(args) if isinstance(x, bound.tensor_type)] for args in copies[0]]
    shapes = [[(copies[0][j][i].shape, copies[0][j][i].dtype) for i in tensors[j]] for j in range(k)]
    if any(t != tensors[0] or sh != shapes[0] for t, sh in zip(tensors, shapes)):
        return {"status": "sets"}
    graph, stream, stream_ctx, current, pool_handle = api
    graphs = []
    try:
        for copy in copies:
            row = []
            for args in copy:
                side = stream()
                side.wait_stream(current())
                # Not `torch.cuda.graph`: where its capture_end raises, it leaves the side stream current for good.
                with stream_ctx(side):
                    model(*args)  # a warm-up call off the default stream, as torch asks before a capture
                    # The capture's pool id is made here: `g.pool()` refuses a graph whose capture failed.
                    g, pool = graph(), pool_handle()
                    g.capture_begin(pool=pool)
                    try:
                        out = model(*args)
                    finally:
                        _end_capture(bound, g, pool)
                current().wait_stream(side)
                row.append((g, out))
            graphs.append(row)
    except Exception as exc:  # the module cannot be captured: it is timed eagerly only
        bound.synchronize()
        return {"status": "uncapturable", "why": f"{type(exc).__name__}: {exc}"[:300]}
    _rotate(bound, copies, tensors[0])
    for row in graphs:
        for j, (g, out) in enumerate(row):
            g.replay()
            if not _same(bound, capture(out), expected[(j + 1) % k]):
                return {"status": "differs"}
    # The values move on once more, so what the checked replays left in the outputs is stale for the timed ones, and
    # one random timed replay per set is checked too: a graph right once and idle after is not timed.
    _rotate(bound, copies, tensors[0])
    replays = [[(lambda g=g, out=out: (g.replay(), out)[1]) for g, out in row] for row in graphs]
    event_ms, cover_us, host_s, kept = _timed_calls(bound, None, copies, n, flush, unpin, cover,
                                                    _checked_calls(bound, k, n), capture, replays)  # fmt: skip
    if any(not _same(bound, got, expected[(j + 2) % k]) for j, got in kept.items()):
        return {"status": "differs"}
    events, per_copy = _placed_summary(event_ms, k, len(copies))
    fresh_ms = []
    for f, values in enumerate(fresh_sets):
        j = f % k
        if [(values[i].shape, values[i].dtype) for i in tensors[0]] != shapes[0]:
            break  # a task whose shapes vary by seed: this set does not fit the graph's buffers
        for i in tensors[0]:
            bound.copy(copies[0][j][i], values[i])
        ms, _, _, got = _timed_calls(bound, None, [[copies[0][j]]], 1, flush, unpin, cover, {0: 0}, capture,
                                     [[replays[0][j]]])  # fmt: skip
        if not _same(bound, got[0], expected[k + f]):
            return {"status": "differs"}
        fresh_ms += ms
    if fresh_ms and slower_on_fresh(min(fresh_ms), events["median_ms"]):
        return {"status": "fresh", "fresh_ms": round(min(fresh_ms), 6), "median_ms": round(events["median_ms"], 6)}
    return {"status": "ok", "events": events, "placements": [round(m, 6) for m in per_copy],
            "cover_audit": _cover_audit(cover_us, host_s) if cover is not None else None}  # fmt: skip


def _rotate(bound, copies, tensors: list[int]) -> None:
    """In every copy, input set j's tensors (at positions `tensors`) take set j + 1's values (mod the sets)."""
    k = len(copies[0])
    for copy in copies:
        values = [[bound.clone(copy[j][i]) for i in tensors] for j in range(k)]
        for j in range(k):
            for i, v in zip(tensors, values[(j + 1) % k]):
                bound.copy(copy[j][i], v)


def _same(bound, got, want) -> bool:
    """Whether two outputs `capture` kept are equal bit for bit."""
    return (
        got[0] == want[0]
        and len(got[1]) == len(want[1])
        and all(a is not None and b is not None and bound.equal(a, b) for a, b in zip(got[1], want[1]))
    )


def _end_capture(bound, g, pool) -> None:
    """`g.capture_end()` of a capture begun into `pool`. Where it raises (the capture was invalidated, e.g. by a host
    sync inside it), torch has not yet told the caching allocator that the capture is over: the allocator would go
    on routing the side stream's allocations into the dead graph's pool, and abort the process (an internal assert) at
    the next release of any private pool, such as the timing's own (`own_pool`). That recording is ended and the
    pool released here (by the id the capture began with: torch's `g.pool()` refuses a graph whose capture failed);
    where torch had ended it (the module raised, the capture itself was valid), nothing is undone."""
    try:
        g.capture_end()
    except Exception:
        api = getattr(bound, "pool_api", None)
        if api is not None:
            _, _, end, release, current = api
            with contextlib.suppress(RuntimeError):  # "not currently recording": torch ended it
                end(current(), pool)
                release(current(), pool)
        raise


def _replayed(stats: dict | None) -> dict | None:
    graphs = (stats or {}).get("graphs")
    return graphs if isinstance(graphs, dict) and graphs.get("status") == "ok" else None


def comparable(cand: dict, eager: dict | None, compiled: dict | None) -> tuple[str, dict, dict | None, dict | None]:
    """(how the figures were taken, the candidate's, the eager reference's, the compiled reference's) that a speedup
    divides: the graph replays (`graph_timing`) where the candidate and the eager reference both have them (the
    compiled reference's too, else none of it: no ratio across the two protocols), else the eager calls'."""
    if _replayed(cand) is not None and _replayed(eager) is not None:
        return "graphs", _replayed(cand), _replayed(eager), _replayed(compiled)
    return "calls", cand, eager, compiled


def _cover_audit(cover_us: list[float], host_s: list[float]) -> dict:
    """How the covers ran: their GPU length (us; median, least), the host's time from launching a cover to the
    call's return (us; median, most), and how many calls took the host longer than their cover ran on the GPU."""
    host_us = [h * 1e6 for h in host_s]
    return {"cover_median_us": round(statistics.median(cover_us), 2), "cover_min_us": round(min(cover_us), 2),
            "host_median_us": round(statistics.median(host_us), 2), "host_max_us": round(max(host_us), 2),
            "uncovered": sum(h > c for h, c in zip(host_us, cover_us))}  # fmt: skip


class PersistingL2:
    """Undoes the persisting-L2 carveout before each flush: the persisting-cache limit back to 0 and every persisting
    line demoted to normal (cudart's cudaDeviceSetLimit and cudaCtxResetPersistingL2Cache, through ctypes).

    Guard against inputs kept in L2 across calls: a module that sets cudaLimitPersistingL2CacheSize and a stream
    access-policy window with hitProp=persisting turns its inputs' cache lines into lines the flush cannot evict, and
    reads them from L2 in every timed call (reported above the memory's peak bandwidth). With no carveout, nothing
    persists.
    The static rule `static:l2_persist` rejects the API by name; this holds for a spelled-out enum value. A no-op
    where this process has no libcudart loaded (the rule and `roofline` remain).
    """

    LIMIT_PERSISTING_L2 = 0x06  # cudaLimitPersistingL2CacheSize

    def __init__(self) -> None:
        import ctypes

        self.lib = None
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "libcudart.so" in line}
        for path in sorted(paths):
            self.lib = ctypes.CDLL(path)
            self.lib.cudaDeviceSetLimit.argtypes = [ctypes.c_int, ctypes.c_size_t]
            break

    def __call__(self) -> None:
        if self.lib is not None:  # error codes ignored: a GPU without the carveout has nothing to undo
            self.lib.cudaDeviceSetLimit(self.LIMIT_PERSISTING_L2, 0)
            self.lib.cudaCtxResetPersistingL2Cache()
            self.lib.cudaGetLastError()  # clear ours: torch's next launch check reads cudart's last error


FRESH_RESERVE_MAX = 2 * 2**30  # the most `fresh_reserve` sets aside (an output's claimed size is the module's)


def _stretched(cover: tuple[int, float], us: float) -> tuple[int, float]:
    """A launch cover (sleep cycles, its GPU microseconds) lengthened or shortened to `us`."""
    return int(cover[0] * us / cover[1]), us


def _bytes(bound, obj) -> int:
    """Bytes of the tensors in an input set or a module's output (tensors, lists, tuples and dicts of them, nested),
    read through the harness's own functions, never the objects' methods."""
    if isinstance(obj, bound.tensor_type):
        return bound.numel(obj) * bound.element_size(obj)
    if type(obj) in (list, tuple):
        return sum(_bytes(bound, o) for o in obj)
    if type(obj) is dict:
        return sum(_bytes(bound, o) for o in obj.values())
    return 0


def fresh_reserve(bound, set_bytes: int, out_bytes: int, calls: int) -> None:
    """Leave free memory in the caching allocator for `calls` fresh calls, each needing an output and its kept copy
    while the previous call's output is alive: one block, allocated and released untimed, that their allocations
    split (the allocator splits a large free block for smaller requests). Its size: what the fresh sets took (the free
    blocks the timed loop had left) and two outputs per call, plus each allocation's rounding."""
    slack = 2 * 2**20 * (2 + 2 * calls)  # large blocks are rounded up to 2 MB
    bound.reserve(min(FRESH_RESERVE_MAX, set_bytes + 2 * calls * out_bytes + slack))


def time_model(torch, bound, model, input_sets: list[list], cfg: dict | TimingConfig, capture=None,
               fresh=None) -> dict:  # fmt: skip
    """Time `model(*inputs)` over rotated `input_sets`. Returns summaries of event and wall times (ms).

    `capture(out)`, if given, is applied to the output of one timed call per input set, chosen at random after the
    call count is known (outside the timed region: after that call's end event). Its results come back under
    `captured`, in input-set order, for the `replay` guard: outputs made under timing conditions are checked too.

    `fresh()`, if given, makes input sets the module has never seen, only after the timed loop (a module cannot find
    them in memory beforehand); each is called once, timed as the loop's calls are, its output captured after the
    loop's: `fresh` in the result, for the `fresh_inputs` guard. The loop repeats a few input sets, so a module that
    keeps each input and its output, and answers an exact repeat with a copy made by its own kernel, is right and
    launches its kernels on every timed call; only a call on new values shows what its work costs.
    """
    cfg = cfg if isinstance(cfg, TimingConfig) else TimingConfig(**cfg)
    on_gpu = torch.cuda.is_available()  # else host clocks (JudgeOptions.timing_on_cpu): no cache to flush
    unpin = PersistingL2() if cfg.flush_l2 and on_gpu else None
    with torch.no_grad():
        enqueue_s = []  # the host's time to enqueue one call (no sync inside): what the cover must outlast
        for i in range(cfg.warmup):
            bound.synchronize()
            t0 = bound.perf_counter()
            model(*input_sets[i % len(input_sets)])
            enqueue_s.append(bound.perf_counter() - t0)
        bound.synchronize()
        cover = None  # (cycles, us); the first warm-up call carries one-time costs (compiles): not counted
        if cfg.launch_cover and on_gpu and getattr(bound, "sleep", None) is not None:
            cover = launch_cover_cycles(bound, enqueue_s[1:] or enqueue_s, cfg)
        # Estimate one call to size the run.
        start, end = bound.event(enable_timing=True), bound.event(enable_timing=True)
        start.record()
        out = model(*input_sets[0])
        end.record()
        out_bytes = _bytes(bound, out) if fresh is not None and on_gpu else 0  # what fresh calls' outputs need
        del out
        bound.synchronize()
        est_ms = max(bound.elapsed(start, end), 1e-3)
        n = int(min(cfg.max_calls, max(cfg.min_calls, cfg.budget_s * 1e3 / est_ms)))
        place = on_gpu and placeable(bound, input_sets, cfg.placements, cfg.place_max_bytes) is not None
        with own_pool(bound) if place and cfg.own_pool else contextlib.nullcontext():
            flush = None  # evicts the inputs from L2 before each timed call; in the timing's pool, beside its copies
            if unpin is not None:
                buffer = torch.empty(cfg.l2_flush_bytes // 4, dtype=torch.float32, device="cuda")
                flush = buffer.sum if cfg.flush_reads else buffer.zero_
            placed = placed_sets(bound, input_sets, cfg.placements, cfg.place_max_bytes) if place else None
            copies = placed or [input_sets]
            if placed:  # every copy's median from calls enough
                n = max(n, cfg.calls_per_placement * len(copies) * len(input_sets))
            # Events: calls back to back, each behind an L2 flush and the cover. A call the host may have outrun
            # (the audit) in more than 1 in 20 has its cover doubled (at least twice the host's slowest) and the
            # calls timed once more: a cover sized while the host was quiet can fall short once builds load the CPU.
            k = len(input_sets)
            checked = _checked_calls(bound, k, n)
            retimed = False
            while True:
                event_ms, cover_us, host_s, captured = _timed_calls(bound, model, copies, n, flush, unpin, cover,
                                                                    checked, capture)  # fmt: skip
                audit = _cover_audit(cover_us, host_s) if cover is not None else None
                if audit is None or audit["uncovered"] * 20 <= n or cover[1] >= cfg.cover_max_us or retimed:
                    break
                us = min(cfg.cover_max_us, max(2 * cover[1], 2 * audit["host_max_us"]))
                cover, retimed = _stretched(cover, us), True
            # The fresh sets: after the loop and its retiming, in the same pool, behind the same flush. Made, they
            # take the free blocks the loop's outputs cycled through, so each fresh call's output (and its kept
            # copy) would come from a new device allocation inside the timed call: on an H100 under a batch's
            # builds, honest 58 us kernels read 0.23-22 ms on new inputs that way (3 of 26 rejected in a pass). Free
            # memory for them is reserved first, untimed, and each call goes behind the longest cover.
            fresh_ms, sets = None, fresh() if fresh is not None else []
            if sets:
                if on_gpu:
                    fresh_reserve(bound, _bytes(bound, sets), out_bytes, len(sets))
                longest = cover and _stretched(cover, max(cover[1], cfg.cover_max_us))
                fresh_ms, _, _, kept = _timed_calls(bound, model, [sets], len(sets), flush, unpin, longest,
                                                    {j: j for j in range(len(sets))}, capture)  # fmt: skip
                captured.update({k + j: out for j, out in kept.items()})  # after the loop's sets, in order
        # Outside the pool's routing: a graph's capture allocates from a pool of its own, never reused around it.
        graphs = None
        if placed and cfg.graphs:
            graphs = graph_timing(bound, model, copies, n, flush, unpin, cover, capture, captured, sets)
        # The `side_stream` guard's figures: wall clocks against the stream's events (`wall.wall_rounds`).
        wall_ms, span_ms, wall_figures = wall_rounds(bound, model, input_sets, min(n, cfg.min_calls),
                                                     cfg.wall_control)  # fmt: skip
    events, per_copy = _placed_summary(event_ms, k, len(copies)) if placed else (summarize(event_ms), None)
    result = {"events": events, "wall": summarize(wall_ms), "span": summarize(span_ms),
              "config": asdict(cfg),
              "cover_us": round(cover[1], 1) if cover is not None else None,
              "cover_audit": audit and {**audit, "retimed": retimed},
              "placements": [round(m, 6) for m in per_copy] if placed else None,
              **wall_figures}  # fmt: skip
    if graphs is not None:
        result["graphs"] = graphs
    if fresh_ms:
        result["fresh"] = summarize(fresh_ms)
    if capture is not None:
        result["captured"] = [captured[j] for j in sorted(captured)]
    return result
