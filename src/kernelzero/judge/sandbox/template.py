"""Worker templates: one prewarmed Python per worker environment forks every worker, instead of a fresh Python each.

A fresh worker costs about 2.3 CPU seconds before its job (`import torch`, the op recorder's first op importing
torch._dynamo, Triton's import; `bench/worker_start.py`), and a batch of 64 candidates starts about 120 workers
(references, candidates, builds, checks) beside its builds. A template pays that once, on the CPU side only (CUDA
is never touched there: a CUDA context does not survive a fork), then forks. Each fork does what the exec chain
(`setpriv` -> `unshare` -> the shell prelude of `process.py` -> `python -m ...worker`) did, in the same order, before
the worker reads its job (the template's side is `template_main.py`):

    template        the judge's namespaces; runs no job code; single-threaded (checked before it serves)
    └ leader        a session of its own (the judge kills its process group), dies with the template, holds the
      │             job's descriptors at the numbers the judge gave them, the job's environment and directory;
      │             with namespaces: unshare(mount, net, pid); reports PID 1's exit on the status pipe
      └ PID 1       of the new PID namespace: its /proc, the scratch veil and read-only remounts (mount(2), as the
        │           prelude does with `mount`), then it waits for the worker and exits as the worker did
        └ worker    `worker.main`: limits, niceness, CUDA (after the fork), the job
Without namespaces (isolation `process`) the leader forks the worker directly.

The judge holds the leader's pid and a pidfd for it: a handle signals the leader only while that very process lives,
never a process that reused its pid. The template shares nothing with the worker but memory pages (copy-on-write):
its control socket is closed in every fork before anything else runs, and it never holds a job's key.
`KERNELZERO_WORKER_TEMPLATE=0` turns templates off (every worker then starts through the exec chain); a template
that cannot start or serve (more than one thread, CUDA's driver initialised, a failed fork) is reported once and its
environment falls back to the exec chain.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from kernelzero.judge.sandbox.spawn import claim, release, spawner

PER_JOB = ("HOME", "TMPDIR", "KZ_SCRATCH", "TRITON_CACHE_DIR", "TORCH_EXTENSIONS_DIR", "KZ_RLIMITS", "KZ_NICE",
           "KZ_PREWARM")  # fmt: skip
"""Environment variables that differ between jobs of one template: set in each fork, never read by the template."""
READY_TIMEOUT_S = 300.0  # a template's start: torch's import and the CPU prewarm (seconds on an idle machine)


class TemplateError(Exception):
    """A template could not start or could not fork a worker."""


class Forked:
    """A forked worker as the judge sees it, shaped as the `subprocess.Popen` it replaces: `pid` (the leader's),
    `stdin`, `poll`, `wait`, `kill`, `returncode` (the leader's report: the worker's exit code, 128 + signal under
    namespaces as the prelude reports it, minus the signal without; -9 when the leader itself was killed)."""

    def __init__(self, pid: int, pidfd: int, status_fd: int, stdin_fd: int):
        self.pid, self._pidfd, self._status = pid, pidfd, status_fd
        self.stdin = open(stdin_fd, "wb")
        self.returncode: int | None = None
        self._data = b""
        self._lock = threading.Lock()  # a Ctrl-C's `kill_workers` and the sandbox's own `finish` may meet here

    def poll(self) -> int | None:
        self._collect(0.0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.returncode is None:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise subprocess.TimeoutExpired("worker", timeout or 0.0)
            self._collect(0.2 if left is None else min(left, 0.2))  # in slices: a kill waits for the lock meanwhile
        return self.returncode

    @staticmethod
    def _readable(fd: int, timeout_s: float) -> bool:
        poller = select.poll()  # not select(): descriptors past 1,024 are common in a busy judge
        poller.register(fd, select.POLLIN)
        return bool(poller.poll(int(timeout_s * 1000)))

    def _collect(self, timeout_s: float) -> None:
        """Read the leader's report if it has come (waiting up to `timeout_s`); at its end, close what is ours."""
        with self._lock:
            if self.returncode is not None or not self._readable(self._status, timeout_s):
                return
            chunk = os.read(self._status, 64)
            if chunk:
                self._data += chunk
                return
            text = self._data.decode().strip()
            self.returncode = int(text) if text.lstrip("-").isdigit() else -signal.SIGKILL
            os.close(self._status)  # the status pipe ends when the leader exits (nothing else holds it): its pidfd
            os.close(self._pidfd)  # has nothing left to signal
            self._pidfd = -1
            with contextlib.suppress(OSError):
                self.stdin.close()

    def _signal(self, group: bool) -> None:
        """SIGKILL the leader (and its process group) while the pidfd says it has not exited: until then its pid,
        and so its group's id, is its own."""
        self._collect(0.0)
        with self._lock:
            if self.returncode is not None or self._readable(self._pidfd, 0.0):
                return
            if group:  # no such group yet when the leader has not reached its setsid(): it has no children then
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)

    def kill(self) -> None:
        self._signal(group=False)

    def kill_group(self) -> None:
        self._signal(group=True)


class Template:
    """One template process and its control socket; `fork` is safe from any thread (requests are serialised)."""

    def __init__(self, env: dict[str, str], log_path: Path):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        with open(log_path, "wb") as log:
            cmd = [sys.executable, "-m", "kernelzero.judge.sandbox.template_main", str(theirs.fileno())]
            self.proc = spawner().popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                        pass_fds=(theirs.fileno(),), env=env, start_new_session=True)  # fmt: skip
        spawner().live.discard(self.proc)  # not a worker: Ctrl-C's `kill_workers` leaves it to serve the next command
        theirs.close()
        self.log_path, self._sock, self._lock = log_path, ours, threading.Lock()
        ours.settimeout(READY_TIMEOUT_S)
        try:
            reply = json.loads(ours.recv(65536) or b'{"error": "it exited before it was ready"}')
        except (OSError, ValueError) as exc:
            reply = {"error": f"no ready message ({exc})"}
        if "error" in reply:
            self.close()
            raise TemplateError(f"{reply['error']} (log: {log_path})")
        ours.settimeout(30.0)

    def fork(self, request: dict[str, Any], fds: list[int]) -> tuple[int, int]:
        """Ask for one worker; returns its leader's pid and a pidfd for it."""
        with self._lock:
            try:
                socket.send_fds(self._sock, [json.dumps(request).encode()], fds)
                msg, got, _, _ = socket.recv_fds(self._sock, 65536, 1)
            except OSError as exc:
                raise TemplateError(f"the template did not answer: {exc}") from None
        reply = json.loads(msg or b'{"error": "the template exited"}')
        if "error" in reply or len(got) != 1:
            for fd in got:
                os.close(fd)
            raise TemplateError(reply.get("error", "no pidfd came back"))
        return int(reply["pid"]), got[0]

    def close(self) -> None:
        self._sock.close()  # the template's loop ends at this; the kill is for one still starting
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()
        self.proc.wait()


_TEMPLATES: dict[tuple, Template | None] = {}  # by environment; None: it failed, the exec chain serves it
_TEMPLATES_ALL: list[Template] = []  # every one started, retired ones too (their folders go at exit)
_TEMPLATES_LOCK = threading.Lock()
_STARTING: dict[tuple, threading.Lock] = {}
_REPORTED: set[str] = set()


def _report_once(message: str) -> None:
    if message not in _REPORTED:
        _REPORTED.add(message)
        print(f"kernelzero: {message}", file=sys.stderr)


def _retire(tmpl: Template, why: str) -> None:
    """A template that failed serves no more: its environment's workers start through the exec chain."""
    with _TEMPLATES_LOCK:
        for key, value in list(_TEMPLATES.items()):
            if value is tmpl:
                _TEMPLATES[key] = None
    tmpl.close()
    _report_once(why)


@atexit.register
def close_all() -> None:
    """Stop every template of this process and remove its folder (a killed judge's templates die with it)."""
    with _TEMPLATES_LOCK:
        templates, _TEMPLATES_ALL[:] = list(_TEMPLATES_ALL), []
        _TEMPLATES.clear()
    for tmpl in templates:
        tmpl.close()
        release(tmpl.log_path.parent)



def summary() -> dict[str, int]:
    """How many worker environments of this process have a serving template, and how many fell back to the exec
    chain (a template that could not start or failed): for benchmark records and GPU checks."""
    with _TEMPLATES_LOCK:
        values = [v for k, v in _TEMPLATES.items() if k[0] == os.getpid()]
    return {"serving": sum(v is not None for v in values), "fallback": sum(v is None for v in values)}


def enabled() -> bool:
    return os.environ.get("KERNELZERO_WORKER_TEMPLATE", "1") != "0"


def template_for(env: dict[str, str], scratch_root: str) -> Template | None:
    """The template serving workers of `env` (one per environment, less its per-job variables; started on first
    use), or None where templates are off or this environment's template failed (reported once, on stderr)."""
    if not enabled():
        return None
    key = (os.getpid(), *sorted((k, v) for k, v in env.items() if k not in PER_JOB))
    with _TEMPLATES_LOCK:
        if key in _TEMPLATES:
            return _TEMPLATES[key]
        starting = _STARTING.setdefault(key, threading.Lock())
    with starting:  # one start per environment; spawns of other environments do not wait for it
        with _TEMPLATES_LOCK:
            if key in _TEMPLATES:
                return _TEMPLATES[key]
        home = tempfile.mkdtemp(prefix="kz-template-", dir=scratch_root)
        claim(Path(home))
        tenv = {k: v for k, v in env.items() if k not in PER_JOB}
        tenv.update(HOME=home, TMPDIR=home, PYTORCH_NVML_BASED_CUDA_CHECK="1")  # is_available without cuInit
        # one thread for the template whatever the workers get (a second thread makes a process unfit to fork: an
        # OpenBLAS or OpenMP pool started by the import); each fork sets torch's count from its own OMP_NUM_THREADS
        tenv.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
        try:
            tmpl: Template | None = Template(tenv, Path(home) / "template.log")
        except (TemplateError, OSError) as exc:
            tmpl = None
            _report_once(f"worker template unavailable, workers start fresh: {exc}")
        with _TEMPLATES_LOCK:
            _TEMPLATES[key] = tmpl
            if tmpl is not None:
                _TEMPLATES_ALL.append(tmpl)
        return tmpl


def fork_worker(env: dict[str, str], chan_arg: str, pass_fds: tuple[int, ...], log_fd: int, cwd: Path,
                namespaces: bool) -> Forked | None:  # fmt: skip
    """A worker for `Sandbox.spawn` forked from its environment's template, with `pass_fds` at the same numbers,
    stdout and stderr on `log_fd` and a new stdin pipe; None when no template serves `env` (start it the old way)."""
    tmpl = template_for(env, str(cwd.parent))
    if tmpl is None:
        return None
    stdin_r, stdin_w = os.pipe()
    status_r, status_w = os.pipe()
    fds = [stdin_r, log_fd, log_fd, status_w, *pass_fds]
    request = {"targets": [0, 1, 2, -1, *pass_fds], "env": env, "cwd": str(cwd), "namespaces": namespaces,
               "argv": [chan_arg]}  # fmt: skip
    try:
        pid, pidfd = tmpl.fork(request, fds)
    except TemplateError as exc:
        for fd in (stdin_w, status_r):
            os.close(fd)
        _retire(tmpl, f"worker template failed, workers of its environment start fresh from now: {exc}")
        return None
    finally:
        os.close(stdin_r)
        os.close(status_w)
    proc = Forked(pid, pidfd, status_r, stdin_w)
    spawner().live.add(proc)  # for `kill_workers`
    return proc
