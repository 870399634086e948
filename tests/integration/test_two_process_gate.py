"""Two CPU processes (torchrun, gloo): a group split across ranks is still gated as one group."""

import json
import math
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NAN = math.nan
# What rank 0 must see after gathering, per step: rows 0-2 from rank 0, rows 3-5 from rank 1
EXPECTED_GATED = [
    # step 1: 2 correct of 5 scored -> closed: no speed bonus even though rank 0 alone was 2/3 correct
    [[1, 0.0], [1, 0.0], [0, 0.0], [0, 0.0], [0, 0.0], [NAN, NAN]],
    # step 2: 3 of 6 -> open: rank 1's 4x kernel keeps its speedup though rank 1 alone was 1/3 correct
    [[1, 2.0], [1, 3.0], [0, 0.0], [1, 4.0], [0, 0.0], [0, 0.0]],
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _same(a, b):
    return len(a) == len(b) and all(
        (math.isnan(x) and math.isnan(y)) or abs(x - y) < 1e-6 for ra, rb in zip(a, b) for x, y in zip(ra, rb)
    )


@pytest.mark.skipif(shutil.which("torchrun") is None, reason="torchrun not on PATH")
def test_gate_sees_whole_group_split_across_two_processes(tiny_model_dir, tmp_path):
    env = dict(os.environ)
    env.update(
        PYTHONPATH=f"{ROOT / 'src'}{os.pathsep}{env.get('PYTHONPATH', '')}",
        CUDA_VISIBLE_DEVICES="",
        OMP_NUM_THREADS="1",
        TOKENIZERS_PARALLELISM="false",
    )
    cmd = [
        sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", str(_free_port()),
        str(ROOT / "tests" / "integration" / "two_process_gate_worker.py"), str(tmp_path), str(tiny_model_dir),
    ]  # fmt: skip
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]

    records = [json.loads(line) for line in (tmp_path / "records.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [0, 1] and all(r["group_size"] == 6 for r in records)
    assert records[0]["statuses"] == ["ok", "ok", "incorrect", "incorrect", "incorrect", "infra_error"]
    # the raw columns as each rank's reward functions returned them, concatenated rank 0 then rank 1
    assert _same(records[1]["raw"], [[1, 2.0], [1, 3.0], [0, 0.0], [1, 4.0], [0, 0.0], [0, 0.0]])
    for rec, expected in zip(records, EXPECTED_GATED, strict=True):
        assert _same(rec["gated"], expected), rec["gated"]
    # each rank judged only its own three rollouts per step
    assert [json.loads((tmp_path / f"judge_calls_rank{r}.json").read_text()) for r in (0, 1)] == [6, 6]


@pytest.mark.skipif(shutil.which("torchrun") is None, reason="torchrun not on PATH")
def test_coder_steps_script_two_processes_real_judge(tiny_model_dir, tmp_path):
    """scripts/coder_steps.py (the two-GPU run) on two CPU processes: real CPU judge per process, one group of
    three split across the ranks, and the gate TRL applied equals CA-GRPO over whole groups."""
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", OMP_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false",
               PYTHONPATH=f"{ROOT / 'src'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")  # fmt: skip
    cmd = [
        sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", str(_free_port()),
        str(ROOT / "scripts" / "coder_steps.py"), "--model", str(tiny_model_dir), "--out", str(tmp_path),
        "--steps", "1", "--max-completion-length", "16",
    ]  # fmt: skip
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (line,) = [json.loads(x) for x in (tmp_path / "steps.jsonl").read_text().splitlines()]
    assert (line["rollouts"], line["groups"], line["groups_split_across_processes"]) == (12, 3, 1)
    assert line["gate_matches_whole_groups"] is True
    assert sum(line["statuses"].values()) == 12  # every rollout got a verdict from its own process's judge


def test_group_layout_names_the_processes_of_each_group():
    sys.path.insert(0, str(ROOT / "scripts"))
    from coder_steps import group_layout

    assert group_layout(12, 6, 4) == [[0], [0, 1], [1]]  # rows 4-7: two from each process
    assert group_layout(8, 4, 4) == [[0], [1]]
