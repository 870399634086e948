"""How the worker times and watches a forward. Placed copies of small inputs (`timing.placed_sets`): where a
small kernel's inputs lie moves its time, so the candidate and its reference are timed over the same fixed layouts,
and the reported median is the mean of the copies' medians (run here on CPU tensors, through the worker's real
`Bound`; the timing itself through a stand-in clock that reads which copy each call used). And the hang watch
around each checked forward."""

from types import SimpleNamespace

import pytest
import torch

from kernelzero.judge.sandbox import harness
from kernelzero.judge.sandbox.harness import Bound, ForwardWatch, LaunchCounter, checked_forward
from kernelzero.judge.timing import ALIGN, PAGE, placed_sets, time_model
from support import copy_clock


def _sets():
    g = torch.Generator().manual_seed(0)
    return [[torch.randn(64, 256, generator=g), torch.randint(0, 9, (7,), generator=g), 0.5, torch.ones(3) > 0]
            for _ in range(3)]  # fmt: skip


def test_each_copy_holds_the_same_inputs_at_its_own_phase_of_a_page():
    sets, count = _sets(), 8
    copies = placed_sets(Bound(torch), sets, count, 16 * 2**20)
    assert len(copies) == count
    pages = []
    for p, copy in enumerate(copies):
        assert copy[0][0].data_ptr() % PAGE == -(-p * PAGE // count // ALIGN) * ALIGN  # p/8 of a page in
        ptrs = []
        for placed, original in zip(copy, sets):
            assert placed[2] == 0.5  # not a tensor: passed as it is
            for x, y in ((x, y) for x, y in zip(placed, original) if isinstance(y, torch.Tensor)):
                assert x.dtype == y.dtype and x.shape == y.shape and torch.equal(x, y)
                assert x.data_ptr() % ALIGN == 0 and x.data_ptr() != y.data_ptr()
                ptrs.append((x.data_ptr(), x.data_ptr() + x.numel() * x.element_size()))
        assert all(a[1] <= b[0] for a, b in zip(ptrs, ptrs[1:]))  # back to back, none overlapping
        pages.append({a // PAGE for a, _ in ptrs} | {(b - 1) // PAGE for _, b in ptrs})
    assert all(not (a & b) for i, a in enumerate(pages) for b in pages[i + 1 :])  # no two copies share a page


@pytest.mark.parametrize("case", ["one copy", "too big", "strided", "grad", "no tensor"])
def test_inputs_that_are_not_placed(case):
    x = torch.ones(64, 64)
    sets, count, limit = [[x]], 8, 2**20
    if case == "one copy":
        count = 1
    elif case == "too big":
        limit = x.numel() * 4 - 1
    elif case == "strided":
        sets = [[x.t()]]
    elif case == "grad":
        sets = [[x.requires_grad_()]]
    else:
        sets = [[3]]
    assert placed_sets(Bound(torch), sets, count, limit) is None


def test_calls_rotate_over_the_copies_and_the_median_is_the_mean_of_theirs():
    clock, sets = copy_clock(), _sets()

    def model(x, *rest):
        clock.calls.append(x.data_ptr())
        return x

    fake_torch = SimpleNamespace(cuda=SimpleNamespace(is_available=lambda: True), no_grad=torch.no_grad)
    cfg = {"warmup": 2, "min_calls": 20, "max_calls": 20, "budget_s": 0.01, "flush_l2": False, "launch_cover": False}
    stats = time_model(fake_torch, clock, model, sets, cfg)
    timed = clock.calls[3 : 3 + 120]  # after warm-up and estimate: 5 calls x 8 copies x 3 sets
    assert stats["events"]["n"] == 120
    assert [clock.copy_of(p) for p in timed] == [i // 3 % 8 for i in range(120)]  # copy by copy, every set
    assert stats["placements"] == pytest.approx([1.0 + 0.1 * p for p in range(8)])
    assert stats["events"]["median_ms"] == pytest.approx(1.35)  # not the pooled median (1.3 or 1.4)


class _Pools:
    """A stand-in for the caching allocator's private pools (`Bound.pool_api`): records when a pool is made,
    entered, left and released, and whether allocations route to one now."""

    def __init__(self):
        self.log: list[str] = []
        self.routed: tuple | None = None

    def api(self):
        def make():
            self.log.append("make")
            return SimpleNamespace(id=(7, 1))

        def begin(device, pool_id):
            self.log.append(f"begin {device} {pool_id}")
            self.routed = pool_id

        def end(device, pool_id):
            self.log.append(f"end {device} {pool_id}")
            self.routed = None

        return make, begin, end, lambda device, pool_id: self.log.append(f"release {device} {pool_id}"), lambda: 3


@pytest.mark.parametrize("size", ["small", "large"])
def test_the_flush_buffer_copies_and_timed_calls_allocate_from_a_pool_of_their_own(size):
    """`own_pool` (the default), small inputs: the L2 flush buffer is allocated, the placed copies carved and every
    timed call run while allocations route to a new private pool; warm-up, the estimate and the wall-clock rounds run
    outside it, and the pool is left and released once the timed calls are done. Large inputs (not placed) are timed
    without a pool, their flush buffer in the process's: their outputs would be held twice."""
    clock, pools = copy_clock(), _Pools()
    clock.pool_api = pools.api()
    original = clock.empty_bytes
    arena_routed = []
    clock.empty_bytes = lambda n, device: arena_routed.append(pools.routed) or original(n, device)
    routed = []

    def model(x, *rest):
        clock.calls.append(x.data_ptr())
        routed.append(pools.routed)
        return x

    sets = _sets() if size == "small" else [[torch.ones(1024, 1024)]]
    flush_routed = []

    def empty(n, dtype, device):  # the flush buffer (on CPU here)
        flush_routed.append(pools.routed)
        return torch.empty(n, dtype=dtype)

    fake_torch = SimpleNamespace(cuda=SimpleNamespace(is_available=lambda: True), no_grad=torch.no_grad, empty=empty,
                                 float32=torch.float32)  # fmt: skip
    cfg = {"warmup": 2, "min_calls": 20, "max_calls": 20, "budget_s": 0.01, "l2_flush_bytes": 4096,
           "launch_cover": False, "place_max_bytes": 2**20}  # fmt: skip (own_pool: on by default)
    stats = time_model(fake_torch, clock, model, sets, cfg)
    n, walls = stats["events"]["n"], stats["wall"]["n"]
    assert flush_routed == ([(7, 1)] if size == "small" else [None])
    if size == "small":
        assert n == 120 and arena_routed == [(7, 1)]
        assert routed == [None] * 3 + [(7, 1)] * n + [None] * walls  # warm-up and estimate, timed, wall rounds
        assert pools.log == ["make", "begin 3 (7, 1)", "end 3 (7, 1)", "release 3 (7, 1)"]
    else:
        assert stats["placements"] is None and arena_routed == [] and pools.log == []
        assert routed == [None] * (3 + n + walls)


def test_a_timing_without_its_own_pool_and_a_bound_without_pools():
    """`own_pool` off: the placed copies and calls stay in the process's pool. A `Bound` on CPU has no pool API
    (`pool_api` None): the timing runs as it would without one (`own_pool` on, the default)."""
    clock, pools = copy_clock(), _Pools()
    clock.pool_api = pools.api()
    fake_torch = SimpleNamespace(cuda=SimpleNamespace(is_available=lambda: True), no_grad=torch.no_grad)
    cfg = {"warmup": 2, "min_calls": 20, "max_calls": 20, "budget_s": 0.01, "flush_l2": False, "launch_cover": False}
    stats = time_model(fake_torch, clock, lambda x, *rest: clock.calls.append(x.data_ptr()) or x, _sets(),
                       {**cfg, "own_pool": False})  # fmt: skip
    assert stats["events"]["n"] == 120 and pools.log == []
    assert Bound(torch).pool_api is None  # CPU: no CUDA, no private pools
    bare = copy_clock()
    stats = time_model(fake_torch, bare, lambda x, *rest: bare.calls.append(x.data_ptr()) or x, _sets(), cfg)
    assert stats["events"]["n"] == 120


@pytest.mark.parametrize("device", ["cuda", "cpu"])
def test_the_hang_watch_spans_a_checked_forward_and_its_gpu_work(device):
    """The watch begins before the forward and ends after the synchronize that waits for its GPU work (run here on
    CPU through the real `Bound`, with a recording synchronize)."""
    bound, log = Bound(torch), []
    bound.watch = SimpleNamespace(begin=lambda: log.append("begin"), end=lambda: log.append("end"))
    bound.synchronize = lambda: log.append("sync")

    def model(x):
        log.append("forward")
        return x * 2

    checked_forward(torch, bound, model, [torch.ones(3)], device)
    assert log == ["begin", "forward", *(["sync"] if device == "cuda" else []), "end"]


def test_the_hang_watch_fires_once_a_forward_outruns_it_less_its_compiles():
    """`ForwardWatch.check` on a stand-in clock: a forward's seconds, less what `excused` (Triton's compiles) grew by
    meanwhile, against the limit; it fires once, with the seconds it counted."""
    now, jit, fired = [0.0], [0.0], []
    watch = ForwardWatch(5.0, lambda: jit[0], fired.append, clock=lambda: now[0], start=False)
    assert not watch.check()  # no forward under way
    watch.begin()
    now[0], jit[0] = 7.0, 3.0  # 7 s in, 3 of them compiling: 4 s counted
    assert not watch.check() and fired == []
    now[0] = 9.5  # 6.5 s counted
    assert watch.check() and fired == [6.5]
    now[0] = 20.0
    assert not watch.check() and fired == [6.5]  # once
    stopped = ForwardWatch(5.0, lambda: 0.0, fired.append, clock=lambda: now[0], start=False)
    stopped.begin()
    stopped.stop()  # the job's run ended: nothing may be sent after its own next message
    now[0] = 100.0
    assert not stopped.check() and fired == [6.5]


def test_launches_that_compile_are_counted_as_the_watch_s_excuse(monkeypatch):
    """`LaunchCounter` wraps Triton's `run`: a launch over 10 ms (a compile, an autotune) adds its seconds to
    `jit_s`; a plain launch (tens of microseconds) adds nothing; an autotuner's run, which holds its kernel's, counts
    once (a stand-in clock that a slow launch moves 50 ms)."""
    now = [0.0]
    monkeypatch.setattr(harness.time, "perf_counter", lambda: now[0])

    class Kernel:
        def run(self, slow):
            now[0] += 0.05 if slow else 20e-6

    class Tuner:
        def run(self):
            Kernel().run(True)

    counter = LaunchCounter("")
    counter._wrap(Kernel)
    counter._wrap(Tuner, count=False)
    Kernel().run(False)
    assert counter.jit_s == 0.0
    Kernel().run(True)
    assert counter.jit_s == pytest.approx(0.05)
    Tuner().run()
    assert counter.jit_s == pytest.approx(0.10)  # not 0.15: the nested launch counted in the outer run only


@pytest.mark.parametrize("reads", [False, True])
def test_the_l2_flush_before_each_timed_call_writes_zeros_or_reads(reads):
    """Before every timed call the flush buffer is summed (`flush_reads`, the default: a read leaves L2 holding clean
    lines, none to write back during the next call) or written with zeros (every figure before 6fa72e6)."""
    clock, sets, log = copy_clock(), _sets(), []

    class Buffer:
        def zero_(self):
            log.append("zero")

        def sum(self):
            log.append("sum")

    def model(x, *rest):
        clock.calls.append(x.data_ptr())
        log.append("call")
        return x

    fake_torch = SimpleNamespace(cuda=SimpleNamespace(is_available=lambda: True), no_grad=torch.no_grad,
                                 empty=lambda *a, **k: Buffer(), float32=torch.float32)  # fmt: skip
    cfg = {"warmup": 2, "min_calls": 20, "max_calls": 20, "budget_s": 0.01, "launch_cover": False,
           "flush_reads": reads}  # fmt: skip
    time_model(fake_torch, clock, model, sets, cfg)
    timed = log[log.index("zero" if not reads else "sum") :]
    flushes = [e for e in timed if e != "call"]
    assert set(flushes) == {"sum" if reads else "zero"} and len(flushes) == 120  # 5 calls x 8 copies x 3 sets
    assert timed[: 2 * 120 : 2] == flushes and timed[1 : 2 * 120 : 2] == ["call"] * 120  # one before each call
