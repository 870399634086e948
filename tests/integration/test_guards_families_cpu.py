"""Exploit families 10-19 with the static rules switched off: the run-time layer behind each rule still holds, or
the exploit gains nothing (its verdict is the honest path's `ok`).

The corpus (tests/adversarial) shows which guard fires first; a static rule is a pattern a rewrite can dodge, so each
family here must also be stopped or neutralised at run time.
"""

from pathlib import Path

import pytest

from kernelzero.judge import JudgeOptions, core
from kernelzero.judge.pool import JudgePool
from kernelzero.judge.sandbox.process import isolation_mode
from kernelzero.tasks import Task

ADV = Path(__file__).parents[1] / "adversarial"

# case file -> accepted (status, guard) with static rules off
RUNTIME = {
    "triton_socket_fetch.py": {("rejected", "network")},  # the audit hook refused and recorded the connect
    "triton_pip_install.py": {("rejected", "network")},  # `python -m pip install` refused before it started
    "triton_tf32_set_precision.py": {("rejected", "precision")},  # the flag changed from the worker's policy
    "triton_tf32_torch_flag.py": {("rejected", "precision")},
    "triton_exec_base64.py": {("incorrect", "value")},  # the patched allclose lives in the candidate's process only
    "triton_cuda_graph_replay.py": {("rejected", "replay")},  # on CPU the memo answers the replay trials stale
    # Neutralised: the judge's seeds come from os.urandom, so the precomputed table never hits and the Triton
    # kernel does the work; the disk cache lives in the job's scratch (HOME), removed with it.
    "triton_seed_precompute.py": {("ok", None)},
    "triton_disk_cache.py": {("ok", None)},
}

WRITES_TMP = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        torch.save(torch.ones(1), "/tmp/kz_left_for_the_next_job.pt")

    def forward(self, x):
        y = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y
"""


def _task(name: str) -> Task:
    return Task.from_file(ADV / "tasks" / f"{name}.py")


def _task_of(path: Path) -> Task:
    for line in path.read_text().splitlines():
        if line.startswith("TASK = "):
            return _task(line.split("=")[1].strip().strip(chr(34)))
    raise AssertionError(f"{path} has no TASK")


@pytest.fixture(scope="module")
def verdicts():
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(core, "STATIC_CHECKS", [])
        with JudgePool(JudgeOptions(device="cpu"), workers=2) as pool:
            paths = [ADV / "cases" / n for n in RUNTIME]
            reqs = [(_task_of(p), p.read_text(), "triton") for p in paths]
            reqs.append((_task("relu_small"), WRITES_TMP, "triton"))
            results = pool.judge_many(reqs)
    out = {p.name: v for p, v in zip(paths, results)}
    out["writes_tmp"] = results[-1]
    return out


@pytest.mark.parametrize("name", list(RUNTIME))
def test_family_held_at_run_time_without_static_rules(verdicts, name):
    v = verdicts[name]
    assert (v.status, v.guard) in RUNTIME[name], v.feedback


@pytest.mark.skipif(isolation_mode() != "namespaces", reason="read-only mounts need the namespace sandbox (root)")
def test_sandbox_refuses_a_write_outside_the_job_scratch(verdicts):
    """A cache left in /tmp for a later judging process: every mount but the job's scratch is read-only."""
    v = verdicts["writes_tmp"]
    assert v.status == "runtime_error" and v.guard == "init", (v.status, v.guard, v.feedback)
    assert "Read-only file system" in v.feedback or "open file failed" in v.feedback, v.feedback
    assert not Path("/tmp/kz_left_for_the_next_job.pt").exists()
