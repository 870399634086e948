"""A worker template's process: prewarm the CPU side as a worker would, check that a fork is sound, then fork one
worker per request from the judge and set it up as the exec chain does (`template.py` says how and why; nothing
imports this module: the judge runs it as `python -m kernelzero.judge.sandbox.template_main FD`)."""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import json
import os
import re
import runpy
import signal
import socket
import sys
import tempfile
from typing import Any

from kernelzero.judge.sandbox.worker import name_process

_PR_SET_PDEATHSIG = 1
_CLONE_NEWNS, _CLONE_NEWNET, _CLONE_NEWPID = 0x00020000, 0x40000000, 0x20000000
_MS = {"ro": 1, "nosuid": 2, "nodev": 4, "noexec": 8, "noatime": 1024, "nodiratime": 2048, "relatime": 1 << 21,
       "strictatime": 1 << 24}  # fmt: skip
_MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = 32, 4096, 16384, 1 << 18
_KEEP_WRITABLE = ("/proc", "/dev", "/dev/pts", "/dev/shm", "/sys")  # and what lies under /proc and /sys
_LIBC = ctypes.CDLL(None, use_errno=True)


def _check(rc: int, what: str) -> None:
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    def enc(value: str | None) -> bytes | None:
        return None if value is None else value.encode()

    _check(_LIBC.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)), f"mount {target}")


def _die_with_parent(parent: int) -> None:
    """SIGKILL when the parent ends; exits at once if the parent (pid `parent` as this process sees it) is gone."""
    _check(_LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "prctl")
    if os.getppid() != parent:  # it died before the signal was armed
        os._exit(1)


def _mountinfo() -> dict[str, str]:
    """Mount point -> its per-mount options (the topmost mount where several share a point)."""
    points = {}
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), fields[4])  # the kernel's \040 (space) ...
            points[point] = fields[5]
    return points


def _isolate_files(scratch: str) -> str:
    """The prelude of `process.py` in mount(2) calls: a fresh /proc, the sibling scratches veiled, every mount but
    ours read-only, a private /dev/shm. Returns the veil (what KZ_SCRATCH_VEIL tells the worker)."""
    _mount(None, "/", None, _MS_REC | _MS_PRIVATE)
    _mount("proc", "/proc", "proc", _MS["nosuid"] | _MS["nodev"] | _MS["noexec"])
    veil, opts = ("/dev/shm", "size=2g,mode=1777") if scratch.startswith("/dev/shm/") else \
        (os.path.dirname(scratch), "size=1m,mode=755")  # fmt: skip
    try:
        _mount(scratch, "/mnt", None, _MS_BIND)
    except OSError:
        veil = "none"
        _mount(scratch, scratch, None, _MS_BIND)
    else:
        try:
            _mount("kz-veil", veil, "tmpfs", 0, opts)
            os.makedirs(scratch, exist_ok=True)
            _mount("/mnt", scratch, None, _MS_BIND)
        except OSError:
            veil = "none"
            _mount(scratch, scratch, None, _MS_BIND)
        _check(_LIBC.umount2(b"/mnt", 0), "umount /mnt")
    for point, options in _mountinfo().items():
        if point in _KEEP_WRITABLE or point == scratch or point.startswith(("/proc/", "/sys/")):
            continue
        flags = _MS_REMOUNT | _MS_BIND | _MS["ro"]
        flags |= sum(_MS[o] for o in options.split(",") if o in _MS and o != "ro")  # keep nosuid, noexec, ...
        with contextlib.suppress(OSError):
            _mount(None, point, None, flags)
    if veil != "/dev/shm":
        with contextlib.suppress(OSError):
            _mount("kz-shm", "/dev/shm", "tmpfs", 0, "size=2g,mode=1777")
    return veil


def _exit_code(status: int, namespaces: bool) -> int:
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status) if namespaces else -os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def _reap_until(pid: int) -> int:
    """As PID 1: reap every orphan until `pid` ends; its wait status."""
    while True:
        try:
            got, status = os.waitpid(-1, 0)
        except ChildProcessError:
            return 1 << 8
        if got == pid:
            return status


def _place_fds(fds: list[int], targets: list[int]) -> int:
    """Put each received descriptor at its target number and close every other one (the template's control socket
    first of all); returns the status pipe's descriptor (target -1), kept at a number of its own."""
    base = max([*targets, 2]) + 1
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD, base) for fd in fds]  # above every target: no dup2 below clobbers one
    for fd in fds:
        os.close(fd)
    status = -1
    for fd, target in zip(high, targets, strict=True):
        if target < 0:
            status = fd
        else:
            os.dup2(fd, target, inheritable=True)
    keep = {t for t in targets if t >= 0} | {status}
    for fd in [int(name) for name in os.listdir("/proc/self/fd")]:
        if fd not in keep:
            with contextlib.suppress(OSError):
                os.close(fd)
    return status


def _become_worker(request: dict[str, Any], fds: list[int], template_pid: int) -> None:
    """The leader's life (see the module docstring); never returns."""
    try:
        os.setsid()
        name_process("kz-leader")
        _die_with_parent(template_pid)
        status = _place_fds(fds, request["targets"])
        os.environ.clear()
        os.environ.update(request["env"])
        tempfile.tempdir = None  # torch's import asked for the template's
        threads = request["env"].get("OMP_NUM_THREADS", "1")
        if threads.isdigit() and int(threads) > 1:  # the template imported torch with one
            sys.modules["torch"].set_num_threads(int(threads))
        namespaces = bool(request["namespaces"])
        if namespaces:
            _check(_LIBC.unshare(_CLONE_NEWNS | _CLONE_NEWNET | _CLONE_NEWPID), "unshare")
        leader = os.getpid()
        child = os.fork()
        if child:
            os.write(status, str(_exit_code(os.waitpid(child, 0)[1], namespaces)).encode())
            os._exit(0)
        os.close(status)
        _die_with_parent(0 if namespaces else leader)  # PID 1's parent lies outside its namespace: pid 0 to it
        if namespaces:  # PID 1
            name_process("kz-init")
            os.environ["KZ_SCRATCH_VEIL"] = _isolate_files(request["env"]["KZ_SCRATCH"])
            worker = os.fork()
            if worker:
                code = _exit_code(_reap_until(worker), True)
                if code > 128:
                    print(f"kz-prelude: the worker was killed by signal {code - 128}", file=sys.stderr, flush=True)
                os._exit(code)
            _die_with_parent(1)
        os.chdir(request["cwd"])
        sys.argv = ["kernelzero.judge.sandbox.worker", *request["argv"]]
        # As `python -m`: the worker's code runs as `__main__`, which no `importlib.reload` can re-execute under it
        # (a candidate reloading the harness's modules must not rebind the exceptions the worker's main catches).
        runpy.run_module("kernelzero.judge.sandbox.worker", run_name="__main__", alter_sys=True)
        os._exit(0)
    except BaseException as exc:  # before any job code: the worker never started; its log says why
        print(f"kz-template: the worker could not start: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        os._exit(1)


def _unfit_to_fork() -> str | None:
    """Why forking this process would not give sound workers, or None."""
    threads = os.listdir("/proc/self/task")
    if len(threads) > 1:
        return f"{len(threads)} threads after the prewarm (OMP_NUM_THREADS?): a fork would copy one of them only"
    with open("/proc/self/maps") as f:
        driver_loaded = "libcuda.so" in f.read()
    if driver_loaded:  # loaded is fine; initialised is not (a forked child's CUDA calls would fail)
        count = ctypes.c_int()
        if ctypes.CDLL("libcuda.so.1").cuDeviceGetCount(ctypes.byref(count)) != 3:  # 3: CUDA_ERROR_NOT_INITIALIZED
            return "CUDA's driver was initialised before the fork"
    try:
        os.close(os.pidfd_open(os.getpid()))
    except (AttributeError, OSError) as exc:
        return f"no pidfd here ({exc}): the judge could not signal a forked worker safely"
    return None


def serve(sock: socket.socket) -> None:
    """Prewarm the CPU side as a worker would, check that a fork is safe, then fork one worker per request."""
    name_process("kz-template")
    try:
        import torch

        from kernelzero.judge.sandbox.worker import prewarm

        prewarm(torch, "cpu")  # the op recorder (torch._dynamo) and Triton's import; no CUDA
        problem = _unfit_to_fork()
    except Exception as exc:
        problem = f"{type(exc).__name__}: {exc}"
    sock.send(json.dumps({"error": problem} if problem else {"ready": True}).encode())
    if problem:
        return
    me = os.getpid()
    while True:
        msg, fds, _, _ = socket.recv_fds(sock, 1 << 20, 64)
        if not msg:
            return  # the judge closed its end (or exited)
        _reap()
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            pid = os.fork()
        except OSError as exc:
            pid = -1
            sock.send(json.dumps({"error": f"fork: {exc}"}).encode())
        if pid == 0:
            sock.close()
            _become_worker(json.loads(msg), fds, me)
        for fd in fds:
            os.close(fd)
        if pid > 0:  # unreaped until the next request, so the pidfd always finds it (a zombie's pid is not reused)
            pidfd = os.pidfd_open(pid)
            socket.send_fds(sock, [json.dumps({"pid": pid}).encode()], [pidfd])
            os.close(pidfd)


def _reap() -> None:
    """Collect the leaders that have exited (their status went to the judge on their own pipes)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return

if __name__ == "__main__":
    serve(socket.socket(fileno=int(sys.argv[1])))
