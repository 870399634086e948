"""First contact with the CLI: every usage or input mistake is one line and exit 2, before anything heavy starts;
long work says what it is doing; resumable commands say so; batch records are keyed by their input.

One test (or a few) per item of the user report they come from, numbered like it. The judge itself is stubbed here
(`FakePool` stands in for `kernelzero.judge.pool`), so what is tested is the command around it; the real sandbox
runs in tests/integration/test_cli_first_contact_cpu.py.
"""

from __future__ import annotations

import json
import sys
import types
import warnings
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernelzero.cli import app, main
from kernelzero.judge.verdict import Verdict

ROOT = Path(__file__).parents[2]
JUDGE_FIX = ROOT / "tests" / "fixtures" / "judge"
EVAL_TASKS = ROOT / "tests" / "fixtures" / "eval_tasks"
EVAL_SOLUTIONS = ROOT / "tests" / "fixtures" / "eval_solutions"
runner = CliRunner()


def run(capsys, *args: str) -> tuple[int, str, str]:
    """The real entry point (`kernelzero.cli.main`, as the `kernelzero` script calls it), in process: exit code,
    stdout, stderr."""
    saved = sys.argv
    sys.argv = ["kernelzero", *map(str, args)]
    try:
        code = main()
    except SystemExit as exc:  # typer's standalone mode exits instead of returning
        code = exc.code if isinstance(exc.code, int) else 1
    finally:
        sys.argv = saved
    out = capsys.readouterr()
    return code, out.out, out.err


def one_error_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert "Traceback" not in err, err
    assert len(lines) == 1 and lines[0].startswith("kernelzero: error: "), err
    return lines[0]


# ---------------------------------------------------------------------------------------------------- a stub judge
class FakePool:
    """Stands in for JudgePool: every candidate is `ok` unless its code says BROKEN; records what it was asked.
    `interrupt_after`: raise KeyboardInterrupt (a Ctrl-C) once that many verdicts were handed out."""

    asked: list[tuple[str, str, str]] = []
    interrupt_after: int | None = None

    def __init__(self, options=None, workers=None, **kw):
        self.judge_ = types.SimpleNamespace(device="cpu", reference=lambda task: types.SimpleNamespace(error=None))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass

    def judge(self, task, source, backend):
        if FakePool.interrupt_after is not None and len(FakePool.asked) >= FakePool.interrupt_after:
            raise KeyboardInterrupt
        FakePool.asked.append((task.name, source, backend))
        if "BROKEN" in source:
            return Verdict.fail("incorrect", "wrong values", backend=backend, device="cpu", task=task.name)
        return Verdict(status="ok", correct=True, backend=backend, device="cpu", trials=5, max_abs_err=0.0,
                       task=task.name)  # fmt: skip

    def imap(self, requests):
        for r in requests:
            yield self.judge(*r)

    def judge_many(self, requests):
        return [self.judge(*r) for r in requests]


@pytest.fixture
def fake_pool(monkeypatch):
    FakePool.asked, FakePool.interrupt_after = [], None
    module = types.ModuleType("kernelzero.judge.pool")
    module.JudgePool = FakePool
    monkeypatch.setitem(sys.modules, "kernelzero.judge.pool", module)
    return FakePool


def _files(tmp_path: Path) -> dict[str, Path]:
    files = {"task": tmp_path / "task.py", "sol": tmp_path / "sol.py"}
    files["task"].write_text((JUDGE_FIX / "relu_task.py").read_text())
    files["sol"].write_text((JUDGE_FIX / "relu_triton_ok.py").read_text())
    return files


# ---------------------------------------------------------------------------------------------------- 1
def test_1_judge_bad_backend_is_one_line_exit_2(capsys, tmp_path, fake_pool):
    f = _files(tmp_path)
    code, out, err = run(capsys, "judge", f["task"], f["sol"], "--backend", "foo")
    assert code == 2 and out == ""
    assert one_error_line(err) == "kernelzero: error: --backend must be one of cuda, triton, got 'foo'"
    assert fake_pool.asked == []


# ---------------------------------------------------------------------------------------------------- 2
@pytest.mark.parametrize(("name", "text", "where"), [
    ("bad.yaml", "rounds: [1, 2\n", "bad.yaml:2:1: not valid YAML"),
    ("bad.json", '{"rounds": 1,\n', "bad.json:2:1: not valid JSON"),
])  # fmt: skip
def test_2_train_config_parse_error_is_one_line_exit_2(capsys, tmp_path, name, text, where):
    (tmp_path / name).write_text(text)
    code, _, err = run(capsys, "train", "--config", tmp_path / name)
    assert code == 2
    assert where in one_error_line(err)


# ---------------------------------------------------------------------------------------------------- 3
@pytest.mark.parametrize(("source", "expected"), [
    ("import torch\nclass Model(torch.nn.Module:\n    pass\n", "task.py:2: syntax error: invalid syntax"),
    ("class Model:\n    def forward(self, x):\n        return x\ndef get_init_inputs():\n    return []\n",
     "task.py:1: missing function get_inputs"),
])  # fmt: skip
def test_3_judge_malformed_task_rejected_before_the_sandbox(capsys, tmp_path, fake_pool, monkeypatch, source, expected):
    f = _files(tmp_path)
    f["task"].write_text(source)

    class NoSandbox(FakePool):
        def __init__(self, *a, **kw):
            raise AssertionError("a malformed task must not start the judge")

    monkeypatch.setattr(sys.modules["kernelzero.judge.pool"], "JudgePool", NoSandbox)
    code, out, err = run(capsys, "judge", f["task"], f["sol"], "--device", "cpu")
    assert code == 2 and out == ""
    assert expected in one_error_line(err)
    assert "kz_task" not in err and "infra_error" not in err


def test_3_judge_task_whose_forward_raises_is_one_line_exit_2(capsys, tmp_path, fake_pool, monkeypatch):
    f = _files(tmp_path)
    error = ('harness: RuntimeError: boom in forward\n  File "/scratch/kz-job-1/worker.py", line 204, in _forward\n'
             '    out = model(*inputs)\n  File "/dev/shm/kernelzero-scratch/kz-job-1/task.py", line 12, in forward\n'
             '    raise RuntimeError("boom in forward")\n')  # what a reference worker reports

    class BrokenTask(FakePool):
        def __init__(self, *a, **kw):
            super().__init__()
            self.judge_.reference = lambda task: types.SimpleNamespace(error=error)

        def judge(self, task, source, backend):
            return Verdict.fail("infra_error", f"the reference Model failed: {error}", guard="reference")

    monkeypatch.setattr(sys.modules["kernelzero.judge.pool"], "JudgePool", BrokenTask)
    code, out, err = run(capsys, "judge", f["task"], f["sol"], "--device", "cpu")
    assert code == 2 and out == ""
    line = [ln for ln in err.splitlines() if ln.startswith("kernelzero: error:")]
    assert line == [f"kernelzero: error: {f['task']}:12 (in forward): the task's own Model fails in the sandbox, so "
                    "no candidate can be judged against it: RuntimeError: boom in forward"]
    assert "Traceback" not in err and "harness" not in err


# ---------------------------------------------------------------------------------------------------- 4
def test_4_version():
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout.strip() == "kernelzero 0.1.0"


# ---------------------------------------------------------------------------------------------------- 5
def test_5_bad_model_leaves_nothing_and_a_stale_pin_does_not_block(capsys, tmp_path, fake_pool):
    out = tmp_path / "ev"
    code, _, err = run(capsys, "eval", "--tasks", EVAL_TASKS, "--model", tmp_path / "no_such_model", "--out", out,
                       "--device", "cpu")  # fmt: skip
    assert code == 2 and "--model" in one_error_line(err)
    assert not (out / "eval_config.json").exists()
    # A folder the older version left behind: settings pinned, no verdict recorded. It binds nothing.
    out.mkdir()
    (out / "eval_config.json").write_text(json.dumps({"tasks": str(EVAL_TASKS), "backend": "triton", "mode":
                                                      "generate", "model": "/no/such", "samples": 1, "turns": 1}))
    code, _, err = run(capsys, "eval", "--tasks", EVAL_TASKS, "--solutions", EVAL_SOLUTIONS, "--out", out,
                       "--device", "cpu", "--no-plots")  # fmt: skip
    assert code == 0, err
    assert json.loads((out / "eval_config.json").read_text())["mode"] == "solutions"


# ---------------------------------------------------------------------------------------------------- 6
def _batch(tmp_path: Path, lines: list[dict | str]) -> Path:
    p = tmp_path / "in.jsonl"
    p.write_text("".join((ln if isinstance(ln, str) else json.dumps(ln)) + "\n" for ln in lines))
    return p


def test_6_batch_records_are_keyed_by_input_and_a_fixed_line_is_judged_again(capsys, tmp_path, fake_pool):
    f = _files(tmp_path)
    missing_task, missing_sol = tmp_path / "later_task.py", tmp_path / "later_sol.py"
    batch = _batch(tmp_path, [{"task": str(f["task"]), "solution": str(f["sol"])},
                              {"task": str(missing_task), "solution": str(f["sol"])},
                              {"task": str(f["task"]), "solution": str(missing_sol)}])  # fmt: skip
    out = tmp_path / "out.jsonl"
    code, stdout, err = run(capsys, "judge", "--batch", batch, "--out", out, "--device", "cpu")
    assert code == 2, err  # two lines could not be judged: an input error, not a success
    records = [json.loads(ln) for ln in out.read_text().splitlines()]
    assert [(r["line"], r["task"], r["solution"]) for r in records] == [(1, str(f["task"]), str(f["sol"])),
                                                                        (2, str(missing_task), str(f["sol"])),
                                                                        (3, str(f["task"]), str(missing_sol))]
    assert records[0]["verdict"]["status"] == "ok"
    assert records[1]["verdict"] is None and records[1]["error"] == f"task file not found: {missing_task}"
    assert records[2]["verdict"] is None and records[2]["error"] == f"solution file not found: {missing_sol}"
    assert "input_error=2 ok=1" in stdout
    # Fix both paths by creating the files (each unlike the first line's): only those two lines are judged now.
    missing_task.write_text(f["task"].read_text().replace("ReLU of a small tensor", "ReLU, again"))
    missing_sol.write_text(f["sol"].read_text() + "\n# the same kernel, another file\n")
    fake_pool.asked.clear()
    code, stdout, err = run(capsys, "judge", "--batch", batch, "--out", out, "--device", "cpu")
    assert code == 0, err
    assert "resuming" in err and "1 of 3 line(s) already judged" in err
    assert [a[0] for a in fake_pool.asked] == ["later_task", "task"]
    records = [json.loads(ln) for ln in out.read_text().splitlines()]
    assert [(r["line"], r["verdict"]["status"]) for r in records] == [(1, "ok"), (2, "ok"), (3, "ok")]


def test_6_batch_edited_solution_is_judged_again(capsys, tmp_path, fake_pool):
    f = _files(tmp_path)
    batch = _batch(tmp_path, [{"task": str(f["task"]), "solution": str(f["sol"])}])
    out = tmp_path / "out.jsonl"
    assert run(capsys, "judge", "--batch", batch, "--out", out)[0] == 0
    f["sol"].write_text(f["sol"].read_text() + "\n# BROKEN\n")
    code, _, _ = run(capsys, "judge", "--batch", batch, "--out", out)
    assert code == 0  # every line judged; a wrong kernel is a verdict, not a failure of the batch
    assert json.loads(out.read_text())["verdict"]["status"] == "incorrect"


# ---------------------------------------------------------------------------------------------------- 7
def test_7_single_judge_and_batch_report_progress_on_stderr_when_piped(capsys, tmp_path, fake_pool):
    f = _files(tmp_path)
    code, out, err = run(capsys, "judge", f["task"], f["sol"], "--device", "cpu")
    assert code == 0 and out.startswith("ok")
    assert "judge: loading the judge (torch)" in err and "judge: judging on cpu" in err
    batch = _batch(tmp_path, [{"task": str(f["task"]), "solution": str(f["sol"])}] * 2)
    code, out, err = run(capsys, "judge", "--batch", batch, "--out", tmp_path / "out.jsonl")
    assert code == 0
    assert f"[1/2] line 1 ({f['task']}, {f['sol']}): ok" in err.splitlines()
    assert f"[2/2] line 2 ({f['task']}, {f['sol']}): ok" in err.splitlines()


# ---------------------------------------------------------------------------------------------------- 8
def test_8_interrupted_batch_says_how_to_resume_and_the_rerun_says_it_resumes(capsys, tmp_path, fake_pool):
    f = _files(tmp_path)
    other = tmp_path / "other.py"
    other.write_text(f["sol"].read_text() + "\n# another candidate\n")
    batch = _batch(tmp_path, [{"task": str(f["task"]), "solution": str(f["sol"])},
                              {"task": str(f["task"]), "solution": str(other)}])  # fmt: skip
    out = tmp_path / "out.jsonl"
    fake_pool.interrupt_after = 1
    code, _, err = run(capsys, "judge", "--batch", batch, "--out", out)
    assert code == 130
    assert err.splitlines()[-1] == (f"kernelzero: interrupted; 1 of 2 line(s) are judged in {out}; rerun the same "
                                    "command to resume (judged lines are kept)")
    fake_pool.interrupt_after, fake_pool.asked[:] = None, []
    code, _, err = run(capsys, "judge", "--batch", batch, "--out", out)
    assert code == 0
    assert err.splitlines()[0].startswith(f"resuming {out}: 1 of 2 line(s) already judged")
    assert [a[1] for a in fake_pool.asked] == [other.read_text()]


def test_8_interrupted_eval_says_how_to_resume_and_the_rerun_says_it_resumes(capsys, tmp_path, fake_pool):
    out = tmp_path / "ev"
    args = ("eval", "--tasks", EVAL_TASKS, "--solutions", EVAL_SOLUTIONS, "--out", out, "--device", "cpu",
            "--no-plots")  # fmt: skip
    fake_pool.interrupt_after = 1  # one verdict, then Ctrl-C (the task without a solution needs no judge)
    code, _, err = run(capsys, *args)
    assert code == 130
    assert err.splitlines()[-1] == (f"kernelzero: interrupted; rerun the same command with --out {out} to resume "
                                    "(recorded attempts are kept)")
    fake_pool.interrupt_after = None
    code, _, err = run(capsys, *args)
    assert code == 0, err
    assert f"resuming {out}: 2 of 3 attempt(s) already recorded (kept); judging the other 1" in err.splitlines()
    code, _, err = run(capsys, *args)
    assert code == 0 and f"{out}: all 3 attempt(s) are already recorded; rebuilding the report" in err.splitlines()


def test_8_interrupt_anywhere_says_so(capsys, tmp_path, fake_pool):
    f = _files(tmp_path)
    fake_pool.interrupt_after = 0
    code, _, err = run(capsys, "judge", f["task"], f["sol"])
    assert code == 130 and err.splitlines()[-1] == "kernelzero: interrupted"


# ---------------------------------------------------------------------------------------------------- 9
def _eval_dir(capsys, tmp_path: Path) -> Path:
    out = tmp_path / "ev"
    code, _, err = run(capsys, "eval", "--tasks", EVAL_TASKS, "--solutions", EVAL_SOLUTIONS, "--out", out,
                       "--device", "cpu")  # fmt: skip
    assert code == 0, err
    return out


def test_9_report_and_export_take_eval_folders(capsys, tmp_path, fake_pool):
    out = _eval_dir(capsys, tmp_path)
    (out / "report.md").unlink()
    code, stdout, err = run(capsys, "report", out)
    assert code == 0, err
    assert stdout.strip() == str(out / "report.md") and "pass@1" in (out / "report.md").read_text()
    datasets = pytest.importorskip("datasets")  # noqa: F841 (export writes a datasets dataset)
    code, stdout, err = run(capsys, "export", out, "--out", tmp_path / "corpus")
    assert code == 0, err
    rows = [json.loads(ln) for ln in (tmp_path / "corpus" / "corpus.jsonl").read_text().splitlines()]
    assert sorted(r["task_name"] for r in rows) == ["1_relu", "2_scale_add"]
    assert all(r["phase"] == "eval" and r["task_source"].startswith("import torch") for r in rows)


def test_9_judge_takes_the_code_out_of_a_markdown_completion(capsys, tmp_path, fake_pool):
    f = _files(tmp_path)
    code_text = f["sol"].read_text()
    completion = tmp_path / "completion.md"
    completion.write_text(f"Here is my kernel:\n\n```python\n{code_text}```\n\nIt fuses the ReLU.\n")
    code, out, err = run(capsys, "judge", f["task"], completion)
    assert code == 0, err
    assert fake_pool.asked[0][1].strip() == code_text.strip()


@pytest.mark.parametrize("args", [
    ("judge", "T", "S", "--device", "gpu"),
    ("eval", "--tasks", "T", "--device", "gpu"),
    ("solve", "T", "--backend", "triton", "--device", "gpu"),
    ("solve", "T", "--backend", "triton", "--top-p", "2"),
    ("propose", "--device", "gpu"),
])  # fmt: skip
def test_9_errors_name_the_flag_not_the_config_field(capsys, tmp_path, args):
    f = _files(tmp_path)
    args = [str(f["task"]) if a == "T" else str(f["sol"]) if a == "S" else a for a in args]
    code, _, err = run(capsys, *args)
    line = one_error_line(err)
    assert code == 2
    assert ("--device" in line or "--top-p" in line) and "Config." not in line and "Options." not in line


# ---------------------------------------------------------------------------------------------------- 10
def test_10_eval_says_the_default_model_is_the_random_tiny_one(capsys, tmp_path, fake_pool, monkeypatch):
    from kernelzero.generation import Completion

    class NoCode:
        name = "tiny-stub"

        def generate(self, prompts, n, sampling):
            return [[Completion("no code here", "stop")] * n for _ in prompts]

    import kernelzero.commands.evaluate as evaluate_cmd

    monkeypatch.setattr(evaluate_cmd, "load_policy", lambda spec, device="auto": NoCode())
    code, _, err = run(capsys, "eval", "--tasks", EVAL_TASKS, "--out", tmp_path / "ev", "--device", "cpu",
                       "--no-plots")  # fmt: skip
    assert code == 0, err
    assert "the tiny local model, randomly initialised" in err


@pytest.mark.parametrize("style", ["full", "brief"])
def test_10_eval_sends_the_prompt_style_asked_for(capsys, tmp_path, fake_pool, monkeypatch, style):
    """`--prompts brief` for a model cold-started from scratch (the study's): the chats carry no rules; the folder
    records the style (a default full run's config is what older folders hold)."""
    from kernelzero.generation import Completion

    chats = []

    class Recording:
        name = "recording"

        def generate(self, prompts, n, sampling):
            chats.extend(prompts)
            return [[Completion("no code here", "stop")] * n for _ in prompts]

    import kernelzero.commands.evaluate as evaluate_cmd

    monkeypatch.setattr(evaluate_cmd, "load_policy", lambda spec, device="auto": Recording())
    code, _, err = run(capsys, "eval", "--tasks", EVAL_TASKS, "--out", tmp_path / "ev", "--device", "cpu",
                       "--no-plots", "--prompts", style)  # fmt: skip
    assert code == 0, err
    assert chats and all(("## Rules" in c[1]["content"]) == (style == "full") for c in chats)
    config = json.loads((tmp_path / "ev" / "eval_config.json").read_text())
    assert config.get("prompts", "full") == style and ("prompts" in config) == (style == "brief")


def test_10_sft_reports_the_loss_the_trainer_logged(capsys, tmp_path, monkeypatch):
    from kernelzero.trainers.config import SFTPhaseConfig

    seen = {}

    def run_sft(cfg, pairs, prompt_fn):
        seen["cfg"], seen["prompt_fn"] = cfg, prompt_fn
        history = [{"train_loss": 15.15, "mean_token_accuracy": 0.0, "step": 2}]  # no per-step log in 2 steps
        return types.SimpleNamespace(log_history=history, global_step=2, final_model_dir=tmp_path / "final")

    fake = types.ModuleType("kernelzero.trainers.sft")
    fake.SFTPhaseConfig, fake.run_sft = SFTPhaseConfig, run_sft
    fake.builtin_pairs = lambda wanted: [types.SimpleNamespace(backend="triton")]
    monkeypatch.setitem(sys.modules, "kernelzero.trainers.sft", fake)
    code, out, err = run(capsys, "sft", "--steps", "2", "--out", tmp_path / "sft", "--device", "cpu")
    assert code == 0, err
    assert seen["cfg"].logging_steps == 2  # the trainer logs a loss at the last step
    assert seen["prompt_fn"].keywords == {"brief": False}  # the full prompt unless --prompts brief
    assert "loss 15.15" in out and "nan" not in out


def test_10_train_does_not_show_trl_deprecation_warnings(capsys, tmp_path, monkeypatch):
    import kernelzero.loop.coevolve as coevolve

    class Loop:
        def __init__(self, cfg, run_dir, say, progress):
            pass

        def run(self):
            warnings.warn("`is_gradient_checkpointing` is deprecated and will be removed in v6. Use "
                          "`is_activation_checkpointing` instead.", FutureWarning, stacklevel=1)  # fmt: skip

    monkeypatch.setattr(coevolve, "CoEvolution", Loop)
    with warnings.catch_warnings(record=True) as shown:  # what would reach stderr
        warnings.simplefilter("always")
        code, _, err = run(capsys, "train", "--out", tmp_path / "run", "--no-report")
    assert code == 0, err
    assert [str(w.message) for w in shown if w.category is FutureWarning] == []


def test_10_piped_tasks_listing_is_not_padded(capsys):
    code, out, _ = run(capsys, "tasks", ROOT / "tests" / "fixtures" / "tasks")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["level", "name", "APIs"] and len(lines) == 4
    assert all(ln == ln.rstrip() for ln in lines)
    assert lines[1].endswith("torch.matmul, Tensor.T, op.neg")  # never wrapped


def test_10_eval_report_shows_its_plots_and_draws_each_series_once(capsys, tmp_path, fake_pool):
    pytest.importorskip("matplotlib")
    out = _eval_dir(capsys, tmp_path)
    report = (out / "report.md").read_text()
    assert "![Outcome of every attempt](outcomes.png)" in report
    assert "![pass@k by refinement turn](pass_by_turn.png)" in report
    assert not (out / "speedups.png").exists() and "speedups.png" not in report  # untimed: nothing to draw
    from kernelzero.eval.plots import pass_series

    series = pass_series(json.loads((out / "summary.json").read_text()))
    assert len(series) == 1  # "no level" and "all" are the same tasks: one line, not two on top of each other


# ---------------------------------------------------------------------------------------------------- every command
NO_ARGUMENT = [
    ("tasks",), ("judge",), ("solve",), ("solve", "TASK"), ("report",), ("export",), ("export", "DIR"), ("eval",),
    ("apis",), ("judge", "--batch", "IN"),
]
MISSING_FILE = [
    ("tasks", "/no/such"), ("judge", "/no/such.py", "SOL"), ("judge", "TASK", "/no/such.py"),
    ("judge", "--batch", "/no/such.jsonl", "--out", "OUT"), ("solve", "/no/such.py", "--backend", "triton"),
    ("eval", "--tasks", "/no/such"), ("eval", "--tasks", "TASK", "--solutions", "/no/such"),
    ("eval", "--compare", "/no/a", "/no/b"), ("report", "/no/such"), ("export", "/no/such", "--out", "OUT"),
    ("train", "--config", "/no/such.yaml"), ("train", "--resume", "/no/such"), ("train", "--coder-model", "/no/such"),
    ("sft", "--pairs", "/no/such"), ("sft", "--model", "/no/such"), ("serve", "--model", "/no/such"),
    ("propose", "--apis", "/no/such.txt"), ("propose", "--validate", "/no/such"),
    ("propose", "--model", "/no/such"), ("propose", "--coder", "/no/such"), ("apis", "mine", "--from", "/no/such"),
    ("apis", "sample", "--counts", "/no/such.json"), ("eval", "--tasks", "TASK", "--model", "/no/such"),
]


@pytest.mark.parametrize("args", NO_ARGUMENT + MISSING_FILE, ids=lambda a: " ".join(a))
def test_every_command_answers_a_missing_argument_or_file_with_exit_2(capsys, tmp_path, fake_pool, args):
    f = _files(tmp_path)
    subst = {"TASK": str(f["task"]), "SOL": str(f["sol"]), "OUT": str(tmp_path / "out"), "DIR": str(tmp_path),
             "IN": str(tmp_path / "in.jsonl")}  # fmt: skip
    (tmp_path / "in.jsonl").write_text("")
    absent = tmp_path / "absent"  # "/no/such" stands for a path under it: a regression must not write outside tmp
    code, out, err = run(capsys, *[str(absent / a[4:]) if a.startswith("/no/") else subst.get(a, a) for a in args])
    assert code == 2, (out, err)
    assert "Traceback" not in out + err
    if args != ("apis",):  # a group without its subcommand answers with its help
        one_error_line(err)
    assert fake_pool.asked == []
