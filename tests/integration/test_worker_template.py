"""Workers forked from a template (`sandbox/template.py`) are isolated as the exec chain's are, and die as they do.

Each test inspects a live worker from outside, through /proc, the way an auditor would: its namespaces, its mounts,
its descriptors, its process tree. The exec chain's worker (templates off) is the reference where one is needed.
"""

import gc
import os
import select
import signal
import time
from pathlib import Path

import pytest

from kernelzero.judge import JudgeOptions, core
from kernelzero.judge.core import Judge
from kernelzero.judge.sandbox import template, template_main
from kernelzero.judge.sandbox.process import Sandbox, describe_exit, isolation_mode
from kernelzero.judge.sandbox.spawn import descendants
from kernelzero.tasks import Task

FIX = Path(__file__).parents[1] / "fixtures" / "judge"
namespaces_only = pytest.mark.skipif(isolation_mode() != "namespaces", reason="needs unshare (root on Linux)")


def _worker_pid(sb: Sandbox, timeout_s: float = 60.0) -> int:
    """The worker under the sandbox's leader, once it has set its limits (a file size limit: none before)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        kids = descendants(sb._proc.pid)
        if kids:
            pid = kids[-1]
            try:
                with open(f"/proc/{pid}/limits") as f:
                    fsize = next(line for line in f if line.startswith("Max file size"))
                if fsize.split()[3] != "unlimited":
                    return pid
            except (OSError, StopIteration):
                pass
        time.sleep(0.05)
    raise AssertionError("the worker did not come up")


def _spawned(templated: bool, monkeypatch) -> Sandbox:
    monkeypatch.setenv("KERNELZERO_WORKER_TEMPLATE", "1" if templated else "0")
    sb = Sandbox(job={})
    sb.spawn()
    assert isinstance(sb._proc, template.Forked) == templated
    return sb


def _open_fds() -> set[tuple[str, str]]:
    """This process's descriptors and what each points to (the listing's own descriptor is gone when read)."""
    out = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            out.add((fd, os.readlink(f"/proc/self/fd/{fd}")))
        except FileNotFoundError:
            pass
    return out


def _mounts(pid: int) -> dict[str, tuple[str, str]]:
    """Mount point -> (per-mount options, filesystem type) as the worker sees them (the topmost of a point)."""
    out = {}
    with open(f"/proc/{pid}/mountinfo") as f:
        for line in f:
            fields = line.split()
            sep = fields.index("-")
            out[fields[4]] = (fields[5], fields[sep + 1])  # options, filesystem type
    return out


@namespaces_only
def test_a_forked_worker_has_the_exec_chains_namespaces_mounts_and_descriptors(monkeypatch):
    seen = {}
    for templated in (True, False):
        sb = _spawned(templated, monkeypatch)
        try:
            pid = _worker_pid(sb)
            ns = {n: os.readlink(f"/proc/{pid}/ns/{n}") for n in ("pid", "net", "mnt")}
            with open(f"/proc/{pid}/status") as f:
                nspid = next(line for line in f if line.startswith("NSpid")).split()[1:]
            mounts = _mounts(pid)
            fds = {int(n) for n in os.listdir(f"/proc/{pid}/fd")}
            seen[templated] = (sb, pid, ns, nspid, mounts, fds)
            for name, link in ns.items():  # its own namespaces, not ours
                assert link != os.readlink(f"/proc/self/ns/{name}"), name
            assert len(nspid) == 2  # a pid here and one in its own namespace, under a PID 1 that waits for it
            assert nspid[-1] == "2" or not templated  # (the exec chain's prelude ran `mount`s as pids 2, 3, ...)
            with open(f"/proc/{pid}/net/dev") as f:
                assert [line.split(":")[0].strip() for line in f.readlines()[2:]] == ["lo"]
            scratch = str(sb.scratch)
            assert "rw" in mounts[scratch][0].split(",")  # its own scratch is writable ...
            veil = os.path.dirname(scratch) if not scratch.startswith("/dev/shm/") else "/dev/shm"
            assert mounts[veil][1] == "tmpfs" and mounts[veil][0].split(",")[0] == "rw"  # ... its siblings veiled
            for point, (opts, _) in mounts.items():  # and every other mount read-only
                if point in (scratch, veil, "/proc", "/dev", "/dev/pts", "/dev/shm", "/sys") or \
                        point.startswith(("/proc/", "/sys/")):  # fmt: skip
                    continue
                assert opts.split(",")[0] == "ro", (templated, point, opts)
            expected = {0, 1, 2, sb._device_child, *sb._outputs.values()}
            assert expected <= fds
            assert len(fds - expected) == 1, fds  # the channel's write end, at the number the judge gave it
        finally:
            sb.finish()
            sb.cleanup()
    # the same set of read-only mount points either way (the veil, /proc and /dev/shm differ by scratch only)
    forked, chained = (set(seen[t][4]) - {str(seen[t][0].scratch)} for t in (True, False))
    assert forked == chained


@namespaces_only
def test_killing_a_forked_sandbox_ends_its_whole_namespace(monkeypatch):
    sb = _spawned(True, monkeypatch)
    try:
        pid = _worker_pid(sb)
        tree = [sb._proc.pid, *descendants(sb._proc.pid)]
        assert len(tree) == 3 and tree[-1] == pid  # leader, PID 1, worker
        handles = [os.pidfd_open(p) for p in tree]  # each names its process only: pids are reused (pid_max 32768)
        exit_ = sb.finish()
        assert exit_.returncode == -signal.SIGKILL  # the leader was killed: it reported nothing
        poller = select.poll()
        for h in handles:
            poller.register(h, select.POLLIN)
        deadline = time.monotonic() + 20
        while len(poller.poll(100)) < len(handles) and time.monotonic() < deadline:
            pass
        assert len(poller.poll(0)) == len(handles)  # all three have exited
        for h in handles:
            os.close(h)
    finally:
        sb.cleanup()


def test_workers_die_with_their_template_and_the_next_ones_start_fresh(monkeypatch):
    sb = _spawned(True, monkeypatch)
    later = None
    try:
        pid = _worker_pid(sb)
        with open(f"/proc/{sb._proc.pid}/stat") as f:  # the template that forked this sandbox's leader
            parent = int(f.read().rsplit(")", 1)[1].split()[1])
        tmpl = next(t for t in template._TEMPLATES.values() if t is not None and t.proc.pid == parent)
        handle = os.pidfd_open(pid)  # names the worker only (a pid may be reused once it is gone)
        tmpl.proc.kill()
        tmpl.proc.wait()
        poller = select.poll()
        poller.register(handle, select.POLLIN)
        assert poller.poll(20_000)  # the worker exited: the parent-death chain, template, leader, PID 1
        os.close(handle)
        assert sb._proc.wait(timeout=20) is not None
        later = Sandbox(job={})
        later.spawn()  # the dead template is retired: this worker comes through the exec chain
        assert not isinstance(later._proc, template.Forked)
        assert later.alive()
    finally:
        for s in (sb, later):
            if s is not None:
                s.finish()
                s.cleanup()
        template.close_all()


def test_a_forked_worker_runs_in_its_jobs_environment(monkeypatch):
    """A candidate (static rules off, as a probe) that stays correct only if HOME, the temp dir and the working
    directory are its own scratch, not the template's: what torch's import cached there must not leak into a job."""
    monkeypatch.setattr(core, "STATIC_CHECKS", [])
    monkeypatch.setenv("KERNELZERO_WORKER_TEMPLATE", "1")
    probe = (FIX / "relu_triton_ok.py").read_text().replace(
        "class ModelNew",
        "import os, tempfile\n"
        "SCRATCH = os.environ['KZ_SCRATCH']\n"
        "MINE = os.environ['HOME'] == SCRATCH and tempfile.gettempdir() == SCRATCH and os.getcwd() == SCRATCH\n"
        "assert MINE, (os.environ['HOME'], tempfile.gettempdir(), os.getcwd(), SCRATCH)\n\n\n"
        "class ModelNew",
        1,
    )
    v = Judge(JudgeOptions(device="cpu", trials=2)).judge(Task.from_file(FIX / "relu_task.py"), probe, "triton")
    assert v.status == "ok", v.feedback
    assert v.env["worker"] == "forked"  # the verdict says how its worker started


def test_a_process_with_threads_is_unfit_to_be_a_template():
    import threading

    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        assert "threads" in (template_main._unfit_to_fork() or "")
    finally:
        stop.set()
        t.join()


@pytest.mark.parametrize("isolation", ["namespaces", "process"])
def test_a_forked_worker_killed_by_a_signal_is_reported_as_the_exec_chain_reports_it(isolation, monkeypatch):
    if isolation == "namespaces" and isolation_mode() != "namespaces":
        pytest.skip("needs unshare (root on Linux)")
    monkeypatch.setenv("KERNELZERO_WORKER_TEMPLATE", "1")
    sb = Sandbox(job={})
    sb.isolation = isolation
    sb.spawn()
    try:
        assert isinstance(sb._proc, template.Forked)
        os.kill(_worker_pid(sb), signal.SIGSEGV)
        rc = sb._proc.wait(timeout=20)
        # under namespaces PID 1 reports 128 + signal, as the shell prelude did; without, the signal negated
        assert rc == (128 + signal.SIGSEGV if isolation == "namespaces" else -signal.SIGSEGV)
        assert describe_exit(rc) == "killed by signal 11 (SIGSEGV)"
        if isolation == "namespaces":
            assert "the worker was killed by signal 11" in sb.finish().log_tail
    finally:
        sb.finish()
        sb.cleanup()


def test_concurrent_forks_leave_no_descriptor_behind(monkeypatch):
    """Sixteen threads spawn and kill 48 forked workers: each comes back as killed, and the judge holds exactly the
    descriptors it held before (each handle closes its pidfd, status pipe and stdin once its leader is gone)."""
    from concurrent.futures import ThreadPoolExecutor

    first = _spawned(True, monkeypatch)  # the template is up before counting
    first.finish()
    first.cleanup()
    gc.collect()  # what earlier tests left for the collector closes now, not during the count
    before = _open_fds()

    def one(i: int) -> int | None:
        sb = Sandbox(job={})
        sb.spawn()
        assert isinstance(sb._proc, template.Forked)
        time.sleep(0.02 * (i % 4))
        code = sb.finish().returncode
        sb.cleanup()
        return code

    with ThreadPoolExecutor(16) as pool:
        codes = list(pool.map(one, range(48)))
    assert codes == [-signal.SIGKILL] * 48
    gc.collect()
    assert _open_fds() == before


def test_workers_get_their_thread_count_from_a_single_threaded_template(monkeypatch):
    """OMP_NUM_THREADS=2 (as a cluster job may set it): the template still imports torch on one thread (a second one
    would make it unfit to fork) and still serves; the forked worker runs torch with the two threads it was given."""
    monkeypatch.setattr(core, "STATIC_CHECKS", [])
    monkeypatch.setenv("KERNELZERO_WORKER_TEMPLATE", "1")
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    probe = (FIX / "relu_triton_ok.py").read_text().replace(
        "class ModelNew", "assert torch.get_num_threads() == 2, torch.get_num_threads()\n\n\nclass ModelNew", 1
    )
    v = Judge(JudgeOptions(device="cpu", trials=2)).judge(Task.from_file(FIX / "relu_task.py"), probe, "triton")
    assert (v.status, v.env["worker"]) == ("ok", "forked"), v.feedback
