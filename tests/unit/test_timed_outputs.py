"""Guard `replay` on timed calls: one timed call's output per input set is kept and checked against the reference.

`time_model` runs here on CPU with CUDA events replaced by host clocks (flush off); the parent-side check runs on
files written exactly as the workers write them.
"""

import hashlib
import io
import random
import time

import torch

from kernelzero.judge.core import Judge, Reference
from kernelzero.judge.options import JudgeOptions
from kernelzero.judge.timing import time_model
from kernelzero.judge.worker import _Bound, capture_output, save_captured


class _Event:
    def __init__(self, enable_timing: bool = True):
        self.t = 0.0

    def record(self) -> None:
        self.t = time.perf_counter()


class _HostBound:  # the worker's _Bound with host clocks in place of CUDA events
    perf_counter = staticmethod(time.perf_counter)
    tensor_type = torch.Tensor
    save = _Bound.save  # the worker's: serialise in memory, write, return the bytes' SHA-256
    _torch_save, _bytes_io, _sha256, _open = staticmethod(torch.save), io.BytesIO, hashlib.sha256, open
    event = _Event

    def __init__(self, seed: int = 0):
        self.randbelow = random.Random(seed).randrange
        self.clone = torch.Tensor.clone  # an instance attribute, as in the worker's _Bound (no method binding)

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


def test_kept_outputs_are_copies():
    _, captured = _captured(ReusesBuffer())
    assert [float(out[0]) for _, (out,) in captured] == [2.0, 4.0, 6.0]


def _reference(tmp_path, model) -> tuple[Judge, Reference]:
    judge = Judge(JudgeOptions(device="cpu"))
    ref = Reference(init_seed=0, seeds=[1], timing_seeds=[2, 3, 4])
    _, captured = _captured(model)
    save_captured(torch, _HostBound(), captured, tmp_path / "ref_timed.pt")
    ref.timed_outputs = torch.load(tmp_path / "ref_timed.pt", weights_only=True)
    return judge, ref


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_parent_accepts_honest_timed_outputs(tmp_path):
    judge, ref = _reference(tmp_path, Double())
    _, captured = _captured(ReusesBuffer(), seed=3)
    digest = save_captured(torch, _HostBound(), captured, tmp_path / "timed.pt")
    assert digest == _sha(tmp_path / "timed.pt")
    assert judge._check_timed_outputs(tmp_path, "timed.pt", digest, ref) is None


def test_parent_rejects_a_module_honest_only_before_timing(tmp_path):
    judge, ref = _reference(tmp_path, Double())
    _, captured = _captured(HonestUntilTimed())
    digest = save_captured(torch, _HostBound(), captured, tmp_path / "timed.pt")
    guard, feedback = judge._check_timed_outputs(tmp_path, "timed.pt", digest, ref)
    assert guard == "replay"
    assert "input set 1" in feedback or "input set 2" in feedback or "input set 3" in feedback


def test_parent_rejects_a_subclass_or_missing_set(tmp_path):
    judge, ref = _reference(tmp_path, Double())
    torch.save([("tensor", [None])] * 3, tmp_path / "timed.pt")  # what capture keeps for a tensor subclass
    assert judge._check_timed_outputs(tmp_path, "timed.pt", _sha(tmp_path / "timed.pt"), ref)[0] == "tensor_subclass"
    torch.save(ref.timed_outputs[:2], tmp_path / "short.pt")
    assert judge._check_timed_outputs(tmp_path, "short.pt", _sha(tmp_path / "short.pt"), ref)[0] == "replay"


def test_parent_rejects_timed_outputs_rewritten_after_the_worker_saved_them(tmp_path):
    judge, ref = _reference(tmp_path, Double())
    _, captured = _captured(HonestUntilTimed())
    digest = save_captured(torch, _HostBound(), captured, tmp_path / "timed.pt")
    torch.save(ref.timed_outputs, tmp_path / "timed.pt")  # the right answers, put there after the worker's write
    guard, feedback = judge._check_timed_outputs(tmp_path, "timed.pt", digest, ref)
    assert guard == "channel" and "changed after the worker wrote it" in feedback


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


def test_roofline_off_at_zero_bandwidth():
    from kernelzero.judge.guards import timing_violation

    assert timing_violation(_stats(0.0030, 0.03), 512 * 2**20, 0.0) is None
