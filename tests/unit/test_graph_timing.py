"""Timing from replayed CUDA graphs (`timing.graph_timing`, `TimingConfig.graphs`), run here on CPU tensors through
the worker's real `Bound` with a stand-in graph API: a "kernel" is a closure that runs at once, or is recorded into
the graph being captured and runs at each replay, as CUDA does. What is checked is the protocol: the graphs are
captured, every copy's input sets take each other's values before any replay, each graph's output must equal the
eager output of the set it now reads, and only then are the replays timed; a module that computes while being
captured, or answers from a buffer of its own, is not timed from graphs. And which figures a speedup divides
(`timing.comparable`), and what the worker's message may carry (`messages._timing_stats`)."""

import contextlib
import itertools
from types import SimpleNamespace

import pytest
import torch

from kernelzero.judge import JudgeOptions
from kernelzero.judge.sandbox.messages import _timing_stats
from kernelzero.judge.timing import TimingConfig, comparable, time_model
from support import copy_clock


class _Allocator:
    """The caching allocator's private pools as torch keeps them (`Bound.pool_api`'s shape): the pools being
    recorded into, each from its begin to its end, and the pools released; releasing one while any recording is
    still underway is torch's internal assert (`captures_underway.empty()`), which aborts the process."""

    def __init__(self):
        self.recording, self.released, self.made = [], [], 0

    def api(self):
        def make():
            self.made += 1
            return SimpleNamespace(id=("own", self.made))

        return make, self.begin, self.end, self.release, lambda: 0

    def begin(self, device, pool):
        self.recording.append(pool)

    def end(self, device, pool):
        if pool not in self.recording:
            raise RuntimeError("endAllocatePool: not currently recording to mempool_id")
        self.recording.remove(pool)

    def release(self, device, pool):
        assert not self.recording, "captures_underway.empty() INTERNAL ASSERT FAILED"
        self.released.append(pool)


class _Graphs:
    """The stand-in graph API (`Bound.graph_api`'s shape) and a launcher for the test's modules."""

    def __init__(self, clock):
        self.capturing, self.replays, self.clock, self.allocator = None, 0, clock, _Allocator()

    def api(self):
        fake = self

        class Graph:
            def __init__(self):
                self.work, self.id, self.ended = [], None, False

            def capture_begin(self, pool=None):
                fake.capturing, self.invalid, self.id = self, False, pool or ("graph", id(self))
                fake.allocator.begin(0, self.id)

            def capture_end(self):  # as torch's: raises before telling the allocator where the capture was invalid
                fake.capturing = None
                if self.invalid:
                    raise RuntimeError("operation failed due to a previous error during capture")
                fake.allocator.end(0, self.id)
                self.ended = True

            def pool(self):  # as torch's: only after a successful capture
                if not self.ended:
                    raise RuntimeError("Called CUDAGraph::pool() without a preceding successful capture.")
                return self.id

            def replay(self):
                fake.replays += 1
                for kernel in self.work:
                    kernel()

        stream = SimpleNamespace(wait_stream=lambda other: None)
        handles = itertools.count()
        pool_handle = lambda: ("graph", next(handles))  # noqa: E731
        return Graph, lambda: stream, lambda s: contextlib.nullcontext(), lambda: stream, pool_handle

    def launch(self, x, kernel):
        """A kernel reading `x`: runs now, or is recorded into the graph being captured. Each run is one call the
        stand-in clock times (it reads which copy `x` belongs to)."""

        def run():
            self.clock.calls.append(x.data_ptr())
            kernel()

        if self.capturing is not None:
            self.capturing.work.append(run)
        else:
            run()


def _sets(k=3, shapes=None):
    g = torch.Generator().manual_seed(0)
    shape = (lambda j: shapes[j]) if shapes else (lambda j: (64, 256))
    return [[torch.randn(*shape(j), generator=g), torch.randn(*shape(j), generator=g)] for j in range(k)]


def _timed(module_of, sets=None, pools=False, fresh=None, **cfg):
    clock = copy_clock()
    timed = clock.elapsed  # a call that ran only a copy of a kept output (marked "copy") takes 0.05 ms
    clock.elapsed = lambda start, end: 0.05 if clock.calls[end.call - 1] == "copy" else timed(start, end)
    graphs = _Graphs(clock)
    clock.graph_api = graphs.api()
    if pools:  # the timing's own pool and each graph's go through the stand-in allocator
        clock.pool_api = graphs.allocator.api()
    fake_torch = SimpleNamespace(cuda=SimpleNamespace(is_available=lambda: True), no_grad=torch.no_grad)
    config = {"warmup": 2, "min_calls": 20, "max_calls": 20, "budget_s": 0.01, "flush_l2": False,
              "launch_cover": False, "graphs": True, **cfg}  # fmt: skip
    stats = time_model(fake_torch, clock, module_of(graphs), sets or _sets(), config,
                       capture=lambda out: ("tensor", [out.clone()]), fresh=fresh)  # fmt: skip
    return stats, graphs


def honest(graphs):
    def forward(x, y):
        out = torch.empty_like(x)
        graphs.launch(x, lambda: torch.sub(x, y, out=out).abs_())
        return out

    return forward


def test_an_honest_module_is_timed_from_its_graphs_after_they_give_the_eager_outputs():
    stats, graphs = _timed(honest)
    g = stats["graphs"]
    assert g["status"] == "ok"
    assert graphs.replays == 24 + 120  # one check of each of 8 copies x 3 sets, then the timed replays
    assert g["events"]["n"] == 120 and g["placements"] == pytest.approx([1.0 + 0.1 * p for p in range(8)])
    assert g["events"]["median_ms"] == pytest.approx(1.35)  # the copies' medians' mean, as the eager figure
    assert stats["events"]["median_ms"] == pytest.approx(1.35)  # the eager figure is still reported


def test_graphs_are_on_by_default_can_be_turned_off_and_need_two_input_sets_of_one_shape():
    assert TimingConfig().graphs and JudgeOptions().timing_graphs
    assert JudgeOptions(timing_graphs=False).timing_config()["graphs"] is False
    stats, graphs = _timed(honest, graphs=False)
    assert "graphs" not in stats and graphs.replays == 0
    assert _timed(honest, sets=_sets(k=1))[0]["graphs"]["status"] == "unavailable"
    other = _sets(shapes=[(64, 256), (64, 256), (32, 512)])
    stats, graphs = _timed(honest, sets=other)
    assert stats["graphs"]["status"] == "sets" and graphs.replays == 0


def test_a_module_that_computes_while_captured_is_not_timed_from_graphs():
    """It computes eagerly whatever happens (nothing is recorded into a graph): its graphs replay nothing, and their
    outputs are those of the values the inputs held at the capture, not the values they hold at the replay."""

    def module(graphs):
        def forward(x, y):
            graphs.clock.calls.append(x.data_ptr())  # a call the stand-in clock times
            return (x - y).abs()

        return forward

    stats, graphs = _timed(module)
    assert stats["graphs"] == {"status": "differs"}
    assert stats["events"]["n"] == 120  # timed eagerly as ever


def test_a_module_that_answers_a_capture_from_its_own_buffer_is_not_timed_from_graphs():
    """Eager calls fill a buffer per input address (right answers, checked); the capture returns that buffer and
    records nothing. The replay leaves in it the answer for the values the inputs held before the swap."""

    def module(graphs):
        kept = {}

        def forward(x, y):
            graphs.clock.calls.append(x.data_ptr())
            if graphs.capturing is None:
                kept[x.data_ptr()] = (x - y).abs()
            return kept[x.data_ptr()]

        return forward

    assert _timed(module)[0]["graphs"] == {"status": "differs"}


def _honest_eagerly(record):
    """A module honest when called eagerly (|x - y| into a new tensor); while captured, `record(graphs, x, y, out)`
    records what its graph will do instead."""

    def module(graphs):
        def forward(x, y):
            out = torch.empty_like(x)
            if graphs.capturing is None:
                graphs.launch(x, lambda: torch.sub(x, y, out=out).abs_())
            else:
                record(graphs, x, y, out)
            return out

        return forward

    return module


def test_a_graph_that_computes_on_its_first_replay_only_is_not_timed_from_graphs():
    """Honest eagerly; what it records while captured computes once (the checked replay) and leaves its output
    as it is at every later replay. The timed replays read values moved on since that check, and one of them per set
    is checked: its stale output gives it away."""

    def once(graphs, x, y, out):
        ran = []

        def kernel():
            if not ran:
                torch.sub(x, y, out=out).abs_()
                ran.append(True)

        graphs.launch(x, kernel)

    stats, graphs = _timed(_honest_eagerly(once))
    assert stats["graphs"] == {"status": "differs"} and graphs.replays == 24 + 120
    assert stats["events"]["n"] == 120


def _fresh():
    return _sets(k=5)[3:]  # values the loop never had, drawn as its sets are


def test_a_graph_that_copies_outputs_it_kept_for_repeated_values_is_not_timed_from_graphs():
    """Honest eagerly; what it records while captured compares the inputs with the values it last computed on and,
    where equal, copies the output it kept (a fast call), else computes. Every replay the protocol checks is right:
    the checked ones follow a change of values or return what was computed for them. Replayed on values never seen
    (the timing's fresh sets, written into its inputs), it computes, many times slower than its timed replays."""

    def copies_kept(graphs, x, y, out):
        seen = []

        def kernel():
            if seen and torch.equal(seen[0], x) and torch.equal(seen[1], y):
                graphs.clock.calls.append("copy")  # `out` still holds the kept answer
                return
            graphs.clock.calls.append(x.data_ptr())
            torch.sub(x, y, out=out).abs_()
            seen[:] = [x.clone(), y.clone()]

        graphs.capturing.work.append(kernel)

    module = _honest_eagerly(copies_kept)
    stats, _ = _timed(module, fresh=_fresh)
    assert stats["graphs"]["status"] == "fresh" and stats["graphs"]["median_ms"] == pytest.approx(0.05)
    assert stats["graphs"]["fresh_ms"] == pytest.approx(1.0)  # copy 0's inputs: 1 ms on the stand-in clock
    assert _timed(module)[0]["graphs"]["status"] == "ok"  # without fresh sets its replays read as 50 us
    honest_stats, graphs = _timed(honest, fresh=_fresh)
    assert honest_stats["graphs"]["status"] == "ok" and graphs.replays == 24 + 120 + 2
    assert [len(c[1]) for c in honest_stats["captured"]] == [1] * 5  # 3 loop sets, then the 2 fresh ones


def test_a_module_that_cannot_be_captured_is_timed_eagerly_only():
    def module(graphs):
        def forward(x, y):
            if graphs.capturing is not None:
                raise RuntimeError("operation not permitted when stream is capturing")
            graphs.clock.calls.append(x.data_ptr())
            return (x - y).abs()

        return forward

    stats, _ = _timed(module)
    assert stats["graphs"]["status"] == "uncapturable" and "not permitted" in stats["graphs"]["why"]
    assert stats["events"]["n"] == 120


def test_a_capture_torch_could_not_end_is_ended_with_the_allocator_before_any_pool_is_released():
    """An invalidated capture (here a host sync inside it) makes torch's `capture_end` raise before it tells the
    caching allocator: left so, the next release of a private pool (the next timing's own, at its end) aborts the
    process (as on an H100). The graph's recording is ended and its pool released; a valid capture's is left to
    torch."""

    def module(graphs):
        def forward(x, y):
            if graphs.capturing is not None:
                graphs.capturing.invalid = True  # as CUDA marks a capture after an illegal call
                raise RuntimeError("operation not permitted when stream is capturing")
            graphs.clock.calls.append(x.data_ptr())
            return (x - y).abs()

        return forward

    stats, graphs = _timed(module, pools=True)
    assert stats["graphs"]["status"] == "uncapturable" and stats["events"]["n"] == 120
    assert graphs.allocator.recording == []
    assert [p[0] for p in graphs.allocator.released] == ["own", "graph"]  # the timing's own, then the graph's
    stats, graphs = _timed(honest, pools=True)
    assert stats["graphs"]["status"] == "ok" and graphs.allocator.recording == []
    assert [p[0] for p in graphs.allocator.released] == ["own"]  # 24 valid captures: torch releases their pools


def _stats(graphs: dict | None = None, median=1.0):
    s = {k: {"median_ms": median, "iqr_ms": 0.1, "min_ms": 0.9, "n": 20} for k in ("events", "wall")}
    return s if graphs is None else {**s, "graphs": graphs}


def test_a_speedup_divides_graph_figures_only_where_both_sides_have_them():
    ok = {"status": "ok", "events": _stats(median=0.5)["events"]}
    cand, eager, compiled = _stats(ok), _stats(ok), _stats({"status": "uncapturable", "why": "x"})
    by, c, e, k = comparable(cand, eager, compiled)
    assert by == "graphs" and c is ok and e is ok and k is None  # no ratio across the two protocols
    by, c, e, k = comparable(cand, _stats({"status": "differs"}), _stats())
    assert by == "calls" and c is cand and e["graphs"]["status"] == "differs"
    assert comparable(_stats(), eager, None)[0] == "calls"


def test_the_worker_s_timing_message_may_carry_graph_figures_only_well_formed():
    assert _timing_stats(_stats({"status": "ok", "events": _stats()["events"]}))
    assert _timing_stats(_stats({"status": "differs"}))
    assert not _timing_stats(_stats({"status": "ok"}))  # figures missing
    assert not _timing_stats(_stats({"status": "ok", "events": {"median_ms": float("nan"), "iqr_ms": 0.1,
                                                                "min_ms": 0.1, "n": 3}}))  # fmt: skip
    assert not _timing_stats(_stats("ok"))  # not a dict
