"""CUDA allocations handed from one process to another by file descriptor (`sandbox/devmem.py`), on a real GPU: the
bytes arrive, the sender's later writes do not reach the judge's copy, and forged descriptors are refused. (The
judge's own use of it, across the sandbox's namespaces, is in test_judge_gpu.py: its 128 MB outputs take this path.)"""

import os
import socket
import subprocess
import sys
import tempfile

import pytest

pytestmark = pytest.mark.gpu

SENDER = r"""
import os, socket, sys, torch
from kernelzero.judge.sandbox.devmem import Exports
sock = socket.socket(fileno=int(sys.argv[1]))
t = torch.arange(int(sys.argv[2]), dtype=torch.float32, device="cuda")
exports = Exports(torch)
fd = exports.export(t)
socket.send_fds(sock, [b"out"], [fd])
os.close(fd)
sock.recv(1)  # the judge has its copy: now scribble over the exported memory, then exit
t.fill_(-1.0)
ptr, size, handle = exports._live[0]
exports.driver._push(0)
exports.driver.copy(ptr, t.data_ptr(), t.numel() * 4)
exports.release()
"""


@pytest.fixture(scope="module")
def torch():
    import torch

    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    return torch


def test_an_exported_allocation_arrives_whole_and_later_writes_do_not_reach_the_copy(torch):
    from kernelzero.judge.sandbox import devmem

    n = 50_000_000  # 200 MB: a few granules
    judge_end, worker_end = socket.socketpair()
    proc = subprocess.Popen([sys.executable, "-c", SENDER, str(worker_end.fileno()), str(n)],
                            pass_fds=(worker_end.fileno(),))  # fmt: skip
    worker_end.close()
    judge_end.settimeout(120)
    tag, fds, _, _ = socket.recv_fds(judge_end, 16, 2)
    assert tag == b"out" and len(fds) == 1
    copy = devmem.import_copy(torch, fds[0], n * 4, 0).view(torch.float32)
    judge_end.send(b"x")
    assert proc.wait(120) == 0
    assert copy.is_cuda and torch.equal(copy, torch.arange(n, dtype=torch.float32, device="cuda"))
    with pytest.raises(OSError):
        os.fstat(fds[0])  # import_copy closed it


def test_forged_descriptors_do_not_import(torch):
    from kernelzero.judge.sandbox import devmem

    with tempfile.TemporaryFile() as f:
        f.write(b"\0" * 4096)
        f.flush()
        with pytest.raises(devmem.DeviceMemoryError):
            devmem.import_copy(torch, os.dup(f.fileno()), 4096, 0)  # a file, not an allocation
    exports = devmem.Exports(torch)
    fd = exports.export(torch.ones(1024, device="cuda"))  # one granule (2 MB)
    with pytest.raises(devmem.DeviceMemoryError):
        devmem.import_copy(torch, fd, 64 * 2**20, 0)  # an entry claiming more than the allocation holds
    exports.release()
