"""First contact with the CLI, through the real sandbox on CPU: a task whose own Model raises is one line and exit
2; workers die with a judge that is killed outright; a worker started from a short-lived thread outlives it.

(tests/unit/test_cli_first_contact.py holds the rest, with the judge stubbed.)
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

from kernelzero.judge.sandbox.process import Sandbox, default_scratch_root, kill_workers

ROOT = Path(__file__).parents[2]
JUDGE_FIX = ROOT / "tests" / "fixtures" / "judge"
TASK = (JUDGE_FIX / "relu_task.py").read_text()
SOLUTION = JUDGE_FIX / "relu_triton_ok.py"


def cli(*args: str, **kw) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.Popen([sys.executable, "-m", "kernelzero.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, **kw)  # fmt: skip


def cli_quiet(*args: str, **kw) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.Popen([sys.executable, "-m", "kernelzero.cli", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=env, **kw)  # fmt: skip


def test_3_judge_task_whose_forward_raises(tmp_path):
    task = tmp_path / "raises.py"
    task.write_text(TASK.replace("return torch.relu(x)", 'raise RuntimeError("boom in forward")'))
    proc = cli("judge", str(task), str(SOLUTION), "--device", "cpu")
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 2, err
    assert out == ""
    errors = [ln for ln in err.splitlines() if ln.startswith("kernelzero: error:")]
    assert errors == [f"kernelzero: error: {task}:12 (in forward): the task's own Model fails in the sandbox, so no "
                      "candidate can be judged against it: RuntimeError: boom in forward"]
    assert "Traceback" not in err and "kz_task" not in err


def _children(pid: int) -> list[int]:
    kids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                kids.append(int(entry.name))
    return kids


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:  # a worker's scratch removed while we looked
        return ""


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def test_8_workers_die_with_a_judge_killed_outright(tmp_path):
    marker = f"kz-in-forward-{uuid.uuid4().hex}"  # printed into the worker's log once it is inside forward
    task = tmp_path / "slow.py"
    task.write_text("import time\n" + TASK.replace("return torch.relu(x)",
                                                   f"print({marker!r}, flush=True)\n        time.sleep(300)"))
    proc = cli_quiet("judge", str(task), str(SOLUTION), "--device", "cpu", start_new_session=True)
    logs = Path(default_scratch_root())
    groups: list[int] = []
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and not any(marker in _read(p) for p in logs.glob("kz-job-*/worker.log")):
            time.sleep(0.2)
        groups = _children(proc.pid)  # each worker leads its own process group (start_new_session)
        assert groups, "the reference worker never reached the task's forward"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        deadline = time.monotonic() + 60  # a generous bound: before, the worker lived until its job timed out
        while any(_group_alive(g) for g in groups) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not [g for g in groups if _group_alive(g)], "sandbox workers outlived the judge"
    finally:
        if proc.poll() is None:
            proc.kill()
        for g in groups:  # on failure: leave no sleeping worker behind
            with contextlib.suppress(ProcessLookupError):
                os.killpg(g, signal.SIGKILL)
        for log in logs.glob("kz-job-*/worker.log"):  # a judge killed outright leaves its scratch directories
            if marker in _read(log):
                shutil.rmtree(log.parent, ignore_errors=True)


def test_8_a_worker_started_from_a_short_lived_thread_outlives_the_thread(tmp_path):
    # The parent-death signal is tied to the thread that forked the child; warm refills spawn from short-lived
    # threads, so a naive setpriv --pdeathsig would kill every refilled worker as soon as it was started.
    boxes: list[Sandbox] = []
    t = threading.Thread(target=lambda: boxes.append(Sandbox(job={}, device="cpu")) or boxes[0].spawn())
    t.start()
    t.join()
    try:
        time.sleep(1.0)
        assert boxes[0].alive()
    finally:
        boxes[0].finish()
        boxes[0].cleanup()


def test_8_ctrl_c_stops_the_workers_at_once():
    # What `interruptible` calls on Ctrl-C: without it, a command waited for its judge threads' running jobs
    # (about 20 s for a CPU batch, up to a job's timeout) after saying it was interrupted.
    box = Sandbox(job={}, device="cpu")
    box.spawn()
    try:
        assert box.alive()
        assert kill_workers() >= 1
        deadline = time.monotonic() + 30
        while box.alive() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not box.alive()
    finally:
        box.finish()
        box.cleanup()
