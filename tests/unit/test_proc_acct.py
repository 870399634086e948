"""bench/proc_acct.py: acct_v3 records decoded (comp_t times, names), and a real accounting of a child process where
the kernel allows it (root, BSD process accounting)."""

import importlib.util
import struct
import subprocess
import sys
from pathlib import Path

import pytest

_SPEC = importlib.util.spec_from_file_location("proc_acct", Path(__file__).parents[2] / "bench" / "proc_acct.py")
proc_acct = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(proc_acct)


def _record(comm: bytes, utime: int, stime: int, version: int = 3) -> bytes:
    return struct.pack("<BBHIIIIIIfHHHHHHHH16s", 0, version, 0, 0, 0, 0, 1, 1, 0, 0.0, utime, stime, 0, 0, 0, 0, 0, 0,
                       comm)  # fmt: skip


def test_records_are_summed_per_command_with_comp_t_times():
    big = (1 << 13) | 5  # mantissa 5, exponent 1: 5 * 8 = 40 ticks
    data = _record(b"cc1plus", 150, 50) + _record(b"cc1plus", big, 0) + _record(b"kz-candidate", 7, 3)
    data += _record(b"old", 999, 999, version=2)  # another format: skipped
    rows = proc_acct.parse(data)
    assert rows == {"cc1plus": {"n": 2, "cpu_s": pytest.approx(2.4)}, "kz-candidate": {"n": 1, "cpu_s": 0.1}}


def test_a_child_process_is_accounted_by_name():
    with proc_acct.Accounting() as acct:
        subprocess.run([sys.executable, "-c", "import time\nt = time.process_time()\n"
                        "while time.process_time() - t < 0.5: pass"], check=True)  # fmt: skip
    if not acct.result["available"]:
        pytest.skip(f"process accounting refused here: {acct.result['why']}")
    name = Path(sys.executable).name[:15]
    assert acct.result["by_command"][name]["cpu_s"] >= 0.4
    assert "all exited" in proc_acct.top(acct.result)


def test_machine_busy_seconds_count_a_child_process_cpu_time():
    before = proc_acct.cpu_seconds()
    subprocess.run([sys.executable, "-c", "import time\nt = time.process_time()\n"
                    "while time.process_time() - t < 0.5: pass"], check=True)  # fmt: skip
    assert before > 0
    assert proc_acct.cpu_seconds() - before >= 0.4  # the child's 0.5 CPU s, at /proc/stat's 10 ms ticks
