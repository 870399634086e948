"""WarmSandboxes fills itself in the background: building one never waits for a worker's start, a job that comes
before the workers takes a cold sandbox, the idle list never holds more than `size`, and closing it mid-fill keeps
nothing running. A stand-in Sandbox class (no processes) whose spawn blocks until the test lets it go."""

import threading
import time

from kernelzero.judge.sandbox import process


class _Stub:
    """Stands in for Sandbox: records every instance; spawn() waits on the shared gate."""

    gate = threading.Event()
    made: list["_Stub"] = []
    lock = threading.Lock()

    def __init__(self, job, device, memory_limit_gb, extra_env):
        self.job, self.env = job, extra_env
        self.spawned = self.finished = self.cleaned = False
        with _Stub.lock:
            _Stub.made.append(self)

    def spawn(self):
        assert _Stub.gate.wait(10)
        self.spawned = True

    def alive(self):
        return self.spawned and not self.finished

    def finish(self):
        self.finished = True

    def cleanup(self):
        self.cleaned = True


def _until(pred, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not pred() and time.monotonic() < deadline:
        time.sleep(0.01)
    return pred()


def _stubbed(monkeypatch):
    _Stub.gate = threading.Event()
    _Stub.made = []
    monkeypatch.setattr(process, "Sandbox", _Stub)


def test_construction_does_not_wait_and_a_first_job_goes_cold(monkeypatch):
    _stubbed(monkeypatch)
    warm = process.WarmSandboxes(3, "cpu", 4.0, extra_env={"A": "1"})
    # every spawn is held at the gate, yet the constructor has returned and a job is served
    assert _until(lambda: len(_Stub.made) == 1)
    sb = warm.take({"kind": "candidate"})
    assert sb.job == {"kind": "candidate"} and not sb.spawned  # a cold sandbox: its job starts it
    assert sb.env == {"A": "1"}  # the cold one gets the plain env, warm ones add the prewarm flag
    _Stub.gate.set()
    assert _until(lambda: len(warm._ready) == 3)
    assert all(s.spawned and s.env == {"A": "1", "KZ_PREWARM": "1"} for s in warm._ready)
    # the take's refill raced the fill: no more than `size` idle workers were ever spawned beside the cold one
    time.sleep(0.1)
    assert len(warm._ready) == 3 and len(_Stub.made) == 4
    idle = list(warm._ready)
    warm.close()
    assert all(s.finished and s.cleaned for s in idle) and not sb.finished  # the job's own sandbox is its caller's


def test_take_after_fill_hands_out_a_warm_worker_and_refills(monkeypatch):
    _stubbed(monkeypatch)
    _Stub.gate.set()
    warm = process.WarmSandboxes(2, "cpu", 4.0)
    assert _until(lambda: len(warm._ready) == 2)
    first = warm._ready[0]
    sb = warm.take({"kind": "reference"})
    assert sb is first and sb.job == {"kind": "reference"}
    assert _until(lambda: len(warm._ready) == 2)  # refilled in the background
    assert len(_Stub.made) == 3
    warm.close()


def test_close_during_fill_keeps_no_worker(monkeypatch):
    _stubbed(monkeypatch)
    warm = process.WarmSandboxes(2, "cpu", 4.0)
    assert _until(lambda: len(_Stub.made) == 1)  # the first spawn is under way, held at the gate
    warm.close()
    _Stub.gate.set()
    assert _until(lambda: all(s.finished and s.cleaned for s in _Stub.made))
    assert warm._ready == [] and len(_Stub.made) == 1  # the fill stopped: no second spawn after the close
