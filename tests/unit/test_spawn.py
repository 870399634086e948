"""spawn.doomed / await_exit: the processes below a killed worker are followed by pidfd, opened while they live, so a
wait ends when those very processes have exited and leaves no descriptor open."""

import fcntl
import os
import signal
import subprocess
import time

import pytest

from kernelzero.judge.sandbox.spawn import await_exit, doomed


def test_await_exit_follows_the_killed_tree_and_closes_its_pidfds():
    proc = subprocess.Popen(["sh", "-c", "sleep 60 & sleep 60 & wait"], start_new_session=True)
    deadline = time.monotonic() + 10
    procs = []
    while len(procs) < 2 and time.monotonic() < deadline:  # both sleeps started
        for fd, _ in procs:
            os.close(fd)
        procs = doomed(proc.pid)
        time.sleep(0.02)
    assert len(procs) == 2 and all(fd >= 0 for fd, _ in procs)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    t0 = time.monotonic()
    await_exit(procs, timeout_s=20.0)
    assert time.monotonic() - t0 < 5.0  # ended by the exits, not the timeout
    for fd, _ in procs:  # closed (nothing has opened a descriptor since)
        with pytest.raises(OSError):
            fcntl.fcntl(fd, fcntl.F_GETFD)
