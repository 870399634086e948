"""Starting worker processes: one long-lived thread starts them all (so they die with the judge), the helpers that
find and kill what a worker left running, and the owner records that let a later judge remove the scratch folders of
one killed outright."""

from __future__ import annotations

import contextlib
import os
import queue
import select
import shutil
import signal
import subprocess
import threading
import time
import weakref
from concurrent.futures import Future
from pathlib import Path
from typing import Any


class _Spawner:
    """Starts every worker under `setpriv --pdeathsig KILL`, from one thread that lives as long as this process, so
    a judge killed outright (SIGKILL, OOM) takes its workers with it instead of leaving them to run out their job.
    The kernel sends the parent-death signal when the *thread* that forked the child ends, so a worker started
    from a short-lived thread (a warm refill) would be killed at once: hence the one long-lived thread. With
    namespaces the direct child is `unshare`, whose --kill-child then ends the namespace. Without setpriv (util-linux
    older than 2.33) workers are started as before. Worker templates (`template.py`) start here too, and the workers
    they fork carry the chain on: each dies with its template."""

    def __init__(self) -> None:
        self.pid = os.getpid()  # a forked child of the judge gets its own spawner thread (threads do not fork)
        self.prefix = ["setpriv", "--pdeathsig", "KILL"] if _setpriv_pdeathsig() else []
        self._requests: queue.SimpleQueue = queue.SimpleQueue()
        self.live: weakref.WeakSet[subprocess.Popen] = weakref.WeakSet()  # for `kill_workers`
        threading.Thread(target=self._serve, name="kz-spawner", daemon=True).start()

    def _serve(self) -> None:
        while True:
            done, cmd, kw = self._requests.get()
            try:
                proc = subprocess.Popen([*self.prefix, *cmd], **kw)
                self.live.add(proc)
                done.set_result(proc)
            except BaseException as exc:  # handed to the caller, in its own thread
                done.set_exception(exc)

    def popen(self, cmd: list[str], **kw: Any) -> subprocess.Popen:
        done: Future = Future()
        self._requests.put((done, cmd, kw))
        return done.result()


def descendants(pid: int) -> list[int]:
    """Every process below `pid` (from /proc's children lists), deepest last."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        for t in tasks:
            try:
                with open(f"/proc/{p}/task/{t}/children") as f:
                    kids = [int(k) for k in f.read().split()]
            except OSError:
                continue
            out += kids
            todo += kids
    return out


def doomed(pid: int) -> list[tuple[int, int]]:
    """(pidfd, pid) of every process below `pid`, the pidfd opened while it lives (-1 where this kernel has none):
    a later wait follows that very process, never one that reused its pid (pid_max may be 32,768)."""
    out = []
    for p in descendants(pid):
        try:
            out.append((os.pidfd_open(p), p))
        except ProcessLookupError:
            continue  # gone already
        except (AttributeError, OSError):
            out.append((-1, p))
    return out


def await_exit(procs: list[tuple[int, int]], timeout_s: float) -> None:
    """Wait until each of `procs` (from `doomed`) has exited, its memory (device memory included) released; closes
    their pidfds. A process without a pidfd is followed by pid, until it is gone or a zombie."""
    deadline = time.monotonic() + timeout_s
    poller = select.poll()
    left = {fd for fd, _ in procs if fd >= 0}
    for fd in left:
        poller.register(fd, select.POLLIN)
    while left and time.monotonic() < deadline:
        for fd, _ in poller.poll(max(1, int(1000 * (deadline - time.monotonic())))):
            left.discard(fd)
            poller.unregister(fd)
    for fd, pid in procs:
        if fd >= 0:
            os.close(fd)
            continue
        while time.monotonic() < deadline:
            try:
                with open(f"/proc/{pid}/stat") as f:
                    state = f.read().rsplit(")", 1)[1].split()[0]
            except (OSError, IndexError):
                break
            if state in ("Z", "X"):
                break
            time.sleep(0.01)


def kill_workers() -> int:
    """Kill every worker this process started that still runs, with its process group; returns how many. For a
    command stopped with Ctrl-C: the judge's threads then see their workers gone and finish at once (their verdicts
    are not used), instead of keeping the command alive for as long as their jobs would have run."""
    current = _SPAWNER
    if current is None or current.pid != os.getpid():
        return 0
    killed = 0
    for proc in list(current.live):
        if proc.poll() is None:
            kill_group(proc)
            killed += 1
    return killed


def kill_group(proc: Any) -> None:
    """SIGKILL a worker with its process group (every worker leads a session of its own): a `subprocess.Popen`
    started here, or a forked worker's handle (`template.Forked`), which checks that its pid is still its own."""
    if isinstance(proc, subprocess.Popen):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.kill()
    else:
        proc.kill_group()


def _setpriv_pdeathsig() -> bool:
    if shutil.which("setpriv") is None:
        return False
    probe = subprocess.run(["setpriv", "--pdeathsig", "KILL", "true"], capture_output=True, timeout=30)
    return probe.returncode == 0


_SPAWNER: _Spawner | None = None
_SPAWNER_LOCK = threading.Lock()


def spawner() -> _Spawner:
    global _SPAWNER
    with _SPAWNER_LOCK:
        if _SPAWNER is None or _SPAWNER.pid != os.getpid():
            _SPAWNER = _Spawner()
        return _SPAWNER


def _me() -> str:
    """This process as an owner of scratch folders: PID namespace, pid and start time (a reused pid starts later)."""
    with open("/proc/self/stat") as f:
        started = f.read().rsplit(")", 1)[1].split()[19]
    return f"{os.readlink('/proc/self/ns/pid')} {os.getpid()} {started}"


def claim(folder: Path) -> None:
    """Record this process as `folder`'s owner, beside it (`NAME.owner`: veiled from workers like the folder)."""
    folder.with_name(folder.name + ".owner").write_text(_me())


def release(folder: Path) -> None:
    """Remove `folder` and its owner record."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.with_name(folder.name + ".owner").unlink(missing_ok=True)


_SWEPT: set[tuple[int, str]] = set()


def sweep_stale(root: str) -> int:
    """Remove the scratch folders under `root` whose owner (a judge killed outright, which removes nothing) is gone;
    once per process and root. Only owners of this PID namespace are judged (another's pids cannot be looked up);
    folders without an owner record are left alone. Returns how many were removed."""
    if (os.getpid(), root) in _SWEPT:
        return 0
    _SWEPT.add((os.getpid(), root))
    ns, removed = os.readlink("/proc/self/ns/pid"), 0
    for record in Path(root).glob("kz-*.owner"):
        try:
            owner_ns, pid, started = record.read_text().split()
            with open(f"/proc/{pid}/stat") as f:
                alive = f.read().rsplit(")", 1)[1].split()[19] == started
        except FileNotFoundError:
            alive = False
        except (OSError, ValueError, IndexError):
            continue
        if owner_ns == ns and not alive:
            release(record.with_suffix(""))
            removed += 1
    return removed
