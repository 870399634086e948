"""`solve` and `kernelzero solve`: generation, parsing, judging, refinement turns, the best pick, the output files.

The judge here is `stub_judge`, a stand-in that decides from markers in the code: the real judge is tested on its
own, and `solve` only needs its interface (`judge_fn(task, code, backend) -> Verdict`).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernelzero.cli import app
from kernelzero.eval.solve import solve, solve_many, write_solve_outputs
from kernelzero.generation.base import Completion, SamplingConfig
from kernelzero.judge.verdict import Verdict
from kernelzero.roles.coder import worked_example
from kernelzero.tasks import Task

TASK_SOURCE = worked_example("triton")[0]


def answer(marker: str) -> str:
    """A well-formed Coder completion whose code carries a marker the stub judge reads."""
    return f"Fused kernel:\n```python\nfrom torch import nn\n\n\nclass ModelNew(nn.Module):\n    pass  # {marker}\n```"


class StubJudge:
    """STUB, not the judge: `# ok:<speedup>` is correct at that speedup, `# wrong` is incorrect, else compile_error."""

    def __init__(self):
        self.calls: list[tuple[str, str, str]] = []

    def __call__(self, task: Task, code: str, backend: str) -> Verdict:
        self.calls.append((task.name, code, backend))
        if m := re.search(r"# ok:([\d.]+)", code):
            return Verdict(status="ok", correct=True, timed=True, speedup_eager=float(m[1]), backend=backend)
        if "# wrong" in code:
            return Verdict.fail("incorrect", "max abs error 0.5 at output[3, 7]", backend=backend)
        return Verdict.fail("compile_error", "error: identifier 'blockIdx' is undefined", backend=backend)


@pytest.fixture
def stub_judge() -> StubJudge:
    return StubJudge()


class ScriptedPolicy:
    """Answers from a script, one list per generate() call (row-major over prompts x n); records the prompts."""

    name = "scripted"

    def __init__(self, script: list[list[str]]):
        self.script, self.prompts = list(script), []

    def generate(self, prompts: Sequence[list[dict]], n: int, sampling: SamplingConfig) -> list[list[Completion]]:
        self.prompts.append(list(prompts))
        texts = self.script.pop(0)
        assert len(texts) == len(prompts) * n
        return [[Completion(t, "stop") for t in texts[i * n : (i + 1) * n]] for i in range(len(prompts))]


def task() -> Task:
    return Task(name="scaled_add_relu", source=TASK_SOURCE)


def test_unparsable_completion_gets_format_error_without_the_judge(stub_judge):
    policy = ScriptedPolicy([["I would fuse the two ops.", answer("ok:1.5")]])
    result = solve(task(), policy, backend="triton", judge_fn=stub_judge, samples=2)
    first, second = result.rollouts
    assert first.verdict.status == "format_error" and first.code is None
    assert first.verdict.feedback == "no ```python code block defining class ModelNew in the completion"
    assert second.verdict.status == "ok" and "# ok:1.5" in second.code
    assert [c[1] for c in stub_judge.calls] == [second.code]  # the judge saw only the parsed code
    assert stub_judge.calls[0][2] == "triton" and result.best is second and result.solved


def test_later_turns_show_each_sample_its_own_code_and_feedback(stub_judge):
    policy = ScriptedPolicy([[answer("wrong"), "no code here"], [answer("ok:2.0"), answer("ok:1.1")]])
    result = solve(task(), policy, backend="cuda", judge_fn=stub_judge, samples=2, turns=2)
    turn1, turn2 = policy.prompts
    assert len(turn1) == 1 and len(turn2) == 2  # turn 1: one chat with n=2; turn 2: one chat per sample
    chat0, chat1 = turn2
    assert [m["role"] for m in chat0] == ["system", "user", "assistant", "user"]
    assert "# wrong" in chat0[2]["content"] and "Status: incorrect.\nmax abs error 0.5" in chat0[3]["content"]
    assert chat1[2]["content"] == "no code here"
    assert "Status: format_error (guard: parse).\nno ```python code block" in chat1[3]["content"]
    assert "# wrong" not in json.dumps(chat1)  # samples never see each other
    assert [(r.sample, r.turn, r.verdict.status) for r in result.rollouts] == [
        (0, 1, "incorrect"),
        (1, 1, "format_error"),
        (0, 2, "ok"),
        (1, 2, "ok"),
    ]
    assert (result.best.sample, result.best.turn) == (0, 2)  # the faster of the two correct ones


def test_best_prefers_correct_then_speed_then_earliest(stub_judge):
    policy = ScriptedPolicy([[answer("wrong"), answer("ok:1.2"), answer("ok:1.2"), "nothing"]])
    result = solve(task(), policy, backend="triton", judge_fn=stub_judge, samples=4)
    assert result.best.sample == 1
    none_correct = ScriptedPolicy([["nothing", answer("compile me"), answer("wrong")]])
    result = solve(task(), none_correct, backend="triton", judge_fn=stub_judge, samples=3)
    assert result.best.verdict.status == "incorrect" and not result.solved


def test_outputs_on_disk(stub_judge, tmp_path):
    policy = ScriptedPolicy([["nothing", answer("ok:3.0")], [answer("wrong"), answer("ok:1.0")]])
    result = solve(task(), policy, backend="triton", judge_fn=stub_judge, samples=2, turns=2)
    out = write_solve_outputs(result, tmp_path / "run")
    rows = [json.loads(line) for line in (out / "verdicts.jsonl").read_text().splitlines()]
    assert [(r["sample"], r["turn"]) for r in rows] == [(0, 1), (1, 1), (0, 2), (1, 2)]
    assert [Verdict.from_dict(r["verdict"]).status for r in rows] == ["format_error", "ok", "incorrect", "ok"]
    assert sorted(p.name for p in (out / "solutions").iterdir()) == ["s00_t2.py", "s01_t1.py", "s01_t2.py"]
    assert (out / "completions" / "s00_t1.txt").read_text() == "nothing"
    assert (out / "best.py").read_text() == result.rollouts[1].code
    summary = json.loads((out / "summary.json").read_text())
    assert summary["best"] == {
        "sample": 1,
        "turn": 1,
        "status": "ok",
        "speedup_eager": 3.0,
        "speedup_compile": None,
    }
    assert summary["statuses"] == {"format_error": 1, "ok": 2, "incorrect": 1} and summary["solved"]


class BatchRecorder:
    """A `judge_many` over `stub_judge` that keeps each call's requests (task name, code)."""

    def __init__(self, judge: StubJudge):
        self.judge, self.batches = judge, []

    def __call__(self, requests):
        self.batches.append([(t.name, code) for t, code, _ in requests])
        return [self.judge(*r) for r in requests]


def test_solve_many_generates_and_judges_each_turn_once_and_chains_keep_their_own_feedback(stub_judge):
    a, b = Task(name="a", source=TASK_SOURCE), Task(name="b", source=TASK_SOURCE.replace("relu", "relu6"))
    policy = ScriptedPolicy([
        [answer("wrong a0"), "no code a1", answer("ok:1.5 b0"), answer("b1")],  # turn 1: (task a x 2), (task b x 2)
        [answer("ok:2.0 a0"), answer("wrong a1"), answer("ok:1.2 b0"), answer("ok:3.0 b1")],  # turn 2: one per chain
    ])  # fmt: skip
    judge_many, seen = BatchRecorder(stub_judge), []
    results = solve_many([a, b], policy, backend="triton", judge_many=judge_many, samples=2, turns=2,
                         on_rollout=lambda i, r: seen.append((i, r.sample, r.turn)))  # fmt: skip
    assert [len(chats) for chats in policy.prompts] == [2, 4]  # one generate per turn over both tasks
    assert [[name for name, _ in batch] for batch in judge_many.batches] == [["a", "b", "b"], ["a", "a", "b", "b"]]
    # every new rollout is reported, the unparsable one too (it never reached the judge), in task then sample order
    assert seen == [(i, s, t) for t in (1, 2) for i in (0, 1) for s in (0, 1)]
    a0, a1, b0, b1 = policy.prompts[1]
    assert "relu6" not in json.dumps(a0) and "relu6" in b0[1]["content"]  # each chain keeps its own task
    assert "# wrong a0" in a0[2]["content"] and "Status: incorrect.\nmax abs error 0.5" in a0[3]["content"]
    assert a1[2]["content"] == "no code a1" and "Status: format_error (guard: parse)" in a1[3]["content"]
    assert "# ok:1.5 b0" in b0[2]["content"] and "Status: ok (correct; speed: 1.50x" in b0[3]["content"]
    assert "# b1" in b1[2]["content"] and "Status: compile_error." in b1[3]["content"]
    for mine, chat in zip(("a0", "a1", "b0", "b1"), (a0, a1, b0, b1), strict=True):  # chains never see each other
        replayed = chat[2]["content"] + "\n" + chat[3]["content"]
        assert [m for m in ("a0", "a1", "b0", "b1") if re.search(rf"\b{m}\b", replayed)] == [mine]
    assert [(r.sample, r.turn, r.verdict.status) for r in results[0].rollouts] == [
        (0, 1, "incorrect"), (1, 1, "format_error"), (0, 2, "ok"), (1, 2, "incorrect")
    ]  # fmt: skip
    assert [r.verdict.speedup_eager for r in results[1].rollouts] == [1.5, None, 1.2, 3.0]
    assert (results[0].task, results[1].best.sample, results[1].best.turn) == ("a", 1, 2)


def test_solve_many_replays_done_rollouts_without_generating_or_judging_them(stub_judge):
    a, b = Task(name="a", source=TASK_SOURCE), Task(name="b", source=TASK_SOURCE)
    first = solve_many([a, b], ScriptedPolicy([[answer("wrong a0"), answer("ok:1.1 a1"), "b0", answer("wrong b1")]]),
                       backend="triton", judge_many=BatchRecorder(StubJudge()), samples=2)  # fmt: skip
    done_a = {(r.sample, r.turn): r for r in first[0].rollouts}  # task a's turn 1 is recorded, and b's sample 1
    done_b = {(1, 1): first[1].rollouts[1]}
    policy = ScriptedPolicy([[answer("wrong b0 again")], [answer(f"ok:2.0 {m}") for m in ("a0", "a1", "b0", "b1")]])
    judge_many, seen = BatchRecorder(stub_judge), []
    results = solve_many([a, b], policy, backend="triton", judge_many=judge_many, samples=2, turns=2,
                         done=[done_a, done_b], on_rollout=lambda i, r: seen.append((i, r.sample, r.turn)))  # fmt: skip
    assert [len(chats) for chats in policy.prompts] == [1, 4]  # turn 1: only b's sample 0 is generated
    assert [len(batch) for batch in judge_many.batches] == [1, 4]
    assert "# wrong b0 again" in judge_many.batches[0][0][1]
    assert seen == [(1, 0, 1), (0, 0, 2), (0, 1, 2), (1, 0, 2), (1, 1, 2)]  # never for a replayed rollout
    assert results[0].rollouts[:2] == first[0].rollouts and results[1].rollouts[1] is done_b[(1, 1)]
    a0, a1, b0, b1 = policy.prompts[1]  # replayed chains carry their recorded answer and verdict
    assert "# wrong a0" in a0[2]["content"] and "Status: incorrect." in a0[3]["content"]
    assert "# ok:1.1 a1" in a1[2]["content"] and "# wrong b0 again" in b0[2]["content"]
    assert "# wrong b1" in b1[2]["content"]


def test_solve_without_a_pool_records_each_verdict_before_the_next_judging():
    order = []

    def judge_fn(task, code, backend):
        order.append(("judge", code.split("# ")[-1].strip()))
        return Verdict.fail("incorrect", "stub", backend=backend)

    policy = ScriptedPolicy([[answer("s0"), answer("s1"), answer("s2")]])
    solve(task(), policy, backend="triton", judge_fn=judge_fn, samples=3,
          on_rollout=lambda r: order.append(("record", r.sample)))  # fmt: skip
    assert order == [("judge", "s0"), ("record", 0), ("judge", "s1"), ("record", 1), ("judge", "s2"), ("record", 2)]


def test_samples_and_turns_must_be_positive(stub_judge):
    with pytest.raises(ValueError, match="samples and turns must be >= 1, got samples=0"):
        solve(task(), ScriptedPolicy([]), backend="triton", judge_fn=stub_judge, samples=0)


@pytest.fixture
def task_file(tmp_path) -> Path:
    path = tmp_path / "scaled_add_relu.py"
    path.write_text(TASK_SOURCE)
    return path


@pytest.fixture
def cli_stub_judge(monkeypatch, stub_judge) -> StubJudge:
    """Puts `stub_judge` where the CLI imports the real one from (a JudgePool of kernelzero.judge.pool)."""
    import types

    seen_options = []

    class Pool:
        def __init__(self, options=None, workers=None, **kw):
            seen_options.append(options)
            self.judge_ = types.SimpleNamespace(device="cpu")

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            pass

        def judge(self, task, code, backend):
            return stub_judge(task, code, backend)

        def judge_many(self, requests):
            return [stub_judge(*r) for r in requests]

    module = types.ModuleType("kernelzero.judge.pool")
    module.JudgePool = Pool
    monkeypatch.setitem(sys.modules, "kernelzero.judge.pool", module)
    stub_judge.options = seen_options
    return stub_judge


@pytest.mark.usefixtures("torch_one_thread")
def test_cli_solve_end_to_end_with_the_tiny_model(tiny_model_dir, task_file, cli_stub_judge, tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELZERO_CACHE", str(tiny_model_dir.parent))  # no --model: the tiny model, already built
    out = tmp_path / "out"
    args = ["solve", str(task_file), "--backend", "triton", "--samples", "2", "--turns", "2"]
    args += ["--out", str(out), "--max-new-tokens", "16", "--seed", "0", "--gen-device", "cpu"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in (out / "verdicts.jsonl").read_text().splitlines()]
    assert len(rows) == 4
    # A random model writes no code: every answer is a format error, and the judge is never called.
    assert {r["verdict"]["status"] for r in rows} == {"format_error"} and cli_stub_judge.calls == []
    assert len(list((out / "completions").iterdir())) == 4 and not (out / "best.py").exists()
    assert "scaled_add_relu (triton," in result.output and "format_error" in result.output
    assert f"not solved; best: sample 0 turn 1 (format_error); wrote {out}" in result.output


def test_cli_solve_refuses_bad_input_before_loading_a_model(task_file, tmp_path, cli_stub_judge):
    runner = CliRunner()
    r = runner.invoke(app, ["solve", str(task_file), "--backend", "hip"])
    assert r.exit_code == 2 and "--backend must be one of cuda, triton, got 'hip'" in r.output
    r = runner.invoke(app, ["solve", str(tmp_path / "missing.py"), "--backend", "cuda"])
    assert r.exit_code == 2 and "no task file at" in r.output
    not_a_task = tmp_path / "notes.py"
    not_a_task.write_text("x = 1\n")
    r = runner.invoke(app, ["solve", str(not_a_task), "--backend", "cuda"])
    assert (
        r.exit_code == 2
        and "notes.py:1: missing class Model, function get_inputs, function get_init_inputs" in r.output
    )
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "x").write_text("")
    r = runner.invoke(app, ["solve", str(task_file), "--backend", "cuda", "--out", str(tmp_path / "busy")])
    assert r.exit_code == 2 and "already holds files" in r.output
    r = runner.invoke(app, ["solve", str(task_file), "--backend", "cuda", "--model", "openai:nourl"])
    assert r.exit_code == 2 and "must look like openai:MODEL@http" in r.output


def test_cli_help_does_not_import_torch():
    code = (
        "import sys; from kernelzero.cli import app; "
        "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))"
    )
    src = str(Path(__file__).parents[2] / "src")
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env={"PYTHONPATH": src}, check=True
    )
    assert out.stdout.strip() == "[]"
