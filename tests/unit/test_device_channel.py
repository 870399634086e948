"""The device channel's plumbing on CPU: big outputs leave the pack as descriptors sent beside it (SCM_RIGHTS), the
judge takes exactly the ones the sealed pack names, and every forgery is a channel error. The CUDA allocations
themselves (`devmem.Exports`, `devmem.import_copy`) are stood in for by memfds here; on a GPU the same paths carry
cuMemCreate allocations (tests/gpu)."""

import fcntl
import functools
import os
import socket

import pytest
import torch

from kernelzero.judge.footprint import GB, Footprint, Plan
from kernelzero.judge.sandbox import devmem, pack
from kernelzero.judge.sandbox.harness import Bound
from kernelzero.judge.sandbox.process import ChannelError, Sandbox

BIG = 4096  # bytes from which the stand-in exporter takes a tensor


def _memfd_of(t: torch.Tensor) -> int:
    """A stand-in for an exported device allocation: a memfd holding the tensor's bytes."""
    fd = os.memfd_create("fake-device")
    os.write(fd, t.contiguous().view(-1).view(torch.uint8).numpy().tobytes())
    return fd


def _fake_import(torch_, fd: int, nbytes: int, ordinal: int):
    """`devmem.import_copy` on a memfd: a copy the judge owns; the descriptor is closed; too small is refused."""
    try:
        if os.fstat(fd).st_size < nbytes:
            raise devmem.DeviceMemoryError("the allocation is smaller than the entry claims")
        return torch.frombuffer(bytearray(os.pread(fd, nbytes, 0)), dtype=torch.uint8)
    finally:
        os.close(fd)


@pytest.fixture
def channel(monkeypatch):
    """(bound, sandbox): a worker's harness and the judge's sandbox joined by a socket pair, with a sealable memfd."""
    monkeypatch.setattr(devmem, "import_copy", _fake_import)
    judge_end, worker_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    memfd = os.memfd_create("kz-out", os.MFD_ALLOW_SEALING)
    bound = Bound(torch)
    bound.output_fds = {"out": memfd, "timed": os.memfd_create("kz-timed", os.MFD_ALLOW_SEALING)}
    bound._device_socket = worker_end
    bound._exports = object()  # a channel is open; which tensors go over it is `_export`'s choice
    bound._export = lambda t: _memfd_of(t) if t.numel() * t.element_size() >= BIG else None
    sb = Sandbox(job={})
    sb._outputs, sb._device = dict(bound.output_fds), judge_end
    yield bound, sb
    worker_end.close()
    sb.finish()
    sb.cleanup()


def test_big_outputs_cross_as_descriptors_and_load_beside_the_small_ones(channel):
    bound, sb = channel
    big, small = torch.arange(2048, dtype=torch.float32).view(32, 64), torch.tensor([1.5, -2.0])
    bound.save({"outputs": [[big, small]], "replay": [[big * 2]]}, "out")
    data = sb.load_output("out", "cuda:0")
    assert torch.equal(data["outputs"][0][0], big) and torch.equal(data["replay"][0][0], big * 2)
    assert torch.equal(data["outputs"][0][1], small)
    trailer = pack.read(sb._outputs["out"], torch, lambda sizes: [torch.zeros(n, dtype=torch.uint8) for n in sizes])
    assert [t.abs().sum().item() for t in trailer["outputs"][0]] == [0.0, 3.5]  # only the small one is in the file


def test_a_worker_returns_its_cached_device_blocks_before_the_judge_copies_its_outputs(channel):
    """The judge copies a pack's device outputs as soon as it is sealed, beside the worker: the worker's allocator
    gives its cached blocks (freed inputs and outputs, 26 GB for KernelBench's RMSNorm) back to the driver first."""
    bound, sb = channel
    events = []
    bound.empty_cache = lambda: events.append(("empty_cache", fcntl.fcntl(bound.output_fds["out"], fcntl.F_GET_SEALS)))
    bound.save([torch.ones(4)], "out")
    assert events == [("empty_cache", 0)]  # once, before the pack is sealed
    assert torch.equal(sb.load_output("out", "cuda:0")[0], torch.ones(4))


def test_a_pack_naming_device_outputs_is_refused_by_a_judge_without_a_device(channel):
    bound, sb = channel
    bound.save([torch.ones(2048)], "out")
    with pytest.raises(ChannelError, match="no device channel"):
        sb.load_output("out", None)


def _send(sock, tag: bytes, tensors: list) -> None:
    fds = [_memfd_of(t) for t in tensors]
    socket.send_fds(sock, [tag], fds)
    for fd in fds:
        os.close(fd)


def test_forged_descriptors_are_channel_errors(channel):
    bound, sb = channel
    worker_end = bound._device_socket
    bound._export = lambda t: None  # the harness writes a plain pack; the forger adds descriptor messages
    writer = pack.PackWriter(sb._outputs["out"], functools.partial(torch.frombuffer, dtype=torch.uint8))
    writer.entries = [["float32", [1024], 0, 4096, pack.DEVICE], ["float32", [1024], 1, 4096, pack.DEVICE]]
    bound.seal("out", writer, [{"__t": 0}, {"__t": 1}])
    _send(worker_end, b"out", [torch.ones(1024)])  # one descriptor for two entries
    with pytest.raises(ChannelError, match="1 device outputs arrived"):
        sb.load_output("out", "cuda:0")
    _send(worker_end, b"timed", [torch.ones(1024), torch.ones(1024)])  # another pack's tag
    with pytest.raises(ChannelError, match="expected"):
        sb.load_output("out", "cuda:0")
    _send(worker_end, b"out", [torch.ones(1024), torch.ones(8)])  # an allocation smaller than its entry
    with pytest.raises(ChannelError, match="did not import"):
        sb.load_output("out", "cuda:0")
    _send(worker_end, b"out", [torch.ones(1024), torch.full((1024,), 3.0)])  # what the entries claim: loads
    assert [t.sum().item() for t in sb.load_output("out", "cuda:0")] == [1024.0, 3072.0]


@pytest.mark.parametrize(
    "entries",
    [
        [["float32", [1024], 0, 4096, pack.DEVICE], ["float32", [1024], 0, 4096, pack.DEVICE]],  # one index twice
        [["float32", [1024], 0, 4096, "host"]],  # an unknown kind
        [["float32", [1024], 0, 4000, pack.DEVICE]],  # a size its shape does not have
        [["float32", [1024], -1, 4096, pack.DEVICE]],  # an index outside 0..n-1
    ],
)
def test_malformed_device_entries_are_refused_before_any_descriptor_is_taken(entries):
    fd = os.memfd_create("kz-out", os.MFD_ALLOW_SEALING)
    writer = pack.PackWriter(fd, functools.partial(torch.frombuffer, dtype=torch.uint8))
    writer.entries = entries
    writer.finish([{"__t": i} for i in range(len(entries))])
    taken = []

    def copies(sizes):
        taken.append(sizes)
        return [torch.zeros(n, dtype=torch.uint8) for n in sizes]

    with pytest.raises(pack.PackError):
        pack.read(fd, torch, copies)
    assert taken == []
    os.close(fd)


def test_device_outputs_move_their_cost_from_host_to_gpu_memory():
    fp = Footprint(in_bytes=6 * GB, out_bytes=6 * GB, param_bytes=0)
    plan = Plan(2, 1, 1, 1)
    assert fp.host_need(plan) == fp.host_need(plan, on_device=True) + 5 * 6 * GB
    assert fp.gpu_need(plan=plan) == fp.gpu_need() + 2 * 5 * 6 * GB  # the worker's exports and the judge's copies


def test_the_judge_running_out_of_device_memory_is_not_a_forged_channel(channel, monkeypatch):
    """An import that fails because the judge's GPU is full says so (the judge reruns the candidate alone); one that
    fails otherwise is the pack's fault, a channel error."""
    bound, sb = channel
    writer = bound.writer("out")
    writer.add(torch.ones(BIG // 4))
    bound.seal("out", writer, {"__t": 0})

    def full(torch_, fd, nbytes, ordinal):
        os.close(fd)
        raise devmem.DeviceMemoryError("cuMemCreate failed with CUDA error 2 (out of memory)")

    monkeypatch.setattr(devmem, "import_copy", full)
    with pytest.raises(devmem.DeviceMemoryError, match="out of memory"):
        sb.load_output("out", "cuda:0")
