"""TEST HELPER: runs `naive_harness.py` in forked children of one interpreter that has torch and Triton imported.

A fresh `python naive_harness.py ...` per corpus file spent about 2.5 s of its 3-5 s importing torch and Triton on the
2-core CI box, some 75 times per run. Here one server process imports them once (TRITON_INTERPRET=1 and
PYTHONHASHSEED=0 set before it starts, as for the fresh interpreters), then forks a child per request. The child is
as separate as a fresh process for what the tests check: its own memory (a monkeypatch, a crash or a thread dies
with it), its own HOME and TMPDIR, its stdout and stderr in files, and the harness run as `__main__` from its file
with its arguments in sys.argv, then the interpreter's exit steps (non-daemon threads joined, atexit handlers).

Protocol (one JSON request a line on stdin; the replies are lines on stdout): the child's pid, then its exit code.
The client (`ForkServer`) kills a child past its timeout by that pid. CPU only: GPU runs keep a fresh interpreter
(a forked CUDA context is unusable), and so does anything that wants TRITON_INTERPRET unset.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
HARNESS = HERE / "naive_harness.py"


def _child(req: dict) -> int:
    import atexit
    import runpy
    import threading
    import traceback

    os.environ["HOME"] = os.environ["TMPDIR"] = req["home"]
    tempfile.tempdir = None  # gettempdir() reads TMPDIR again
    for fd, path in ((1, req["stdout"]), (2, req["stderr"])):
        out = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(out, fd)
        os.close(out)
    sys.argv = [str(HARNESS), *req["args"]]
    code = 0
    try:
        runpy.run_path(str(HARNESS), run_name="__main__")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:
        traceback.print_exc()
        code = 1
    threading._shutdown()  # what the interpreter does at exit: wait for non-daemon threads, then atexit
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    return code


def serve() -> None:
    import torch  # noqa: F401  (the point of the server: imported once, before any fork)
    import triton  # noqa: F401
    import triton.language  # noqa: F401

    reply = sys.stdout.buffer
    for line in sys.stdin.buffer:
        req = json.loads(line)
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                code = _child(req)
            finally:
                os._exit(code)
        reply.write(f"{pid}\n".encode())
        reply.flush()
        _, status = os.waitpid(pid, 0)
        reply.write(f"{os.waitstatus_to_exitcode(status)}\n".encode())
        reply.flush()


class ForkServer:
    """The client: `run(args, home, timeout)` -> (exit code, stdout, stderr) of one harness run."""

    def __init__(self, env: dict[str, str]):
        self._home = tempfile.mkdtemp(prefix="kz-naive-server-")  # the server's own HOME/TMPDIR at import time
        env = {**env, "HOME": self._home, "TMPDIR": self._home}
        self.proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve())], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=HERE,
                                     bufsize=0)  # fmt: skip

    def _line(self, timeout: float | None) -> str | None:
        out = b""
        while not out.endswith(b"\n"):
            if timeout is not None and not select.select([self.proc.stdout], [], [], timeout)[0]:
                return None
            chunk = os.read(self.proc.stdout.fileno(), 1)
            if not chunk:
                raise RuntimeError(f"the naive-harness fork server exited (rc={self.proc.poll()})")
            out += chunk
        return out.decode()

    def run(self, args: list[str], home: str, timeout: float) -> tuple[int, str, str]:
        outdir = Path(tempfile.mkdtemp(prefix="kz-naive-out-"))
        req = {"args": args, "home": home, "stdout": str(outdir / "stdout"), "stderr": str(outdir / "stderr")}
        self.proc.stdin.write((json.dumps(req) + "\n").encode())
        pid = int(self._line(None))
        rc = self._line(timeout)
        if rc is None:
            os.kill(pid, 9)
            self._line(None)
            raise subprocess.TimeoutExpired([str(HARNESS), *args], timeout)
        texts = [(outdir / n).read_text(errors="replace") for n in ("stdout", "stderr")]
        for n in ("stdout", "stderr"):
            (outdir / n).unlink()
        outdir.rmdir()
        return int(rc), texts[0], texts[1]

    def close(self) -> None:
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        import shutil

        shutil.rmtree(self._home, ignore_errors=True)


if __name__ == "__main__":
    serve()
