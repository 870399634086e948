"""The wall-clock rounds behind the `side_stream` guard (`wall.wall_rounds`, run by `timing.time_model`): what the
machine adds to every call is measured on a control kernel and taken out, and a round whose medians still look like
hidden work is measured again after a pause, the least hidden round kept, so contention does not reject an honest
kernel while work left on a side stream (in every call) still is."""

from types import SimpleNamespace

import pytest
import torch

from kernelzero.judge import timing, wall
from kernelzero.judge.guards import timing_violation

CFG = {"warmup": 3, "min_calls": 20, "max_calls": 20, "budget_s": 0.01, "flush_l2": False, "launch_cover": False,
       "placements": 1}  # fmt: skip
FAKE_TORCH = SimpleNamespace(cuda=SimpleNamespace(is_available=lambda: True), no_grad=torch.no_grad)


class _Device:
    """A stand-in for the worker's `Bound`: a host clock each call of the module advances by `per_call_s` (what the
    wall rounds see), each of the judge's control kernel (`zero`) by `env_s` (what the machine adds to any call), and
    stream events that see 1 us per call (the span)."""

    def __init__(self, per_call_s: float, env_s: float = 0.0):
        self.per_call_s, self.env_s, self.now = per_call_s, env_s, 0.0
        self.randbelow = lambda n: 0
        self.synchronize = lambda: None
        self.scratch = lambda n, device: torch.zeros(n, dtype=torch.uint8)

    def zero(self, cell):
        self.now += self.env_s

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
    monkeypatch.setattr(wall, "_host_sleep", seen.append)
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

    monkeypatch.setattr(wall, "_host_sleep", pause)
    stats = timing.time_model(FAKE_TORCH, device, device.model, [[torch.ones(4)]], CFG)
    assert stats["wall_rounds"] == 2 and pauses == [wall.WALL_ROUND_PAUSES_S[0]]
    assert stats["wall"]["median_ms"] == pytest.approx(0.010)
    assert timing_violation(stats, 0, 10.0) is None


def test_work_hidden_in_every_call_is_measured_three_times_and_rejected(pauses):
    device = _Device(per_call_s=1.5e-3)
    stats = timing.time_model(FAKE_TORCH, device, device.model, [[torch.ones(4)]], CFG)
    assert stats["wall_rounds"] == 3 and pauses == list(wall.WALL_ROUND_PAUSES_S)
    assert stats["wall"]["median_ms"] == pytest.approx(1.5)
    assert timing_violation(stats, 0, 10.0)[0] == "side_stream"


class _Waits:
    """A stand-in `RunQueueWait`: the device's count of the host's waits for a CPU."""

    def __init__(self, device):
        self.device = device

    def __call__(self):
        return self.device.waited

    def close(self):
        pass


@pytest.mark.parametrize(("hidden_s", "status"), [(0.0, None), (0.3e-3, "side_stream")])
def test_what_the_machine_adds_to_every_call_is_taken_out_and_work_on_a_side_stream_is_not(hidden_s, status, pauses,
                                                                                          monkeypatch):
    """On a loaded machine every call between two syncs takes longer (the host waking on a busy CPU, the GPU
    time-sliced with other processes): in the second GPU study (4 at once on an H100) `side_stream` rejected 27-88 of
    768 Coder rollouts a run, honest Triton kernels of 13 us reading 0.29 ms of wall. The judge's own tiny kernel is
    measured the same way before each call, and its excess taken out of the module's walls; work on a side stream
    adds to the module's calls only. The host's wait for a CPU is recorded beside it."""
    device = _Device(per_call_s=0.29e-3 + hidden_s, env_s=0.28e-3)
    device.waited = 0.0
    model = device.model

    def loaded(x):
        device.waited += 0.2e-3  # of the call's wall, 0.2 ms runnable and waiting for a core
        return model(x)

    monkeypatch.setattr(wall, "RunQueueWait", lambda: _Waits(device))
    stats = timing.time_model(FAKE_TORCH, device, loaded, [[torch.ones(4)]], CFG)
    assert stats["wall_control_ms"] == pytest.approx(0.279)  # 0.28 ms of wall over the control's 1 us of span
    assert stats["wall"]["median_ms"] == pytest.approx(0.011 + 1e3 * hidden_s)
    assert stats["wall_waited_ms"] == pytest.approx(0.2)
    assert (timing_violation(stats, 0, 10.0) or (None,))[0] == status
    assert stats["wall_rounds"] == (1 if status is None else 3)


def test_the_run_queue_wait_is_this_threads_and_never_goes_back():
    waited = wall.RunQueueWait()
    try:
        first = waited()
        if first is None:
            pytest.skip("no /proc/thread-self/schedstat on this kernel")
        sum(range(10**6))
        assert 0.0 <= first <= waited()
    finally:
        waited.close()
    assert waited() is None  # closed: no figure, never a stale one


def test_the_rule_is_the_guards():
    assert wall.hides_work(2.0, 0.010) and not wall.hides_work(0.080, 0.010)  # 2 ms hidden; a launch's cost
    assert not wall.hides_work(1.60, 1.50)  # a long honest kernel: the sync's cost is under its span


def test_the_guards_message_names_the_control_only_when_the_worker_sent_a_number():
    """The figures come from the candidate's worker: a forged control figure must not break the judge's message."""
    stats = {"events": {"median_ms": 0.013, "min_ms": 0.012}, "wall": {"median_ms": 0.3}, "span": {"median_ms": 0.013}}
    named = timing_violation({**stats, "wall_control_ms": 0.28}, 0, 10.0)
    assert named[0] == "side_stream" and "beyond the 0.280 ms the machine added" in named[1]
    for forged in ("0.28", float("nan"), None, [1]):
        got = timing_violation({**stats, "wall_control_ms": forged}, 0, 10.0)
        assert got[0] == "side_stream" and "beyond" not in got[1]


def test_without_the_control_the_walls_are_read_as_they_are(pauses):
    """`TimingConfig.wall_control` off (the protocol before the control, for `bench/side_stream_load.py` to compare):
    no control kernel runs, and what the machine adds stays in the walls."""
    device = _Device(per_call_s=0.29e-3, env_s=0.28e-3)
    stats = timing.time_model(FAKE_TORCH, device, device.model, [[torch.ones(4)]], {**CFG, "wall_control": False})
    assert stats["wall_control_ms"] == 0.0 and stats["wall"]["median_ms"] == pytest.approx(0.29)
    assert timing_violation(stats, 0, 10.0)[0] == "side_stream"
