"""Timing from replayed CUDA graphs (`timing.graph_timing`, `TimingConfig.graphs`), run here on CPU tensors through
the worker's real `Bound` with a stand-in graph API: a "kernel" is a closure that runs at once, or is recorded into
the graph being captured and runs at each replay, as CUDA does. What is checked is the protocol: the graphs are
captured, every copy's input sets take each other's values before any replay, each graph's output must equal the
eager output of the set it now reads, and only then are the replays timed; a module that computes while being
captured, or answers from a buffer of its own, is not timed from graphs. And which figures a speedup divides
(`timing.comparable`), and what the worker's message may carry (`messages._timing_stats`)."""

import contextlib
from types import SimpleNamespace

import pytest
import torch

from kernelzero.judge.sandbox.messages import _timing_stats
from kernelzero.judge.timing import comparable, time_model
from support import copy_clock


class _Graphs:
    """The stand-in graph API (`Bound.graph_api`'s shape) and a launcher for the test's modules."""

    def __init__(self, clock):
        self.capturing, self.replays, self.clock = None, 0, clock

    def api(self):
        fake = self

        class Graph:
            def __init__(self):
                self.work = []

            def capture_begin(self):
                fake.capturing = self

            def capture_end(self):
                fake.capturing = None

            def replay(self):
                fake.replays += 1
                for kernel in self.work:
                    kernel()

        stream = SimpleNamespace(wait_stream=lambda other: None)
        return Graph, lambda: stream, lambda s: contextlib.nullcontext(), lambda: stream

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


def _timed(module_of, sets=None, **cfg):
    clock = copy_clock()
    graphs = _Graphs(clock)
    clock.graph_api = graphs.api()
    fake_torch = SimpleNamespace(cuda=SimpleNamespace(is_available=lambda: True), no_grad=torch.no_grad)
    config = {"warmup": 2, "min_calls": 20, "max_calls": 20, "budget_s": 0.01, "flush_l2": False,
              "launch_cover": False, "graphs": True, **cfg}  # fmt: skip
    stats = time_model(fake_torch, clock, module_of(graphs), sets or _sets(), config,
                       capture=lambda out: ("tensor", [out.clone()]))  # fmt: skip
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


def test_graphs_are_off_by_default_and_need_two_input_sets_of_one_shape():
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
