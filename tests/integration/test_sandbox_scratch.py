"""Job scratch directories: a worker sees its own, never a sibling's (a correct neighbour's outputs, a reference's).

The candidate below is a correct ReLU that answers with zeros when it can read a file planted in another job's
scratch directory under the same root: `ok` means the sibling was hidden. (With `unshare` unavailable the sandbox
runs in process mode, which does not hide files; the test is skipped there.)
"""

import os
from pathlib import Path

import pytest

from kernelzero.judge import JudgeOptions, core
from kernelzero.judge.core import Judge
from kernelzero.judge.sandbox.process import Sandbox, default_scratch_root, isolation_mode
from kernelzero.tasks import Task

FIX = Path(__file__).parents[1] / "fixtures" / "judge"

PEEKER = '''
import glob
import torch
import torch.nn as nn
import triton
import triton.language as tl

SEEN = glob.glob("{root}/kz-job-*/out.pt")


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0) * (0.0 if HIT else 1.0), mask=mask)


HIT = len(SEEN) > 0


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 256),)](x, y, x.numel(), BLOCK=256)
        return y
'''


@pytest.mark.skipif(isolation_mode() != "namespaces", reason="process-mode sandbox does not hide files")
def test_a_sibling_scratch_directory_is_hidden(tmp_path, monkeypatch):
    """The mount namespace hides a neighbour's scratch. The static rules are off: `file_io` would turn the peeking
    source away before it ran, and what is under test is the layer behind it."""
    monkeypatch.setattr(core, "STATIC_CHECKS", [])
    sibling = Sandbox(job={})  # an idle job's scratch, as a neighbour in the same GRPO group would have
    try:
        (sibling.scratch / "out.pt").write_bytes(b"a correct neighbour's outputs")
        root = os.path.dirname(sibling.scratch)
        assert Path(root) == Path(default_scratch_root())
        source = PEEKER.replace("{root}", root)
        v = Judge(JudgeOptions(device="cpu", trials=2)).judge(Task.from_file(FIX / "relu_task.py"), source, "triton")
        assert v.status == "ok", v.feedback  # it would be `incorrect` had it seen the planted file
        assert v.env["scratch_veil"] in (root, "/dev/shm")  # the verdict says how the scratch was isolated
    finally:
        sibling.cleanup()


def test_scratch_root_is_the_env_override(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELZERO_SCRATCH", str(tmp_path / "scratch"))
    sb = Sandbox(job={})
    try:
        assert sb.scratch.parent == tmp_path / "scratch" and sb.scratch.name.startswith("kz-job-")
    finally:
        sb.cleanup()


def test_a_killed_judges_scratch_is_swept_and_nothing_else(tmp_path):
    """Scratch folders whose owner process is gone (a judge killed outright removes nothing) go at the next judge's
    first sandbox; a live owner's, another PID namespace's and an unrecorded folder stay."""
    import subprocess

    from kernelzero.judge.sandbox.spawn import _me, claim, sweep_stale

    dead = subprocess.run(["sh", "-c", "echo $$"], capture_output=True, text=True).stdout.strip()  # exited: pid free
    ns, _, started = _me().split()
    folders = {name: tmp_path / name for name in ("kz-job-dead", "kz-job-live", "kz-job-foreign", "kz-job-unowned")}
    for folder in folders.values():
        folder.mkdir()
        (folder / "worker.log").write_text("x")
    (tmp_path / "kz-job-dead.owner").write_text(f"{ns} {dead} {started}")
    claim(folders["kz-job-live"])
    (tmp_path / "kz-job-foreign.owner").write_text(f"pid:[1] {dead} {started}")
    assert sweep_stale(str(tmp_path)) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kz-job-foreign", "kz-job-foreign.owner", "kz-job-live",
                                                          "kz-job-live.owner", "kz-job-unowned"]  # fmt: skip
    assert sweep_stale(str(tmp_path)) == 0  # once per process and root

    sb = Sandbox(job={}, scratch_root=str(tmp_path))  # a sandbox records itself and removes both on cleanup
    assert (tmp_path / (sb.scratch.name + ".owner")).read_text() == _me()
    sb.cleanup()
    assert not sb.scratch.exists() and not (tmp_path / (sb.scratch.name + ".owner")).exists()
