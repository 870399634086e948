"""bench/kb_sweep.py on tiny fixture tasks (CPU): the wrong candidate judged incorrect, resume, summary, exit codes."""

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from kernelzero.judge.guards import run_static

_SPEC = importlib.util.spec_from_file_location("kb_sweep", Path(__file__).parents[2] / "bench" / "kb_sweep.py")
kb_sweep = importlib.util.module_from_spec(_SPEC)
sys.modules["kb_sweep"] = kb_sweep
_SPEC.loader.exec_module(kb_sweep)

TINY = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return torch.relu(x) * self.scale


def get_inputs():
    return [torch.randn(4, 8)]


def get_init_inputs():
    return [2.0]
"""

PAIR = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 3)

    def forward(self, x, y):
        return self.lin(x), x + y


def get_inputs():
    return [torch.randn(4, 8), torch.randn(4, 8)]


def get_init_inputs():
    return []
"""


def _fixture(root: Path) -> Path:
    (root / "level1").mkdir(parents=True)
    (root / "level1" / "1_Tiny.py").write_text(TINY)
    (root / "level1" / "2_Pair.py").write_text(PAIR)
    return root


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    """One real CPU sweep of the two tiny tasks with the default wrong candidate: (kernelbench, out, exit code)."""
    root = _fixture(tmp_path_factory.mktemp("kb"))
    out = tmp_path_factory.mktemp("sweep")
    code = kb_sweep.main(["--kernelbench", str(root), "--levels", "1", "--out", str(out), "--device", "cpu",
                          "--workers", "2"])  # fmt: skip
    return root, out, code


def test_wrong_template_passes_static_rules():
    assert run_static(kb_sweep.wrong_candidate("level1/1_Tiny"), "triton") is None


def test_wrong_template_is_judged_incorrect(swept):
    _, out, code = swept
    records = {r["task"]: r for r in kb_sweep.read_jsonl(out / kb_sweep.SWEEP)}
    assert {k: (r["status"], r["guard"]) for k, r in records.items()} == {
        "1_Tiny": ("incorrect", "shape"),
        "2_Pair": ("incorrect", "structure"),
    }
    assert records["1_Tiny"]["feedback"].startswith("trial 1/5: output shape (1,)")
    assert code == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["levels"]["level1"]["by_status"] == {"incorrect": 2}
    assert summary["runs"] == 1 and summary["exit_code"] == 0


def test_resume_skips_recorded_tasks(swept, capsys):
    root, out, _ = swept
    before = (out / kb_sweep.SWEEP).read_text()
    assert kb_sweep.main(["--kernelbench", str(root), "--levels", "1", "--out", str(out), "--device", "cpu"]) == 0
    assert (out / kb_sweep.SWEEP).read_text() == before  # nothing judged again
    runs = kb_sweep.read_jsonl(out / kb_sweep.RUNS)
    assert [r["todo"] for r in runs] == [2, 0]
    assert "2 recorded, 0 to judge" in capsys.readouterr().out


def _record(level, task, status="incorrect", guard="shape", gpu=None, wall=1.0):
    memory = {} if gpu is None else {"gpu": gpu, "ref_gpu": gpu / 2}
    return {"level": level, "task": task, "status": status, "guard": guard, "feedback": f"{task} said so",
            "wall_s": wall, "stage_s": {}, "memory": memory, "peak_gpu_gb": kb_sweep._peak(memory, ("gpu", "ref_gpu")),
            "peak_host_gb": None}  # fmt: skip


def _write(out: Path, records, runs=({"elapsed_s": 10.0}, {"elapsed_s": 5.5})):
    out.mkdir(parents=True, exist_ok=True)
    (out / kb_sweep.SWEEP).write_text("".join(json.dumps(r) + "\n" for r in records))
    (out / kb_sweep.RUNS).write_text("".join(json.dumps(r) + "\n" for r in runs))


def test_summary_counts_and_exit_code(tmp_path):
    root = _fixture(tmp_path / "kb")
    files = kb_sweep.task_files(root, [1])
    out = tmp_path / "out"
    _write(out, [_record(1, "1_Tiny", gpu=6.0, wall=3.0), _record(1, "2_Pair", "infra_error", "too_large", wall=2.0)])
    summary, code = kb_sweep.summarize(files, out, [1])
    level = summary["levels"]["level1"]
    assert level["by_status"] == {"incorrect": 1, "infra_error": 1}
    assert level["task_wall_s"] == 5.0 and level["peak_gpu_gb"] == {"gb": 6.0, "task": "1_Tiny"}
    assert summary["run_wall_s"] == 15.5 and summary["infra_errors"][0]["guard"] == "too_large"
    assert code == 0  # too_large is the task's, not the judge's
    # a later record of the same task replaces the earlier one; an unexplained infra_error makes it 1
    with open(out / kb_sweep.SWEEP, "a") as f:
        f.write(json.dumps(_record(1, "1_Tiny", "infra_error", "worker_lost")) + "\n")
    summary, code = kb_sweep.summarize(files, out, [1])
    assert summary["levels"]["level1"]["by_status"] == {"infra_error": 2} and code == 1
    # a task not recorded at all makes it 1 too
    _write(out, [_record(1, "1_Tiny")])
    summary, code = kb_sweep.summarize(files, out, [1])
    assert summary["missing"] == ["level1/2_Pair"] and code == 1


def test_summary_only_and_retry_rule(tmp_path, capsys):
    root = _fixture(tmp_path / "kb")
    out = tmp_path / "out"
    _write(out, [_record(1, "1_Tiny"), _record(1, "2_Pair", "infra_error", None)])
    assert kb_sweep.main(["--kernelbench", str(root), "--levels", "1", "--out", str(out), "--summary-only"]) == 1
    assert "(UNEXPLAINED)" in (out / "summary.md").read_text()
    assert "torch" not in capsys.readouterr().err
    assert kb_sweep.needs_retry(_record(1, "x", "infra_error", "request_timeout"))
    assert not kb_sweep.needs_retry(_record(1, "x", "infra_error", "degenerate"))
    assert not kb_sweep.needs_retry(_record(1, "x", "incorrect", "shape"))


@pytest.mark.parametrize(
    "extra, says",
    [
        (["--kernelbench", "{tmp}/nope"], "--kernelbench"),
        (["--kernelbench", "{kb}", "--levels", "2"], "level2"),
        (["--kernelbench", "{kb}", "--solutions", "{tmp}/none"], "--solutions"),
        (["--kernelbench", "{kb}", "--candidate", "{tmp}/none.py"], "--candidate"),
        (["--kernelbench", "{kb}", "--summary-only"], "--summary-only"),
    ],
)
def test_bad_input_exits_2(tmp_path, capsys, extra, says):
    root = _fixture(tmp_path / "kb")
    argv = [a.format(tmp=tmp_path, kb=root) for a in extra] + ["--out", str(tmp_path / "out")]
    assert kb_sweep.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0]


def test_the_judges_own_memory_failures_and_odd_verdicts_are_not_the_tasks(tmp_path):
    oom = {**_record(1, "52_Argmin", "infra_error", "reference"), "candidate": kb_sweep.WRONG,
           "feedback": "the reference Model failed: harness: torch.OutOfMemoryError: CUDA out of memory."}  # fmt: skip
    own = {**_record(1, "66_Fails", "infra_error", "reference"), "candidate": kb_sweep.WRONG}
    crash = {**_record(1, "45_Pool", "runtime_error", "forward"), "candidate": kb_sweep.WRONG}
    fine = {**_record(1, "1_Tiny"), "candidate": kb_sweep.WRONG}
    assert not kb_sweep.explained(oom) and kb_sweep.needs_retry(oom)
    assert kb_sweep.explained(own) and not kb_sweep.needs_retry(own)
    assert kb_sweep.unexpected(crash) and kb_sweep.needs_retry(crash)
    assert not kb_sweep.unexpected(fine) and not kb_sweep.unexpected({**crash, "candidate": "candidate:x.py"})
    out = tmp_path / "sweep"
    _write(out, [oom, own, crash, fine])
    files = [(1, n, tmp_path / f"{n}.py") for n in ("52_Argmin", "66_Fails", "45_Pool", "1_Tiny")]
    summary, code = kb_sweep.summarize(files, out, [1])
    assert code == 1 and summary["unexplained_infra_errors"] == 1
    assert [u["task"] for u in summary["unexpected"]] == ["level1/45_Pool"]
    assert "unexpected for the wrong candidate (1)" in kb_sweep.render(summary)
