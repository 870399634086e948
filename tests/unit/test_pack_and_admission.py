"""The output channel's pack format and admission by memory: values, forged trailers, plans by output size, the gate."""

import fcntl
import functools
import json
import os
import struct
import threading
import time

import pytest
import torch

from kernelzero.judge.footprint import GB, Footprint, MemoryGate, Plan, choose_plan
from kernelzero.judge.options import JudgeOptions
from kernelzero.judge.sandbox import pack
from kernelzero.judge.sandbox.process import SEALS, ChannelError, describe_exit, load_sealed


def _memfd() -> int:
    return os.memfd_create("kz-test", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)


def _writer(fd: int, stage=None) -> pack.PackWriter:
    return pack.PackWriter(fd, functools.partial(torch.frombuffer, dtype=torch.uint8), stage=stage)


def test_a_pack_round_trips_every_dtype_shape_and_structure():
    obj = {"outputs": [[torch.randn(3, 5), torch.arange(7)], [torch.empty(0, 2)]], "x": None, "n": 3,
           "timed": [("tensor", [torch.ones(2, dtype=torch.bfloat16), None])],
           "flags": torch.tensor([True, False]), "c": torch.randn(4, dtype=torch.complex64),
           "t": torch.randn(6, 4).t()}  # fmt: skip
    fd = _memfd()
    pack.pack(fd, torch, obj)
    back = pack.read(fd, torch)
    os.close(fd)  # the tensors map the file: they outlive the descriptor
    assert back["x"] is None and back["n"] == 3 and back["timed"][0][0] == "tensor" and back["timed"][0][1][1] is None
    for got, want in [(back["outputs"][0][0], obj["outputs"][0][0]), (back["outputs"][0][1], obj["outputs"][0][1]),
                      (back["timed"][0][1][0], obj["timed"][0][1][0]), (back["flags"], obj["flags"]),
                      (back["c"], obj["c"]), (back["t"], obj["t"])]:  # fmt: skip
        assert got.dtype == want.dtype and torch.equal(got, want)
    assert back["outputs"][1][0].shape == (0, 2)


def test_a_staged_copy_in_pieces_writes_the_same_bytes():
    """GPU workers copy through a pinned buffer smaller than the tensor; the pieces must land in order."""
    fd = _memfd()
    w = _writer(fd, stage=torch.empty(1000, dtype=torch.uint8))
    x, y = torch.randn(30, 100).t(), torch.arange(10)  # 12 KB through a 1 KB stage; the small one directly
    w.finish({"a": [w.add(x), w.add(y)]})
    back = pack.read(fd, torch)
    assert torch.equal(back["a"][0], x) and torch.equal(back["a"][1], y)


def _forged(trailer: dict, data: bytes = b"\0" * 4096) -> int:
    fd = _memfd()
    body = json.dumps(trailer).encode()
    os.write(fd, data + body + struct.pack("<Q", len(body)))
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, SEALS)
    return fd


@pytest.mark.parametrize("trailer", [
    {"obj": {"__t": 0}, "tensors": [["float32", [2048], 0, 8192]]},  # runs past the data
    {"obj": {"__t": 0}, "tensors": [["float32", [4], 4096, 16]]},  # starts where the data ends
    {"obj": {"__t": 0}, "tensors": [["float32", [4], 4, 16]]},  # not page-aligned
    {"obj": {"__t": 0}, "tensors": [["float32", [5], 0, 16]]},  # size does not match the shape
    {"obj": {"__t": 0}, "tensors": [["object", [4], 0, 16]]},  # a dtype we do not know
    {"obj": {"__t": 1}, "tensors": [["float32", [4], 0, 16]]},  # a reference outside the table
    {"obj": {"__t": 0}, "tensors": "nope"},
])  # fmt: skip
def test_a_forged_trailer_is_a_channel_error_never_a_read_outside_the_file(trailer):
    with pytest.raises(ChannelError):
        load_sealed(_forged(trailer), "out")


def test_a_truncated_or_unsealed_pack_is_refused():
    fd = _memfd()
    os.write(fd, b"\x05")
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, SEALS)
    with pytest.raises(ChannelError, match="well-formed"):
        load_sealed(fd, "out")
    fd = _memfd()
    pack.pack(fd, torch, [torch.ones(3)])
    with pytest.raises(ChannelError, match="did not seal"):
        load_sealed(fd, "out")


def test_plans_shrink_with_the_output_down_to_the_minimal_one():
    full = Plan(5, 5, 2, 3)
    assert choose_plan(full, 1 << 20, 4 * GB) == full  # 15 MB kept
    assert choose_plan(full, 400 << 20, 4 * GB) == Plan(3, 2, 2, 2)  # 15 x 400 MB = 5.9 GB; 9 x 400 MB fits
    assert choose_plan(full, 6 * GB, 4 * GB) == Plan(2, 1, 1, 1)  # KernelBench's 6 GB activations
    assert choose_plan(full, None, 4 * GB) == full  # unknown size: the full plan
    assert Plan(2, 1, 1, 1).sets == 5
    with_fresh = Plan(5, 5, 2, 3, fresh=2)  # the timing's fresh sets go first, before any trial
    assert with_fresh.sets == 17 and choose_plan(with_fresh, 1 << 20, 4 * GB) == with_fresh
    assert choose_plan(with_fresh, 256 << 20, 4 * GB) == full  # 17 x 256 MB > 4 GB >= 15 x 256 MB


def test_fresh_timing_seeds_only_for_a_full_plan_and_small_inputs():
    from kernelzero.judge.admission import FRESH_MAX_IN_BYTES
    from kernelzero.judge.core import Judge, Reference

    judge = Judge(JudgeOptions(device="cpu", timing_fresh=2))

    def planned(in_bytes: int | None, out_bytes: int) -> Reference:
        ref = Reference(init_seed=1, seeds=[1] * 5, timing_seeds=[2] * 3)
        ref.footprint = None if in_bytes is None else Footprint(in_bytes, out_bytes, 0)
        judge._plan(ref)
        return ref

    small = planned(1 << 20, 1 << 20)
    assert len(set(small.fresh_seeds)) == 2 and small.plan.fresh == 2 and len(small.seeds) == 5
    assert not set(small.fresh_seeds) & {1, 2}  # drawn, not the trials' or the loop's
    big_in = planned(FRESH_MAX_IN_BYTES + 1, 1 << 20)  # a reduction of large inputs: every trial, no fresh set
    assert big_in.fresh_seeds == [] and big_in.plan.fresh == 0 and len(big_in.seeds) == 5
    big_out = planned(1 << 20, 6 * GB)
    assert big_out.fresh_seeds == [] and len(big_out.seeds) == 2 and len(big_out.timing_seeds) == 1
    assert planned(None, 0).fresh_seeds == []  # sizes unknown: no extra memory taken on trust


def test_footprint_needs():
    fp = Footprint(in_bytes=6 * GB, out_bytes=6 * GB, param_bytes=0)
    assert fp.gpu_need() == 1 * GB + 24 * GB and fp.gpu_need(measured_peak=40 * GB) == 41 * GB
    assert fp.host_need(Plan(2, 1, 1, 1)) == fp.host_need(Plan(1, 1, 1, 1)) + 6 * GB


def test_the_gate_blocks_until_memory_is_released_and_serves_in_order():
    gate = MemoryGate({"gpu": 10, "host": 10})
    first = gate.acquire({"gpu": 6, "host": 1})
    order: list[str] = []

    def take(name: str, need: dict) -> None:
        held = gate.acquire(need)
        order.append(name)
        gate.release(held)

    big = threading.Thread(target=take, args=("big", {"gpu": 8}))
    big.start()
    time.sleep(0.2)
    small = threading.Thread(target=take, args=("small", {"gpu": 1}))  # fits now, but waits behind `big`
    small.start()
    time.sleep(0.2)
    assert order == [] and gate.held == {"gpu": 6, "host": 1}
    assert gate.acquire({"gpu": 1}, block=False) is None  # never jumps the queue
    gate.release(first)
    big.join(5)
    small.join(5)
    assert order == ["big", "small"] and gate.held == {"gpu": 0, "host": 0} and gate.peak["gpu"] == 8


def test_a_need_larger_than_the_capacity_runs_alone_and_unknown_resources_are_ignored():
    gate = MemoryGate({"host": 10})
    held = gate.acquire({"host": 25, "gpu:3": 5})
    assert held == {"host": 10} and gate.held == {"host": 10}
    gate.release(held)


def test_a_budget_no_worker_waits_for_is_granted_past_a_queue_of_workers():
    gate = MemoryGate({"host": 10 * GB, "refs:gpu:0": 8 * GB})
    held = gate.acquire({"host": 9 * GB})
    waiter = threading.Thread(target=lambda: gate.release(gate.acquire({"host": 8 * GB})))
    waiter.start()
    deadline = time.monotonic() + 10
    while "1 waiting" not in gate.describe() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert gate.acquire({"refs:gpu:0": 4 * GB}, block=False) is None  # the default never jumps the queue
    assert gate.acquire({"refs:gpu:0": 4 * GB}, block=False, jump=True) == {"refs:gpu:0": 4 * GB}
    assert gate.acquire({"refs:gpu:0": 5 * GB}, block=False, jump=True) is None  # but it must still fit
    gate.release(held)
    waiter.join(10)
    assert gate.held == {"host": 0, "refs:gpu:0": 4 * GB}


def test_the_gate_describes_what_is_held_and_who_waits():
    gate = MemoryGate({"host": 10 * GB, "gpu:0": 20 * GB})
    held = gate.acquire({"host": 6 * GB, "gpu:0": 5 * GB})
    waiter = threading.Thread(target=lambda: gate.release(gate.acquire({"host": 8 * GB})))
    waiter.start()
    deadline = time.monotonic() + 10
    while "1 waiting" not in gate.describe() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert gate.describe() == "gate: host 6.0/10.0 (peak 6.0), gpu:0 5.0/20.0 (peak 5.0) GB; 1 waiting"
    gate.release(held)
    waiter.join(10)
    assert gate.describe() == "gate: host 0.0/10.0 (peak 8.0), gpu:0 0.0/20.0 (peak 5.0) GB; 0 waiting"


def test_a_waiting_request_asks_its_caller_to_free_idle_holders():
    gate = MemoryGate({"host": 10})
    idle = gate.acquire({"host": 10})  # e.g. a big task's lease, kept by an idle cached reference
    calls = []

    def drop() -> None:
        calls.append(1)
        gate.release(idle)

    assert gate.acquire({"host": 4}, on_wait=drop) == {"host": 4}
    assert calls == [1]


def test_a_worker_killed_by_a_signal_is_named():
    assert describe_exit(1) == "exited (code 1)"
    assert describe_exit(128 + 25) == "killed by signal 25 (SIGXFSZ)"  # the namespace prelude's way
    assert describe_exit(-9) == "killed by signal 9 (SIGKILL)"


def test_idle_pre_spawned_workers_contexts_come_off_the_gpus_capacity(monkeypatch):
    """Each warm worker holds a CUDA context (624 MB on the H200) before any job: sixteen of them, uncounted, were
    the 10 GB a big task's comparison ran short of. The GPU's capacity in the gate leaves them out."""
    from kernelzero.judge import admission
    from kernelzero.judge.admission import WARM_GPU
    from kernelzero.judge.core import Judge
    from kernelzero.judge.options import JudgeOptions

    class Props:
        total_memory = 140 * GB

    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda index: Props())
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda index: (139 * GB, 140 * GB))  # this process's context
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda index: 0)
    # the H200's 128 GB of host memory free: this machine's would leave both figures at the 4 GB floor whenever other
    # processes hold a few GB of its 24
    monkeypatch.setattr(admission, "host_memory_bytes", lambda: 128 * GB)
    judge = Judge(JudgeOptions(device="cpu", reference_device_gb=32))
    judge.device, judge.compare_device = "cuda", "cuda:0"
    cold, warm = judge.capacities(0), judge.capacities(24, warm_here=16)
    assert cold["gpu"] == 103 * GB and warm["gpu"] == 103 * GB - 16 * WARM_GPU
    assert warm["host"] == cold["host"] - 24 * GB  # all 24 warm workers' resident sets, on the shared host


@pytest.mark.parametrize("rise_gb_per_s, returns_at_s", [(0.0, 5.1), (1.0, 20.0), (None, 0.0)])
def test_waiting_for_free_gpu_memory_stops_once_it_stops_coming_back(monkeypatch, rise_gb_per_s, returns_at_s):
    """A rerun alone waits for a dying worker's memory to come back (free memory rising), up to 30 s; memory that
    another process holds never comes back, and the queue behind the rerun should not wait the 30 s for it: the wait
    ends once free memory has not grown for 5 s. None: the GPU is free at once."""
    from kernelzero.judge import admission
    from kernelzero.judge.core import Judge
    from kernelzero.judge.footprint import MemoryGate
    from kernelzero.judge.options import JudgeOptions

    clock = [0.0]
    monkeypatch.setattr(admission.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(admission.time, "sleep", lambda s: clock.__setitem__(0, round(clock[0] + s, 6)))
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    start_gb = 70 if rise_gb_per_s is None else 50
    free = lambda index: (int((start_gb + (rise_gb_per_s or 0) * clock[0]) * GB), 80 * GB)  # noqa: E731
    monkeypatch.setattr(torch.cuda, "mem_get_info", free)
    judge = Judge(JudgeOptions(device="cpu"))
    judge.device, judge.compare_device = "cuda", "cuda:0"
    judge.set_gate(MemoryGate({"gpu": 70 * GB, "host": 100 * GB}), "gpu")
    seen_gb = judge._await_free_gpu()
    assert clock[0] == pytest.approx(returns_at_s, abs=0.15)
    assert seen_gb == pytest.approx(start_gb + (rise_gb_per_s or 0) * clock[0], abs=0.01)
