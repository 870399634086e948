"""The launch cover of `timing.time_model`: a sleep kernel sized from the host's enqueue time goes before each timed
call's start event, so a launch-bound call's events span its GPU work (the GPU side runs on the H200 only: here a
recording stand-in for the device shows what is queued, in which order, and how the cover is sized)."""

import time
from types import SimpleNamespace

import pytest
import torch

from kernelzero.judge import wall
from kernelzero.judge.core import Judge
from kernelzero.judge.timing import TimingConfig, launch_cover_cycles, time_model
from kernelzero.judge.verdict import Verdict
from kernelzero.trainers.coder_rewards import speedup_value


class _Device:
    """A stand-in for the worker's `Bound` on a GPU: events, sleeps and calls recorded in queue order; the sleep
    runs at 2,000 cycles per microsecond."""

    def __init__(self):
        self.queue: list[tuple] = []
        self.perf_counter = time.perf_counter
        self.randbelow = lambda n: 0
        self.synchronize = lambda: None

    def event(self, enable_timing=True):
        device = self

        class _Event:
            def record(self):
                device.queue.append(("event", self))
                self.at = len(device.queue)

        return _Event()

    def elapsed(self, start, end):
        between = self.queue[start.at : end.at - 1]
        return sum(c / 2000 / 1e3 for kind, c in between if kind == "sleep") or 0.001  # ms

    def sleep(self, cycles):
        self.queue.append(("sleep", cycles))

    def scratch(self, n, device):
        return torch.zeros(n, dtype=torch.uint8)

    def zero(self, cell):  # the wall rounds' control kernel
        self.queue.append(("control", None))


def test_the_cover_outlasts_three_slowest_enqueues_within_its_bounds():
    cfg = TimingConfig()
    assert launch_cover_cycles(_Device(), [30e-6, 50e-6], cfg) == (300_000, 150.0)  # 3 x 50 us at 2,000 cycles/us
    assert launch_cover_cycles(_Device(), [1e-6], cfg)[1] == cfg.cover_min_us
    assert launch_cover_cycles(_Device(), [0.5], cfg)[1] == cfg.cover_max_us


def test_the_first_launchs_module_load_is_not_read_as_a_slow_clock():
    """CUDA loads a kernel's module at its first launch (~0.5 ms of host time): measured inside the events it read as
    a 0.3 GHz clock on the H200, and the cover came out 3x short."""
    device = _Device()
    plain = device.elapsed

    def elapsed(start, end):  # the first sleep measured carries the module's load
        first = not any(kind == "sleep" for kind, _ in device.queue[: start.at - 1])
        return plain(start, end) + (0.5 if first else 0.0)

    device.elapsed = elapsed
    assert launch_cover_cycles(device, [50e-6], TimingConfig()) == (300_000, 150.0)


@pytest.mark.parametrize("cover", [True, False])
def test_each_timed_call_is_queued_behind_the_cover(cover):
    device = _Device()
    fake_torch = SimpleNamespace(cuda=SimpleNamespace(is_available=lambda: True), no_grad=torch.no_grad)

    def model(x):
        device.queue.append(("call", None))
        return x

    cfg = {"warmup": 3, "min_calls": 20, "max_calls": 20, "budget_s": 0.01, "flush_l2": False, "launch_cover": cover,
           "placements": 1}
    stats = time_model(fake_torch, device, model, [[torch.ones(4)]], cfg)
    kinds = [kind for kind, _ in device.queue]
    timed = kinds[kinds.index("call", 3) :]  # after the 3 warm-up calls: the estimate, the 20 timed, the wall ones
    starts = [i for i in range(len(kinds) - 1) if kinds[i] == "event" and kinds[i + 1] == "call"]
    assert len(starts) >= 21 and len(timed) > 20
    if cover:
        assert all(kinds[i - 1] == "sleep" for i in starts[1:21])  # every timed call, not the sizing estimate
        assert {c for kind, c in device.queue if kind == "sleep"} - {1000, 200_000} == {int(stats["cover_us"] * 2000)}
        assert stats["cover_us"] >= TimingConfig.cover_min_us
    else:
        assert "sleep" not in kinds and stats["cover_us"] is None


@pytest.mark.parametrize(("slow_s", "cover_us", "uncovered", "retimed"),
                         [(None, 30.0, 0, False), (1e-3, 2000.0, 0, True), (5e-3, 2000.0, 20, True)])
def test_the_cover_audit_counts_calls_the_host_outran_and_a_short_cover_is_retimed(slow_s, cover_us, uncovered,
                                                                                   retimed, monkeypatch):
    """Each cover's GPU length against the host's time from its launch to the call's return: a call that took the
    host longer than its cover ran is counted (the GPU may have reached it before it was all enqueued). Over 1 in
    20 such calls, the calls are timed once more behind a cover of twice the host's slowest (at most cover_max_us).
    The host clock here is a counter the model advances: 10 us a call, `slow_s` a call after warm-up and estimate
    (the cover is sized at 3 x 10 us)."""
    monkeypatch.setattr(wall, "_host_sleep", lambda s: None)  # the wall rounds' pauses
    device = _Device()
    device.now, calls = 0.0, []
    device.perf_counter = lambda: device.now
    fake_torch = SimpleNamespace(cuda=SimpleNamespace(is_available=lambda: True), no_grad=torch.no_grad)

    def model(x):
        calls.append(1)
        device.now += slow_s if slow_s is not None and len(calls) > 4 else 10e-6
        device.queue.append(("call", None))
        return x

    cfg = {"warmup": 3, "min_calls": 20, "max_calls": 20, "budget_s": 0.01, "flush_l2": False, "placements": 1}
    stats = time_model(fake_torch, device, model, [[torch.ones(4)]], cfg)
    audit = stats["cover_audit"]
    assert (audit["cover_min_us"], audit["uncovered"], audit["retimed"], stats["cover_us"]) == (
        cover_us, uncovered, retimed, cover_us)
    # A slow host's calls also read as hidden work in the wall rounds (1-5 ms of wall over no span): three rounds.
    assert stats["wall_rounds"] == (1 if slow_s is None else 3)
    # warm-up, estimate, timed (twice if retimed), wall rounds
    assert len(calls) == 3 + 1 + 20 * (1 + retimed) + 20 * stats["wall_rounds"]
    assert audit["host_median_us"] == pytest.approx(10.0 if slow_s is None else slow_s * 1e6)


def test_fresh_calls_follow_a_reserve_of_free_memory_and_go_behind_the_longest_cover():
    """Made after the loop, the fresh sets take the free blocks its outputs cycled through: unless memory is set aside
    first, each fresh call's output comes from a new device allocation inside its events (an honest 58 us kernel read
    0.23-22 ms on an H100 under load). The reserve goes before the first fresh call, untimed, sized from the fresh
    sets and two outputs per call; the fresh calls wait behind a cover of cover_max_us."""
    device = _Device()
    device.tensor_type, device.numel, device.element_size = torch.Tensor, torch.Tensor.numel, torch.Tensor.element_size
    device.reserve = lambda n: device.queue.append(("reserve", n))
    fake_torch = SimpleNamespace(cuda=SimpleNamespace(is_available=lambda: True), no_grad=torch.no_grad)

    def model(x):
        device.queue.append(("call", None))
        return (x.repeat(2), {"also": x[:1]})  # 8 + 1 floats: 36 bytes

    cfg = {"warmup": 3, "min_calls": 20, "max_calls": 20, "budget_s": 0.01, "flush_l2": False, "placements": 1}
    stats = time_model(fake_torch, device, model, [[torch.full((4,), 2.0)]], cfg, fresh=lambda: [[torch.ones(4)]] * 2)
    assert stats["fresh"]["n"] == 2
    kinds = [kind for kind, _ in device.queue]
    at = kinds.index("reserve")
    reserved = [arg for kind, arg in device.queue if kind == "reserve"]
    assert reserved == [2 * 16 + 2 * 2 * 36 + 2 * 2**20 * 6]  # 2 sets of 16 bytes, 2 outputs a call, rounding
    fresh_calls = [i for i in range(at, len(kinds)) if kinds[i] == "call"][:2]
    assert stats["cover_us"] < TimingConfig.cover_max_us
    for i in fresh_calls:  # sleep, start event, call; 2,000 cycles a microsecond
        assert device.queue[i - 2] == ("sleep", pytest.approx(TimingConfig.cover_max_us * 2000, rel=1e-4))
    timed = [i for i in range(at) if kinds[i] == "call"]
    assert len(timed) == 3 + 1 + 20 and fresh_calls[0] > at  # warm-up, estimate, loop; then the reserve


def _timed(cand_ms: float, cand_iqr: float, ref_ms: float, ref_iqr: float):
    v = Verdict(status="ok", correct=True)
    Judge._attach_timing(v, {"events": {"median_ms": cand_ms, "iqr_ms": cand_iqr, "min_ms": cand_ms, "n": 20}},
                         SimpleNamespace(eager={"events": {"median_ms": ref_ms, "iqr_ms": ref_iqr, "min_ms": ref_ms,
                                                           "n": 20}}, compiled=None))  # fmt: skip
    return v


def test_a_speedup_inside_its_own_spread_is_flagged_and_rewarded_as_eager():
    noisy = _timed(0.0197, 0.0074, 0.0106, 0.0010)  # the H200's scaled ReLU, first judging: 0.54x, IQR 38% + 9%
    assert noisy.speed_noise == round(0.0074 / 0.0197 + 0.0010 / 0.0106, 4)
    assert noisy.speedup_eager < 0.6 and not noisy.speed_noisy  # |ln 0.54| = 0.62 > 0.47: a real slowdown
    close = _timed(0.0095, 0.0030, 0.0106, 0.0010)  # 1.12x with 32% + 9% of spread
    assert close.speed_noisy and speedup_value(close) == 1.0
    clear = _timed(0.0065, 0.0005, 0.0106, 0.0010)  # 1.63x, 8% + 9%
    assert not clear.speed_noisy and speedup_value(clear) == clear.speedup_eager
