"""The wall-clock rounds of `timing.time_model` behind the `side_stream` guard: a round whose medians look like hidden
work is measured again after a pause, and the least hidden round kept, so a moment of GPU or host contention does
not reject an honest kernel while work left on a side stream (in every call) still is."""

from types import SimpleNamespace

import pytest
import torch

from kernelzero.judge import timing
from kernelzero.judge.guards import timing_violation

CFG = {"warmup": 3, "min_calls": 20, "max_calls": 20, "budget_s": 0.01, "flush_l2": False, "launch_cover": False,
       "placements": 1}  # fmt: skip
FAKE_TORCH = SimpleNamespace(cuda=SimpleNamespace(is_available=lambda: True), no_grad=torch.no_grad)


class _Device:
    """A stand-in for the worker's `Bound`: a host clock each call advances by `per_call_s` (what the wall rounds
    see), and stream events that see 1 us per call (the span)."""

    def __init__(self, per_call_s: float):
        self.per_call_s, self.now = per_call_s, 0.0
        self.randbelow = lambda n: 0
        self.synchronize = lambda: None

    def perf_counter(self) -> float:
        return self.now

    def event(self, enable_timing=True):
        return SimpleNamespace(record=lambda: None)

    def elapsed(self, start, end) -> float:
        return 0.001  # ms

    def model(self, x):
        self.now += self.per_call_s
        return x


@pytest.fixture
def pauses(monkeypatch):
    seen: list[float] = []
    monkeypatch.setattr(timing, "_host_sleep", seen.append)
    return seen


def test_a_quiet_honest_call_is_measured_once(pauses):
    device = _Device(per_call_s=10e-6)
    stats = timing.time_model(FAKE_TORCH, device, device.model, [[torch.ones(4)]], CFG)
    assert stats["wall_rounds"] == 1 and pauses == []
    assert stats["wall"]["median_ms"] == pytest.approx(0.010)
    assert timing_violation(stats, 0, 10.0) is None


def test_a_call_slowed_for_a_moment_is_measured_again_and_passes(pauses, monkeypatch):
    device = _Device(per_call_s=1.5e-3)  # 1.5 ms of wall over 1 us of span: the H100's loaded batch

    def pause(s: float) -> None:  # the contention ends during the first pause
        pauses.append(s)
        device.per_call_s = 10e-6

    monkeypatch.setattr(timing, "_host_sleep", pause)
    stats = timing.time_model(FAKE_TORCH, device, device.model, [[torch.ones(4)]], CFG)
    assert stats["wall_rounds"] == 2 and pauses == [timing.WALL_ROUND_PAUSES_S[0]]
    assert stats["wall"]["median_ms"] == pytest.approx(0.010)
    assert timing_violation(stats, 0, 10.0) is None


def test_work_hidden_in_every_call_is_measured_three_times_and_rejected(pauses):
    device = _Device(per_call_s=1.5e-3)
    stats = timing.time_model(FAKE_TORCH, device, device.model, [[torch.ones(4)]], CFG)
    assert stats["wall_rounds"] == 3 and pauses == list(timing.WALL_ROUND_PAUSES_S)
    assert stats["wall"]["median_ms"] == pytest.approx(1.5)
    assert timing_violation(stats, 0, 10.0)[0] == "side_stream"


def test_the_rule_is_the_guards():
    assert timing.hides_work(2.0, 0.010) and not timing.hides_work(0.080, 0.010)  # 2 ms hidden; a launch's cost
    assert not timing.hides_work(1.60, 1.50)  # a long honest kernel: the sync's cost is under its span
