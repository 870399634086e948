"""The judge on CPU (Triton interpreter): every failure mode of a candidate gets its status, and the judge survives."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kernelzero.judge import JudgeOptions, core
from kernelzero.judge.guards import run_static
from kernelzero.judge.pool import JudgePool
from kernelzero.tasks import Task

FIX = Path(__file__).parents[1] / "fixtures" / "judge"
TASK = Task.from_file(FIX / "relu_task.py")

# candidate file -> (expected status, expected guard or None for "any")
EXPECTED = {
    "relu_triton_ok.py": ("ok", None),
    "relu_triton_incorrect.py": ("incorrect", "value"),
    "relu_triton_compile_error.py": ("compile_error", "compile"),
    "relu_import_error.py": ("compile_error", "import"),
    "relu_exception.py": ("runtime_error", "forward"),
    "relu_timeout.py": ("timeout", "run"),
    "relu_segfault.py": ("crashed", None),
    "relu_os_exit.py": ("crashed", None),
    "relu_fake_verdict.py": ("incorrect", "value"),
    "relu_kill_parent.py": ("crashed", None),
    "no_modelnew.py": ("format_error", "no_modelnew"),
}


@pytest.fixture(scope="module")
def pool():
    # Static guards off: these fixtures test the sandbox's containment (segfaults, killing the parent), which must
    # hold for code the static rules miss. tests/adversarial covers the guards themselves. The Triton front check
    # off as well: the compile error fixture is then the worker's to find (tests/unit/test_triton_front.py).
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(core, "STATIC_CHECKS", [])
        with JudgePool(JudgeOptions(device="cpu", run_timeout_s=8, front_check=False), workers=2) as p:
            yield p


@pytest.fixture(scope="module")
def verdicts(pool):
    names = list(EXPECTED)
    results = pool.judge_many([(TASK, (FIX / n).read_text(), "triton") for n in names])
    return dict(zip(names, results))


@pytest.mark.parametrize("name", list(EXPECTED))
def test_each_candidate_gets_its_status(verdicts, name):
    status, guard = EXPECTED[name]
    v = verdicts[name]
    assert v.status == status, v.feedback
    if guard is not None:
        assert v.guard == guard
    assert v.correct == (status == "ok")
    assert not v.timed and v.runtime is None  # CPU verdicts are never timed


def test_feedback_carries_the_useful_lines(verdicts):
    assert "boom in forward" in verdicts["relu_exception.py"].feedback
    assert "no_such_module_for_kernels" in verdicts["relu_import_error.py"].feedback
    assert "no_such_function" in verdicts["relu_triton_compile_error.py"].feedback
    assert "outside atol=0.0001" in verdicts["relu_triton_incorrect.py"].feedback
    assert verdicts["relu_triton_ok.py"].trials == 5


def test_fingerprint_and_isolation_recorded(verdicts):
    env = verdicts["relu_triton_ok.py"].env
    assert env["device"] == "cpu" and env["precision"] == "fp32-strict"
    assert env["isolation"] in ("namespaces", "process")
    assert env["torch"] and env["triton"]


def test_judge_process_survives_and_serves_after_hostile_candidates(pool, verdicts):
    assert verdicts["relu_kill_parent.py"].status == "crashed"
    again = pool.judge(TASK, (FIX / "relu_triton_ok.py").read_text(), "triton")
    assert again.status == "ok"


def test_cuda_candidate_on_cpu_is_infra_error_not_scored(pool):
    v = pool.judge(TASK, (FIX / "relu_triton_ok.py").read_text(), "cuda")
    assert v.status == "infra_error" and not v.scored


# `kernelzero judge` with the pool fixture's 8 s run timeout: the CLI has no flag for it, and under the default
# (120 s) relu_timeout.py alone held the batch for two minutes. Everything else is the command as a user runs it.
CLI_WITH_SHORT_RUN_TIMEOUT = (
    "import functools, sys; import kernelzero.commands.judge as j; "
    "j.JudgeOptions = functools.partial(j.JudgeOptions, run_timeout_s=8); "
    "from kernelzero.cli import main; sys.exit(main(sys.argv[1:]))"
)


def test_batch_cli_writes_one_record_per_line_in_order(tmp_path):
    names = list(EXPECTED) + ["missing_solution.py"]
    batch = tmp_path / "in.jsonl"
    batch.write_text("".join(json.dumps({"task": str(FIX / "relu_task.py"), "solution": str(FIX / n),
                                         "backend": "triton"}) + "\n" for n in names) + "not json\n")
    out = tmp_path / "out.jsonl"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
    cmd = [sys.executable, "-c", CLI_WITH_SHORT_RUN_TIMEOUT, "judge", "--batch", str(batch), "--out", str(out),
           "--device", "cpu", "--workers", "2"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 2, proc.stderr  # two input lines cannot be judged: an input error
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["line"] for r in lines] == list(range(1, len(names) + 2))
    for name, line in zip(names, lines):
        assert line["solution"] == str(FIX / name) and line["task"] == str(FIX / "relu_task.py")
        if name == "missing_solution.py":  # a missing file is the input's fault, not a verdict on a candidate
            assert line["verdict"] is None and line["error"] == f"solution file not found: {FIX / name}"
            continue
        expected = EXPECTED[name][0]
        if expected != "format_error" and run_static((FIX / name).read_text()):  # the CLI runs them
            expected = "rejected"
        assert line["verdict"]["status"] == expected, (name, line["verdict"]["feedback"])
        assert {"status", "correct", "speedup_eager"} <= set(line["verdict"])
    assert lines[-1]["verdict"] is None and "malformed request line" in lines[-1]["error"]
    # Resume: a second run keeps the verdicts and judges nothing again; the bad lines are still reported.
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 2
    assert f"resuming {out}: {len(EXPECTED)} of {len(names) + 1} line(s) already judged" in proc.stderr
    assert "judging 0" in proc.stderr
    assert [json.loads(x) for x in out.read_text().splitlines()] == lines


def test_a_forward_past_the_hang_watch_is_a_timeout_before_the_run_timeout(monkeypatch):
    """The worker's hang watch, end to end on CPU (the judge applies it on a GPU only: forced here to 1 s): a forward
    that never returns is reported by the watch's thread, and the judge kills the worker long before the 60 s run
    timeout."""
    monkeypatch.setattr(core, "STATIC_CHECKS", [])
    monkeypatch.setattr(core.Judge, "_hang_after", lambda self, ref, source: 1.0)
    judge = core.Judge(JudgeOptions(device="cpu", run_timeout_s=60, front_check=False))
    v = judge.judge(TASK, (FIX / "relu_timeout.py").read_text(), "triton")
    assert (v.status, v.guard) == ("timeout", "run"), v.feedback
    assert "past the hang watch's 1.0 s" in v.feedback
