"""The sandbox: runs one untrusted job in a fresh worker process and talks to it over an authenticated private channel.

What is isolated (when `unshare` works, i.e. as root on Linux; `Sandbox.isolation` says which mode ran):
- processes: the worker is PID 1 of its own PID namespace, so it cannot see or signal the judge, its siblings or
  any other process (`os.kill(os.getppid(), 9)` and `os.killpg(0, 9)` hit only the worker's own namespace);
- network: a new network namespace with only a down loopback interface;
- files: a private mount namespace where every mount is re-mounted read-only except the job's scratch directory,
  other jobs' scratch directories are hidden under a fresh tmpfs (a candidate cannot read a sibling's outputs, e.g.
  a correct neighbour's in the same GRPO group, nor a reference's), and /dev/shm is a fresh private tmpfs. A
  candidate cannot leave anything for a later candidate to read;
- resources: a wall-clock timeout with a hard kill of the whole namespace, RLIMIT_CORE=0, RLIMIT_FSIZE, and on CPU
  jobs RLIMIT_AS (not on GPU jobs: CUDA reserves huge virtual ranges, so an address-space limit breaks it).
What is NOT isolated: the GPU itself (a candidate can fill device memory or fault; the worker is discarded after
one job, so a poisoned CUDA context never serves a second candidate), CPU time of other processes (no cgroup), and
reads of world-readable files. Without `unshare` (non-root), `isolation == "process"`: a new session and process
group only, which stops process-group signals but not a targeted kill of the judge.

Outputs: tensors do not travel on the channel. Each sandbox owns two memfds (`out`, `timed`) created here and
inherited by the worker; the harness writes its outputs into one as a pack (`pack.py`: each tensor copied from the
device into the file as it is produced, any size) and seals it (no write, grow or shrink,
ever again, by anyone) before it reports. The judge loads only a sealed memfd, mapped, never copied: candidate code
that runs after the harness's write (a finalizer, a signal handler) cannot change what the judge reads, and a
worker that replaces its descriptor writes into a file the judge never looks at. Big CUDA outputs stay on the GPU:
the worker exports device copies and sends their descriptors on a unix socket beside the memfd (`devmem.py`), and
the judge copies them on the device when it loads the pack, before it tells the worker anything more.

The channel: results travel on a dedicated pipe (never stdout/stderr, which the candidate controls) as
length-prefixed JSON, each message signed with HMAC-SHA256 under a per-job key and a sequence number. Printing a
fake verdict therefore does nothing. The key lives in the worker's memory, so code inside the worker could forge a
message; the judge never trusts a message for correctness (outputs are compared in the parent) and reads
every message through `messages.parse`, which checks its shape (a forged one is `rejected`, guard `channel`).
"""

from __future__ import annotations

import fcntl
import hashlib
import hmac
import json
import os
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelzero.judge.sandbox import devmem, pack, template
from kernelzero.judge.sandbox.spawn import await_exit, claim, doomed, kill_group, release, spawner, sweep_stale
from kernelzero.judge.sandbox.spawn import kill_workers as kill_workers  # what commands call on Ctrl-C

_HEADER = struct.Struct(">I")
_MAC_LEN = 32
MAX_MESSAGE = 16 * 1024 * 1024  # a message is metadata; tensors travel in sealed memfds
OUTPUTS = ("out", "timed")  # the memfds of a sandbox: a job's outputs, and outputs kept from timed calls
SEALS = fcntl.F_SEAL_WRITE | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SHRINK  # what makes a memfd's contents final

# Run inside the new namespaces, before the worker: hide every other job's scratch directory, then make everything
# read-only but our own scratch. The veil is a fresh tmpfs over the scratch root (or over /dev/shm when the scratch
# lives there, which then doubles as the job's private /dev/shm); our scratch is held on /mnt meanwhile and bound
# back in place. Where that cannot be done (no /mnt, tmpfs refused) the siblings stay visible (read-only), as before,
# and the worker's KZ_SCRATCH_VEIL says `none`.
_PRELUDE = r"""
set -e
mount --make-rprivate /
case "$KZ_SCRATCH" in
  /dev/shm/*) veil=/dev/shm; veil_opts=size=2g,mode=1777 ;;
  *) veil=$(dirname "$KZ_SCRATCH"); veil_opts=size=1m,mode=755 ;;
esac
if [ -d /mnt ] && mount --bind "$KZ_SCRATCH" /mnt 2>/dev/null; then
  if mount -t tmpfs -o "$veil_opts" kz-veil "$veil" 2>/dev/null; then
    mkdir -p "$KZ_SCRATCH"
    mount --bind /mnt "$KZ_SCRATCH"
  else
    veil=none
    mount --bind "$KZ_SCRATCH" "$KZ_SCRATCH"
  fi
  umount /mnt
else
  veil=none
  mount --bind "$KZ_SCRATCH" "$KZ_SCRATCH"
fi
export KZ_SCRATCH_VEIL="$veil"
for mp in $(awk '{print $5}' /proc/self/mountinfo | sort -u); do
  case "$mp" in
    /proc|/proc/*|/dev|/dev/pts|/dev/shm|/sys|/sys/*|"$KZ_SCRATCH") ;;
    *) mount -o remount,bind,ro "$mp" 2>/dev/null || true ;;
  esac
done
if [ "$veil" != /dev/shm ]; then mount -t tmpfs -o size=2g,mode=1777 kz-shm /dev/shm 2>/dev/null || true; fi
set +e
"$@"
rc=$?
if [ "$rc" -gt 128 ]; then echo "kz-prelude: the worker was killed by signal $((rc - 128))" >&2; fi
exit "$rc"
"""
# The prelude stays as the namespace's PID 1 and waits for the worker instead of exec'ing it: `unshare --fork` turns
# a child killed by a signal into `unshare: sigprocmask unblock failed` (exit 1), which hid why a worker died (it was
# SIGXFSZ: outputs past the file size limit). The shell exits 128 + the signal, which `describe_exit` names.

SHM_MIN_FREE = 16 * 2**30  # /dev/shm holds job scratch (outputs and reference results) only when this much is free


def default_scratch_root() -> str:
    """Where job scratch directories go: $KERNELZERO_SCRATCH, else /dev/shm/kernelzero-scratch when /dev/shm is a
    roomy tmpfs (outputs cross between processes as files: RAM speed instead of disk speed), else the temp dir."""
    root = os.environ.get("KERNELZERO_SCRATCH")
    if not root:
        try:
            shm = os.statvfs("/dev/shm")
            roomy = shm.f_bavail * shm.f_frsize >= SHM_MIN_FREE and os.access("/dev/shm", os.W_OK)
        except OSError:
            roomy = False
        root = "/dev/shm/kernelzero-scratch" if roomy else os.path.join(tempfile.gettempdir(), "kernelzero-scratch")
    os.makedirs(root, mode=0o700, exist_ok=True)
    return root


def describe_exit(returncode: int | None) -> str:
    """How a worker ended, in words: `exited (code 1)`, `killed by signal 25 (SIGXFSZ)`. Under namespaces the
    prelude reports a signal as exit code 128 + signal."""
    if returncode is None:
        return "ended"
    sig = -returncode if returncode < 0 else returncode - 128 if returncode > 128 else 0
    if sig:
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = "?"
        return f"killed by signal {sig} ({name})"
    return f"exited (code {returncode})"


class ChannelError(Exception):
    """The worker's channel broke or carried a message that failed authentication."""


class Channel:
    """One direction of signed, sequenced, length-prefixed JSON messages over a file descriptor."""

    def __init__(self, fd: int, key: bytes):
        self.fd, self.key, self.seq = fd, key, 0

    def _mac(self, payload: bytes) -> bytes:
        return hmac.new(self.key, struct.pack(">Q", self.seq) + payload, hashlib.sha256).digest()

    def send(self, msg: dict[str, Any]) -> None:
        payload = json.dumps(msg).encode()
        data = _HEADER.pack(len(payload)) + payload + self._mac(payload)
        view = memoryview(data)
        while view:
            n = os.write(self.fd, view)
            view = view[n:]
        self.seq += 1

    def recv(self, deadline: float) -> dict[str, Any] | None:
        """The next authenticated message, None at end of stream; raises TimeoutError past `deadline`."""
        header = self._read_exact(_HEADER.size, deadline)
        if header is None:
            return None
        (length,) = _HEADER.unpack(header)
        if length > MAX_MESSAGE:
            raise ChannelError(f"message of {length} bytes exceeds {MAX_MESSAGE}")
        body = self._read_exact(length + _MAC_LEN, deadline)
        if body is None:
            raise ChannelError("channel closed inside a message")
        payload, mac = body[:length], body[length:]
        if not hmac.compare_digest(mac, self._mac(payload)):
            raise ChannelError("message failed authentication")
        self.seq += 1
        return json.loads(payload)

    def _read_exact(self, n: int, deadline: float) -> bytes | None:
        buf = bytearray()
        while len(buf) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            poller = select.poll()  # not select(): a busy judge holds descriptors past select's 1,024
            poller.register(self.fd, select.POLLIN)
            if not poller.poll(left * 1000):
                raise TimeoutError
            chunk = os.read(self.fd, n - len(buf))
            if not chunk:
                if buf:
                    raise ChannelError("channel closed inside a message")
                return None
            buf += chunk
        return bytes(buf)


def _ordinal(device: str) -> int:
    import torch

    index = torch.device(device).index
    return torch.cuda.current_device() if index is None else index


def _receive_copies(sock: socket.socket | None, name: str, sizes: list[int], ordinal: int) -> list:
    if sock is None:
        raise pack.PackError("the worker has no device channel")
    return devmem.receive(sock, name, sizes, ordinal)


def load_sealed(fd: int, name: str, device_copies=None) -> Any:
    """The pack (`pack.py`) a worker wrote into memfd `fd` and sealed, its tensors mapped from the file (no copy),
    its device entries from `device_copies` (`pack.read`). Raises ChannelError when it is not sealed (its contents
    could still change), empty or not a well-formed pack."""
    import torch

    try:
        seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS)
    except OSError as exc:
        raise ChannelError(f"the {name} outputs are not a sealable memfd: {exc}") from None
    if seals & SEALS != SEALS:
        raise ChannelError(f"the worker did not seal its {name} outputs (their contents could still change)")
    if os.fstat(fd).st_size == 0:
        raise ChannelError(f"the worker wrote no {name} outputs")
    try:
        return pack.read(fd, torch, device_copies)
    except pack.PackError as exc:
        raise ChannelError(f"the {name} outputs are not a well-formed pack: {exc}") from None


def _namespaces_available() -> bool:
    if os.environ.get("KERNELZERO_SANDBOX", "") == "process" or shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        ["unshare", "--pid", "--fork", "--net", "--mount", "--kill-child", "--mount-proc", "true"],
        capture_output=True,
        timeout=30,
    )
    return probe.returncode == 0


_NAMESPACES: bool | None = None


def isolation_mode() -> str:
    """`namespaces` where unshare works (root on Linux), else `process`."""
    global _NAMESPACES
    if _NAMESPACES is None:
        _NAMESPACES = _namespaces_available()
    return "namespaces" if _NAMESPACES else "process"


@dataclass
class WorkerExit:
    returncode: int | None
    timed_out: bool
    log_tail: str  # last lines of the worker's stdout+stderr, for feedback


@dataclass
class Sandbox:
    """One worker process running `kernelzero.judge.sandbox.worker` on one job, in its own scratch dir: forked from
    its environment's template (`template.py`: torch already imported) where one serves, else a fresh Python."""

    job: dict[str, Any]
    device: str = "cpu"
    memory_limit_gb: float = 16.0  # RLIMIT_AS on CPU jobs only
    file_limit_gb: float = 0.0  # RLIMIT_FSIZE; 0: the machine's memory (outputs live in memfds, i.e. in RAM)
    extra_env: dict[str, str] = field(default_factory=dict)
    scratch_root: str | None = None

    def __post_init__(self) -> None:
        root = self.scratch_root or default_scratch_root()
        sweep_stale(root)
        self.scratch = Path(tempfile.mkdtemp(prefix="kz-job-", dir=root))
        claim(self.scratch)
        self.isolation = isolation_mode()
        self._key = os.urandom(32)
        self._proc: subprocess.Popen | None = None
        self._log = None
        self._chan: Channel | None = None
        self._outputs: dict[str, int] = {}  # memfd per OUTPUTS name, created with the worker
        self._device: socket.socket | None = None  # where device outputs' descriptors arrive (`devmem`)
        self._device_child = -1  # the worker's end, by its descriptor number there
        self._doomed: list[tuple[int, int]] = []  # what `kill` must see exit before `finish` returns (`spawn.doomed`)

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        """Send the job (spawning the worker first unless `spawn` already did)."""
        if self._proc is None:
            self.spawn()
        self._write_stdin({**self.job, "key": self._key.hex(), "scratch": str(self.scratch),
                           "output_fds": self._outputs, "device_fd": self._device_child})  # fmt: skip

    def spawn(self) -> None:
        """Start the worker process without a job: it imports torch and waits on stdin (see `WarmSandboxes`)."""
        r_fd, w_fd = os.pipe()
        self._outputs = {name: os.memfd_create(f"kz-{name}", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING) for name in OUTPUTS}
        self._device, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self._device_child = child.fileno()
        self._log = open(self.scratch / "worker.log", "wb")
        env, fds = self._env(), (w_fd, self._device_child, *self._outputs.values())
        namespaces = self.isolation == "namespaces"
        self._proc = template.fork_worker(env, str(w_fd), fds, self._log.fileno(), self.scratch, namespaces)
        if self._proc is None:  # no template for this environment: a fresh Python through the exec chain
            cmd = [sys.executable, "-m", "kernelzero.judge.sandbox.worker", str(w_fd)]
            if namespaces:
                cmd = ["unshare", "--pid", "--fork", "--net", "--mount", "--kill-child", "--mount-proc",
                       "sh", "-c", _PRELUDE, "kz-prelude", *cmd]  # fmt: skip
            self._proc = spawner().popen(  # dies with the judge: see spawn._Spawner
                cmd, stdin=subprocess.PIPE, stdout=self._log, stderr=subprocess.STDOUT, pass_fds=fds, env=env,
                cwd=self.scratch, start_new_session=True,  # its own process group: killpg(0) inside cannot reach us
            )  # fmt: skip
        os.close(w_fd)
        child.close()
        self._chan = Channel(r_fd, self._key)

    @property
    def forked(self) -> bool:
        """Whether the worker was forked from a template (`template.py`), not started as a fresh Python."""
        return isinstance(self._proc, template.Forked)

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def _env(self) -> dict[str, str]:
        src = str(Path(__file__).resolve().parents[3])  # the directory holding the kernelzero package
        keep = ("PATH", "LANG", "LC_ALL", "CXX", "CC", "CUDA_HOME", "CUDA_PATH", "LD_LIBRARY_PATH",
                "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE",
                "NCCL_NVLS_ENABLE", "TORCH_CUDA_ARCH_LIST", "PYENV_VERSION", "VIRTUAL_ENV")  # fmt: skip
        env = {k: os.environ[k] for k in keep if k in os.environ}
        pythonpath = [src, *os.environ.get("PYTHONPATH", "").split(os.pathsep)]
        env.update(
            HOME=str(self.scratch),
            TMPDIR=str(self.scratch),
            KZ_SCRATCH=str(self.scratch),
            KZ_DEVICE=self.device,  # a warm worker readies this device's runtime before its job arrives
            PYTHONPATH=os.pathsep.join(p for p in pythonpath if p),
            PYTHONDONTWRITEBYTECODE="1",
            PYTHONUNBUFFERED="1",
            TRITON_CACHE_DIR=str(self.scratch / "triton"),
            TORCH_EXTENSIONS_DIR=str(self.scratch / "torch_extensions"),
            OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"),
            KZ_RLIMITS=self._rlimits(),
        )
        if self.device == "cpu":
            env["TRITON_INTERPRET"] = "1"  # Triton kernels run on CPU tensors under the interpreter
            env["CUDA_VISIBLE_DEVICES"] = ""
        env.update(self.extra_env)
        return env

    def _rlimits(self) -> str:
        """The worker's resource limits, which it applies to itself before reading its job (`worker.apply_limits`).

        Not a `preexec_fn`: that runs Python between fork and exec, and CPython then takes the import and logging
        locks around the fork, so a fork while another judge thread is importing deadlocks (seen on the H200: a
        warm-sandbox spawn against the build farm's background import). The candidate runs only after the limits
        are in place, so setting them in the worker is as strong as setting them in the child before exec.
        """
        fsize = self.file_limit_gb * 2**30 or max(8 * 2**30, os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
        limits = {"core": 0, "fsize": int(fsize)}
        if self.device == "cpu" and self.memory_limit_gb > 0:
            limits["as"] = int(self.memory_limit_gb * 2**30)
        return ",".join(f"{k}={v}" for k, v in limits.items())

    def _write_stdin(self, msg: dict[str, Any]) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        try:
            self._proc.stdin.write((json.dumps(msg) + "\n").encode())
            self._proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass  # the worker died; recv() reports it

    def send(self, msg: dict[str, Any]) -> None:
        """Tell the worker something (e.g. `{"cmd": "time"}` once the GPU is free). Unsigned: the worker trusts us."""
        self._write_stdin(msg)

    def recv(self, deadline: float) -> dict[str, Any] | None:
        """Next authenticated message from the worker; None when it closed the channel (exited)."""
        assert self._chan is not None
        return self._chan.recv(deadline)

    def output_bytes(self) -> int:
        """Bytes the worker has written into its output memfds (host memory they hold)."""
        return sum(os.fstat(fd).st_size for fd in self._outputs.values())

    def load_output(self, name: str, device: str | None = None) -> Any:
        """What the worker sealed into its `name` memfd (`load_sealed`), its device outputs copied onto `device` (a
        CUDA device of this process, the worker's GPU; None: a pack naming device outputs is refused). Call it on
        the worker's report and before sending the worker anything more: the copies are the snapshot."""
        ordinal = None if device is None or not device.startswith("cuda") else _ordinal(device)
        fetch = None if ordinal is None else (lambda sizes: _receive_copies(self._device, name, sizes, ordinal))
        return load_sealed(self._outputs[name], name, fetch)

    def kill(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            if not self._doomed:  # a second kill before `finish` keeps the first's pidfds
                self._doomed = doomed(self._proc.pid)  # the worker itself, below its session leader and PID 1
            kill_group(self._proc)  # with namespaces: kills the leader, PID 1 and so all

    def finish(self, timed_out: bool = False) -> WorkerExit:
        """Stop the worker (hard), collect its exit and log tail. Safe to call twice."""
        self.kill()
        rc = self._proc.wait() if self._proc is not None else None
        # unshare dies at once; the worker's GPU memory comes back only when the worker itself has exited, and a
        # next job admitted on its released bytes before that ran out of memory (KernelBench's 7 GB RMSNorm).
        doomed_procs, self._doomed = self._doomed, []
        await_exit(doomed_procs, timeout_s=20.0)
        if self._chan is not None:
            os.close(self._chan.fd)
            self._chan = None
        if self._device is not None:
            self._device.close()  # descriptors the worker sent and nobody received are closed with it
            self._device = None
        if self._log is not None:
            self._log.close()
            self._log = None
        return WorkerExit(returncode=rc, timed_out=timed_out, log_tail=self.log_tail())

    def log_tail(self, n_bytes: int = 4000) -> str:
        try:
            data = (self.scratch / "worker.log").read_bytes()
        except OSError:
            return ""
        return data[-n_bytes:].decode(errors="replace")

    def cleanup(self) -> None:
        """Remove the scratch directory and close the output memfds (tensors loaded from them stay valid)."""
        for fd in self._outputs.values():
            os.close(fd)
        self._outputs = {}
        release(self.scratch)

    def __enter__(self) -> Sandbox:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.finish()
        self.cleanup()


class WarmSandboxes:
    """Workers spawned ahead of need, so a job does not wait for a process start and `import torch` (seconds).

    Each is used for one job only, as any Sandbox: warmth never carries state from one candidate to the next (no
    candidate has run in a warm worker before its job arrives). A warm worker found dead is discarded, not used.
    """

    def __init__(self, size: int, device: str, memory_limit_gb: float, extra_env: dict[str, str] | None = None,
                 prewarm: bool = True):  # fmt: skip
        """prewarm: also pay the judging first-use costs before the job (`worker.prewarm`); builds need only torch."""
        self.size, self.device, self.memory_limit_gb = size, device, memory_limit_gb
        self.extra_env = dict(extra_env or {})  # a cold sandbox's: its first-use costs fall where its job needs them
        self._spawn_env = {**self.extra_env, **({"KZ_PREWARM": "1"} if prewarm else {})}
        self._ready: list[Sandbox] = []
        self._spawning = 0  # spawns under way: with `_ready`, never more than `size` idle workers
        self._lock = threading.Lock()
        self._closed = False
        # Filled in the background: a judge's start does not wait for its worker template (importing torch and
        # prewarming: seconds) nor for `size` forks in turn; a job that comes first takes a cold sandbox, whose
        # start waits for the template already starting here.
        threading.Thread(target=self._fill, name="kz-warm-fill", daemon=True).start()

    def _fill(self) -> None:
        for _ in range(self.size):
            if not self._add():
                return

    def _add(self) -> bool:
        """Spawn one worker into the idle list unless it is full or closed; False where nothing was spawned."""
        with self._lock:
            if self._closed or len(self._ready) + self._spawning >= self.size:
                return False
            self._spawning += 1
        sb, spawned = None, False
        try:
            sb = Sandbox(job={}, device=self.device, memory_limit_gb=self.memory_limit_gb, extra_env=self._spawn_env)
            sb.spawn()
            spawned = True
        except BaseException:
            if sb is not None:
                sb.finish()
                sb.cleanup()
            raise
        finally:
            with self._lock:
                self._spawning -= 1
                kept = spawned and not self._closed
                if kept:
                    self._ready.append(sb)
        if not kept:
            sb.finish()
            sb.cleanup()
        return kept

    def take(self, job: dict[str, Any]) -> Sandbox:
        """A sandbox for `job`: a warm one if one is alive, else a fresh (cold) one. Refills in the background."""
        sb = None
        with self._lock:
            while self._ready and sb is None:
                cand = self._ready.pop(0)
                if cand.alive():
                    sb = cand
                else:
                    cand.finish()
                    cand.cleanup()
        if not self._closed:
            threading.Thread(target=self._add, daemon=True).start()
        if sb is None:
            return Sandbox(job=job, device=self.device, memory_limit_gb=self.memory_limit_gb,
                           extra_env=dict(self.extra_env))  # fmt: skip
        sb.job = job
        return sb

    def close(self) -> None:
        with self._lock:
            self._closed = True
            ready, self._ready = self._ready, []
        for sb in ready:
            sb.finish()
            sb.cleanup()
