"""Guard `replay` on timed calls: one timed call's output per input set is kept and checked against the reference.

`time_model` runs here on CPU with CUDA events replaced by host clocks (flush off); the parent-side check runs on
memfds written and sealed exactly as the workers write them.
"""

import fcntl
import os
import random
import time
import weakref

import pytest
import torch

from kernelzero.judge.core import Judge, Reference
from kernelzero.judge.options import JudgeOptions
from kernelzero.judge.sandbox import pack
from kernelzero.judge.sandbox.harness import Bound
from kernelzero.judge.sandbox.judge_jobs import capture_output, save_captured
from kernelzero.judge.sandbox.process import OUTPUTS, SEALS, load_sealed
from kernelzero.judge.timing import time_model


class _Event:
    def __init__(self, enable_timing: bool = True):
        self.t = 0.0

    def record(self) -> None:
        self.t = time.perf_counter()


class _HostBound(Bound):
    """The worker's Bound with host clocks in place of CUDA events, a seeded draw, and its own output memfds (what a
    sandbox hands its worker). `load_output` is the parent's read of them (Sandbox.load_output)."""

    def __init__(self, seed: int = 0):
        super().__init__(torch)
        self.randbelow = random.Random(seed).randrange
        self.event = _Event
        self.output_fds = {n: os.memfd_create(f"kz-{n}", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING) for n in OUTPUTS}
        weakref.finalize(self, lambda fds: [os.close(fd) for fd in fds], list(self.output_fds.values()))

    def load_output(self, name: str, device: str | None = None):
        return load_sealed(self.output_fds[name], name)

    @staticmethod
    def synchronize() -> None:
        pass

    @staticmethod
    def elapsed(a: _Event, b: _Event) -> float:
        return (b.t - a.t) * 1e3


CFG = {"warmup": 2, "min_calls": 20, "max_calls": 20, "budget_s": 0.01, "flush_l2": False}
SETS = [[torch.full((4,), float(j + 1))] for j in range(3)]


class Double(torch.nn.Module):
    def forward(self, x):
        return x * 2


class HonestUntilTimed(torch.nn.Module):
    """Correct for its first 3 calls (the correctness trials), then replays its last output."""

    def __init__(self):
        super().__init__()
        self.calls, self.last = 0, None

    def forward(self, x):
        self.calls += 1
        if self.calls > 3 and self.last is not None:
            return self.last
        self.last = x * 2
        return self.last


class ReusesBuffer(torch.nn.Module):
    """Honest, but writes every output into one buffer: a kept output must be a copy, not that buffer."""

    def __init__(self):
        super().__init__()
        self.buf = None

    def forward(self, x):
        self.buf = torch.empty_like(x) if self.buf is None else self.buf
        return torch.mul(x, 2, out=self.buf)


def _captured(model, seed=0):
    bound = _HostBound(seed)
    stats = time_model(torch, bound, model, SETS, CFG, capture=capture_output(torch, bound))
    return stats, stats.pop("captured")


def test_one_output_per_input_set_from_that_set():
    for seed in range(5):  # whichever call is drawn, it is a call on that set
        stats, captured = _captured(Double(), seed)
        assert stats["events"]["n"] == 20
        assert [s for s, _ in captured] == ["tensor"] * 3
        for j, (_, (out,)) in enumerate(captured):
            assert torch.equal(out, torch.full((4,), 2.0 * (j + 1)))


class KeepsOutputs(torch.nn.Module):
    """Right on every call: computes (slowly) on values it has not seen, copies the output kept for an exact repeat."""

    def __init__(self):
        super().__init__()
        self.kept, self.seen = {}, []

    def forward(self, x):
        self.seen.append(float(x[0]))
        key = tuple(x.tolist())
        if key not in self.kept:
            time.sleep(0.01)  # the work, paid once per input
            self.kept[key] = x * 2
        return self.kept[key].clone()


def test_fresh_sets_come_after_the_loop_each_called_once_their_outputs_kept_after_the_loops():
    model, bound, made = KeepsOutputs(), _HostBound(), []

    def fresh():
        made.append(len(model.seen))  # made only once every loop call has run
        return [[torch.full((4,), 10.0 + j)] for j in range(2)]

    stats = time_model(torch, bound, model, SETS, CFG, capture=capture_output(torch, bound), fresh=fresh)
    assert made == [CFG["warmup"] + 1 + 20]  # after the warm-up, the estimate and the 20 timed calls
    assert model.seen.count(10.0) == 1 and model.seen.count(11.0) == 1
    assert [float(out[0]) for _, (out,) in stats["captured"]] == [2.0, 4.0, 6.0, 20.0, 22.0]
    assert stats["fresh"]["n"] == 2
    # the loop's calls were copies; a call on new values paid the work: the guard's evidence
    assert stats["fresh"]["min_ms"] > 5.0 > stats["events"]["median_ms"] * 3
    from kernelzero.judge.guards import timing_violation

    assert timing_violation(stats, 0, 10.0)[0] == "fresh_inputs"
    honest = time_model(torch, _HostBound(), Double(), SETS, CFG, fresh=fresh)
    assert honest["fresh"]["n"] == 2 and timing_violation(honest, 0, 10.0) is None
    assert "fresh" not in time_model(torch, _HostBound(), Double(), SETS, CFG, fresh=lambda: [])


def test_fresh_inputs_rejects_timed_calls_far_faster_than_a_call_on_new_values():
    from kernelzero.judge.guards import timing_violation

    def stats(median_ms: float, fresh_min_ms: float) -> dict:
        return {**_stats(median_ms, median_ms + 0.01), "fresh": {"min_ms": fresh_min_ms}}

    assert timing_violation(stats(0.060, 1.0), 0, 10.0)[0] == "fresh_inputs"  # a 1 ms product answered in 60 us
    assert timing_violation(stats(1.000, 2.9), 0, 10.0) is None  # within 3x: noise, placement, a cold cache
    assert timing_violation(stats(0.004, 0.030), 0, 10.0) is None  # a launch-bound call's microseconds of jitter
    assert timing_violation(stats(0.004, 0.040), 0, 10.0)[0] == "fresh_inputs"
    assert timing_violation(_stats(0.060, 0.07), 0, 10.0) is None  # no fresh calls (a big task): not judged


def test_kept_outputs_are_copies():
    _, captured = _captured(ReusesBuffer())
    assert [float(out[0]) for _, (out,) in captured] == [2.0, 4.0, 6.0]


def _reference(model) -> tuple[Judge, Reference]:
    judge = Judge(JudgeOptions(device="cpu"))
    ref = Reference(init_seed=0, seeds=[1], timing_seeds=[2, 3, 4])
    _, captured = _captured(model)
    worker = _HostBound()
    save_captured(torch, worker, captured)
    ref.timed_outputs = worker.load_output("timed")
    return judge, ref


def _saved(obj) -> _HostBound:
    """A worker whose `timed` memfd holds `obj`, sealed (as written by a forging worker, not by save_captured)."""
    worker = _HostBound()
    fd = worker.output_fds["timed"]
    pack.pack(fd, torch, obj)
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, SEALS)
    return worker


def test_parent_accepts_honest_timed_outputs():
    judge, ref = _reference(Double())
    _, captured = _captured(ReusesBuffer(), seed=3)
    worker = _HostBound()
    save_captured(torch, worker, captured)
    assert judge._check_timed_outputs(worker, ref) is None


def test_parent_rejects_a_module_honest_only_before_timing():
    judge, ref = _reference(Double())
    _, captured = _captured(HonestUntilTimed())
    worker = _HostBound()
    save_captured(torch, worker, captured)
    guard, feedback = judge._check_timed_outputs(worker, ref)
    assert guard == "replay"
    assert "input set 1" in feedback or "input set 2" in feedback or "input set 3" in feedback


def test_parent_rejects_a_subclass_or_missing_set():
    judge, ref = _reference(Double())
    # what capture keeps for a tensor subclass
    assert judge._check_timed_outputs(_saved([("tensor", [None])] * 3), ref)[0] == "tensor_subclass"
    assert judge._check_timed_outputs(_saved(ref.timed_outputs[:2]), ref)[0] == "replay"


def test_saved_timed_outputs_are_sealed_against_a_later_rewrite():
    """The harness seals what it saved: the right answers written afterwards (by candidate code running after the
    harness's write) never reach the judge, which reads the module's own replayed outputs."""
    judge, ref = _reference(Double())
    _, captured = _captured(HonestUntilTimed())
    worker = _HostBound()
    save_captured(torch, worker, captured)
    with pytest.raises(PermissionError), open(f"/proc/self/fd/{worker.output_fds['timed']}", "r+b") as f:
        f.write(b"PK")
    assert judge._check_timed_outputs(worker, ref)[0] == "replay"


def test_parent_rejects_timed_outputs_that_were_not_sealed():
    judge, ref = _reference(Double())
    worker = _HostBound()
    pack.pack(worker.output_fds["timed"], torch, ref.timed_outputs)  # the right answers, in a memfd that could change
    guard, feedback = judge._check_timed_outputs(worker, ref)
    assert guard == "channel" and "did not seal" in feedback


def _stats(events_ms: float, wall_ms: float) -> dict:
    return {"events": {"median_ms": events_ms}, "wall": {"median_ms": wall_ms}}


def test_roofline_rejects_a_time_below_writing_the_outputs():
    from kernelzero.judge.guards import timing_violation

    big = 512 * 2**20  # (512 - 128) MiB past L2 at 10 TB/s takes 40 us
    assert timing_violation(_stats(0.0030, 0.03), big, 10.0)[0] == "roofline"
    assert timing_violation(_stats(0.1200, 0.15), big, 10.0) is None  # 4.5 TB/s: an H200 at full speed
    assert timing_violation(_stats(0.0030, 0.02), 64 * 2**20, 10.0) is None  # may sit in L2 when the kernel ends


def test_side_stream_rejects_work_the_events_do_not_see():
    from kernelzero.judge.guards import timing_violation

    assert timing_violation(_stats(0.010, 2.0), 0, 10.0)[0] == "side_stream"  # 2 ms of work, 10 us on the events
    assert timing_violation(_stats(0.010, 0.080), 0, 10.0) is None  # host launch cost of a small honest kernel
    assert timing_violation(_stats(1.50, 1.60), 0, 10.0) is None  # a long honest kernel


def test_side_stream_compares_the_wall_with_the_uncovered_span_not_the_covered_events():
    from kernelzero.judge.guards import timing_violation

    # A launch-heavy honest call: 5 us of GPU work under the launch cover, 450 us of host enqueue in its span
    honest = {**_stats(0.005, 0.470), "span": {"median_ms": 0.455}}
    assert timing_violation(honest, 0, 10.0) is None
    assert timing_violation(_stats(0.005, 0.470), 0, 10.0)[0] == "side_stream"  # the events alone would reject it
    # Work on a side stream: the span of the current stream stays short while the wall holds the hidden 2 ms
    assert timing_violation({**_stats(0.005, 2.0), "span": {"median_ms": 0.02}}, 0, 10.0)[0] == "side_stream"


def test_roofline_off_at_zero_bandwidth():
    from kernelzero.judge.guards import timing_violation

    assert timing_violation(_stats(0.0030, 0.03), 512 * 2**20, 0.0) is None


def test_the_judge_running_out_of_memory_loading_timed_outputs_is_not_the_candidates_doing():
    judge, ref = _reference(Double())
    worker = _HostBound()

    def full(name, device=None):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 8.00 GiB")

    worker.load_output = full
    guard, feedback = judge._check_timed_outputs(worker, ref)
    assert guard == "out_of_memory" and "judge ran out of GPU memory" in feedback
