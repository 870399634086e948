"""Where a pass's CPU went, by command: the kernel's process accounting (acct(2)) records every process that exits,
killed ones included, with its name and CPU time, which no sampling of /proc and no rusage of the judge sees (the
judge kills a finished worker's process group; compilers live and die between samples).

Judge workers name themselves by job (`kz-candidate`, `kz-reference`, `kz-build`, ...; `sandbox/worker.py`), the
template's processes `kz-template`, `kz-leader`, `kz-init`; compilers keep theirs (cc1plus, cicc, ptxas, nvcc, ld).
Needs root and a kernel with BSD process accounting; acct(2) is machine-wide and one file at a time, so a pass's
figures include every process of the machine that exited during it (run on an otherwise idle machine) and any
accounting already on is switched off. Processes still running at the end (the judge, templates, warm workers)
are not in it. A benchmark killed by a signal mid-pass leaves accounting on (the kernel keeps writing the temp file)
until the next `Accounting` or `accton off`.

    with Accounting() as acct:
        ...                      # a pass
    acct.result                  # {"available": True, "by_command": {"cc1plus": {"n": 45, "cpu_s": 210.3}, ...}, ...}

`cpu_seconds()` is the cheaper, coarser figure: the whole machine's busy CPU seconds from /proc/stat, whose
difference over a pass says how CPU-bound it was.
"""

from __future__ import annotations

import ctypes
import os
import struct
import tempfile

_RECORD = struct.Struct("<BBHIIIIIIfHHHHHHHH16s")  # struct acct_v3 (linux/acct.h), 64 bytes
_AHZ = 100  # acct_v3 times are in 1/AHZ seconds


def _comp(value: int) -> int:
    """A comp_t: 13-bit mantissa, 3-bit base-8 exponent."""
    return (value & 0x1FFF) << (((value >> 13) & 0x7) * 3)


def records(data: bytes) -> list[tuple[int, int, str, float]]:
    """(pid, parent pid, command, user + system seconds) of each acct_v3 record (other formats skipped)."""
    out = []
    for off in range(0, len(data) - _RECORD.size + 1, _RECORD.size):
        rec = _RECORD.unpack_from(data, off)
        if rec[1] != 3:  # ac_version
            continue
        name = rec[18].split(b"\0", 1)[0].decode(errors="replace") or "?"
        out.append((rec[6], rec[7], name, (_comp(rec[10]) + _comp(rec[11])) / _AHZ))
    return out


def parse(data: bytes) -> dict[str, dict[str, float]]:
    """command -> {"n": processes, "cpu_s": user + system seconds}, from acct_v3 records."""
    out: dict[str, dict[str, float]] = {}
    for _, _, name, cpu in records(data):
        row = out.setdefault(name, {"n": 0, "cpu_s": 0.0})
        row["n"] += 1
        row["cpu_s"] += cpu
    return out


def by_caller(data: bytes, callers: tuple[str, ...] = ("nvcc", "ninja", "timeout", "kz-")) -> dict[str, float]:
    """CPU seconds by `command < caller`: the caller the nearest ancestor among `callers` (a prefix match), found
    through the parents that exited in the same window; `?` where the chain leaves it. Tells apart a compiler run by
    nvcc, by a build's ninja, or by the front check's `timeout` wrapper."""
    recs = records(data)
    parent = {pid: (ppid, name) for pid, ppid, name, _ in recs}
    out: dict[str, float] = {}
    for _, ppid, name, cpu in recs:
        caller, seen = "?", 0
        while ppid in parent and seen < 32:
            ppid, pname = parent[ppid]
            seen += 1
            if pname.startswith(callers):
                caller = pname
                break
        key = f"{name} < {caller}"
        out[key] = out.get(key, 0.0) + cpu
    return {k: round(v, 2) for k, v in sorted(out.items(), key=lambda kv: -kv[1])}


class Accounting:
    """Process accounting over a `with` block; `result` afterwards (`available: False` and `why` where refused)."""

    def __init__(self) -> None:
        self.result: dict = {"available": False, "why": "not run"}
        self._path = ""

    def __enter__(self) -> Accounting:
        self._libc = ctypes.CDLL(None, use_errno=True)
        fd, self._path = tempfile.mkstemp(prefix="kz-acct-")
        os.close(fd)
        if self._libc.acct(self._path.encode()) != 0:
            self.result = {"available": False, "why": os.strerror(ctypes.get_errno())}
            os.unlink(self._path)
            self._path = ""
        return self

    def __exit__(self, *exc: object) -> None:
        if not self._path:
            return
        self._libc.acct(None)  # accounting stays on after this process ends unless switched off: always here
        path, self._path = self._path, ""  # a second exit does nothing
        with open(path, "rb") as f:
            data = f.read()
        os.unlink(path)
        rows = parse(data)
        ranked = sorted(rows.items(), key=lambda kv: -kv[1]["cpu_s"])
        total = round(sum(v["cpu_s"] for v in rows.values()), 1)
        self.result = {"available": True, "total_cpu_s": total,
                       "by_command": {k: {"n": v["n"], "cpu_s": round(v["cpu_s"], 2)} for k, v in ranked},
                       "by_caller": by_caller(data)}  # fmt: skip


def cpu_seconds() -> float:
    """Busy CPU seconds of the whole machine so far (/proc/stat: user, nice, system, irq, softirq, steal; 0 where
    there is none): the difference over a pass, against its wall times the cores, says how CPU-bound the pass was, on
    a machine running nothing else. Machine-wide, not this process's children: the judge kills a finished worker's
    process group, and a process killed before its parent reaped it is in no one's resource usage."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:9]]
    except (OSError, ValueError):
        return 0.0
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def top(result: dict, n: int = 8) -> str:
    """The `n` commands that took the most CPU, in one line."""
    if not result.get("available"):
        return f"process accounting unavailable ({result.get('why')})"
    rows = list(result["by_command"].items())[:n]
    return ", ".join(f"{k} {v['cpu_s']:.1f} s ({v['n']})" for k, v in rows) + f"; all exited: {result['total_cpu_s']} s"
