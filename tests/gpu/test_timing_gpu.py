"""The launch cover on a real GPU (`timing.time_model`): the sleep kernel is calibrated against the GPU's clock, sized
from the host's enqueue time and reported; turned off, it is absent; a host slower than its cover is caught by the
audit and the calls are timed again behind a longer one. (Whether it steadies launch-bound figures is measured in
bench/timing_stability.py and bench/timing_probe.py, not asserted here.)"""

import time

import pytest

from kernelzero.judge.sandbox.harness import Bound
from kernelzero.judge.timing import TimingConfig, launch_cover_cycles, own_pool, time_model

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def torch():
    import torch

    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    return torch


def test_the_sleep_is_calibrated_to_the_gpus_clock(torch):
    bound = Bound(torch)
    cycles, us = launch_cover_cycles(bound, [50e-6], TimingConfig())
    assert us == 150.0
    assert 150 * 500 < cycles < 150 * 5000  # a GPU clock between 0.5 and 5 GHz


@pytest.mark.parametrize("cover", [True, False])
def test_a_timed_module_reports_its_cover(torch, cover):
    bound = Bound(torch)
    x = torch.randn(1 << 16, device="cuda")
    cfg = {"warmup": 3, "min_calls": 20, "max_calls": 20, "budget_s": 0.01, "launch_cover": cover, "placements": 1}
    stats = time_model(torch, bound, torch.nn.ReLU(), [[x]], cfg)
    assert stats["events"]["n"] == 20 and stats["events"]["median_ms"] > 0
    if cover:
        assert TimingConfig.cover_min_us <= stats["cover_us"] <= TimingConfig.cover_max_us
    else:
        assert stats["cover_us"] is None


def test_a_host_that_outruns_its_cover_is_retimed_behind_a_longer_one(torch):
    """After warm-up and the estimate (calls 1-4, a few microseconds of host time each: the cover is sized from
    them), every call sleeps 300 us on the host before it launches: each outlasts its cover, the audit sees it, and
    the calls are timed again behind a cover of at least twice the host's slowest call."""
    bound = Bound(torch)
    x = torch.randn(1 << 16, device="cuda")
    calls = []

    def slow_host(t):
        calls.append(1)
        if len(calls) > 4:
            time.sleep(300e-6)
        return t * 2

    cfg = {"warmup": 3, "min_calls": 20, "max_calls": 20, "budget_s": 0.01, "placements": 1}
    stats = time_model(torch, bound, slow_host, [[x]], cfg)
    audit = stats["cover_audit"]
    assert audit["retimed"] and audit["host_max_us"] >= 300 and stats["cover_us"] >= 600
    assert audit["cover_min_us"] > 0 and len(calls) == 4 + 2 * 20 + 20  # warm-up+estimate, timed twice, wall


def test_small_inputs_are_timed_from_placed_copies_and_large_ones_where_they_lie(torch):
    """Inputs under `place_max_bytes` are copied to 8 fixed layouts and the calls rotate over them (each copy's
    median reported, the mean of them as the median); larger inputs are timed as they are."""
    bound, seen = Bound(torch), set()

    def model(x):
        seen.add(x.data_ptr())
        return x * 2

    small = [[torch.randn(64, 256, device="cuda")] for _ in range(2)]
    cfg = {"warmup": 2, "min_calls": 20, "max_calls": 20, "budget_s": 0.01}
    stats = time_model(torch, bound, model, small, cfg)
    assert len(stats["placements"]) == 8 and stats["events"]["n"] == 5 * 8 * 2
    assert stats["events"]["median_ms"] == pytest.approx(sum(stats["placements"]) / 8, abs=1e-5)
    assert len(seen) == 2 + 8 * 2  # the originals (warm-up, estimate, wall) and every placed copy
    seen.clear()
    large = [[torch.randn(8 << 20, device="cuda")]]  # 32 MB, over the 16 MB bound
    stats = time_model(torch, bound, model, large, cfg)
    assert stats["placements"] is None and stats["events"]["n"] == 20 and len(seen) == 1


def test_a_timing_s_own_pool_is_a_private_pool_and_is_released(torch):
    """Inside `own_pool` a tensor lies in a segment of a private pool (not the process's pool, id (0, 0)); once the
    tensor and the pool are gone, the memory reserved is back where it was."""
    bound = Bound(torch)
    assert bound.pool_api is not None
    torch.cuda.synchronize()
    before = torch.cuda.memory_reserved()
    with own_pool(bound):
        x = torch.empty(3 << 20, dtype=torch.uint8, device="cuda")
    y = torch.empty(3 << 20, dtype=torch.uint8, device="cuda")
    segments = {s["address"]: s for s in torch.cuda.memory_snapshot()}
    pool_of = {t: next(tuple(s["segment_pool_id"]) for a, s in segments.items() if a <= p < a + s["total_size"])
               for t, p in (("x", x.data_ptr()), ("y", y.data_ptr()))}  # fmt: skip
    assert pool_of["x"] != (0, 0) and pool_of["y"] == (0, 0)
    del x, y
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    assert torch.cuda.memory_reserved() <= before


def test_graph_timing_on_a_gpu_and_a_module_that_cannot_be_captured(torch):
    """An eager two-kernel module is timed from its replayed graphs as well (its outputs after the input sets'
    swap equal the eager ones); a module that syncs with the host inside its forward cannot be captured, and one that
    launches on the legacy default stream (as a CUDA extension's `k<<<g, b>>>` built as written does) runs there
    outside the capture (torch's side stream does not wait on it), so its graph is empty and its replayed output
    stale: both are timed eagerly only, and the process times graphs again after them, its own pools released
    without an abort (torch's `capture_end` leaves a failed capture's allocator recording open: `_end_capture`)."""
    bound = Bound(torch)
    sets = [[torch.randn(64, 256, device="cuda"), torch.randn(64, 256, device="cuda")] for _ in range(3)]
    cfg = {"warmup": 3, "min_calls": 20, "max_calls": 40, "budget_s": 0.01, "graphs": True}
    keep = lambda out: ("tensor", [out.clone()])  # noqa: E731

    def absdiff(x, y):
        return (x - y).abs()

    def syncs(x, y):
        d = (x - y).abs()
        return d * float(d.sum().item() > 0)

    def legacy_stream(x, y):
        with torch.cuda.stream(torch.cuda.default_stream()):
            return (x - y).abs()

    stats = time_model(torch, bound, absdiff, sets, cfg, capture=keep)
    assert stats["graphs"]["status"] == "ok", stats["graphs"]
    assert 0 < stats["graphs"]["events"]["median_ms"] <= stats["events"]["median_ms"] * 1.5
    stats = time_model(torch, bound, syncs, sets, cfg, capture=keep)
    assert stats["graphs"]["status"] == "uncapturable" and stats["events"]["n"] >= 20
    assert torch.cuda.current_stream() == torch.cuda.default_stream()  # the failed capture's stream is not left
    assert time_model(torch, bound, absdiff, sets, cfg, capture=keep)["graphs"]["status"] == "ok"
    stats = time_model(torch, bound, legacy_stream, sets, cfg, capture=keep)
    assert stats["graphs"]["status"] == "differs" and stats["events"]["n"] >= 20, stats["graphs"]
    assert torch.cuda.current_stream() == torch.cuda.default_stream()
    assert time_model(torch, bound, absdiff, sets, cfg, capture=keep)["graphs"]["status"] == "ok"
