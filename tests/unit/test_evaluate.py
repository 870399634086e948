"""`run_eval`/`run_solutions` and `kernelzero eval`: records, resume after a torn write, solution lookup, CLI errors.

The judge is a counting STUB (`CountingJudge`): these tests are about which attempts reach the judge, not about
judging; the real judge runs in tests/integration/test_eval_cpu.py.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernelzero.cli import app
from kernelzero.eval.evaluate import VERDICTS, EvalRecord, find_solution, read_records, run_eval, run_solutions
from kernelzero.generation.base import Completion, SamplingConfig
from kernelzero.judge.verdict import Verdict
from kernelzero.tasks import Task

TASK_SRC = "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x\n"
TASK_SRC += "def get_inputs():\n    return []\ndef get_init_inputs():\n    return []\n"


class CountingJudge:
    """STUB judge: `# ok` in the code is correct, anything else incorrect; records every call."""

    def __init__(self):
        self.calls: list[tuple[str, str]] = []

    def __call__(self, task: Task, code: str, backend: str) -> Verdict:
        self.calls.append((task.name, code))
        if "# ok" in code:
            return Verdict(status="ok", correct=True, backend=backend, task=task.name)
        return Verdict.fail("incorrect", f"wrong output for {task.name}", backend=backend, task=task.name)

    def many(self, requests: Sequence[tuple[Task, str, str]]):
        for r in requests:
            yield self(*r)


class NumberingPolicy:
    """Answers with parseable code numbered by call; every chat it was shown is kept."""

    name = "numbering"

    def __init__(self):
        self.chats: list[list[dict]] = []
        self.count = 0

    def generate(self, prompts, n: int, sampling: SamplingConfig) -> list[list[Completion]]:
        out = []
        for chat in prompts:
            self.chats.append(chat)
            row = []
            for _ in range(n):
                self.count += 1
                marker = "ok" if self.count % 3 == 0 else "wrong"
                code = f"from torch import nn\n\n\nclass ModelNew(nn.Module):\n    pass  # {marker} {self.count}"
                row.append(Completion(f"```python\n{code}\n```", "stop"))
            out.append(row)
        return out


def tasks() -> list[Task]:
    return [Task(name="t1", source=TASK_SRC, level=1), Task(name="t2", source=TASK_SRC, level=1)]


def run(out: Path, judge: CountingJudge, policy: NumberingPolicy | None = None):
    return run_eval(tasks(), policy or NumberingPolicy(), backend="triton", judge_fn=judge, out_dir=out, samples=2,
                    turns=2)  # fmt: skip


def test_every_attempt_is_recorded_with_task_sample_turn_and_source(tmp_path):
    judge = CountingJudge()
    records = run(tmp_path, judge)
    assert [(r.task, r.sample, r.turn) for r in records] == [
        (t, s, turn) for t in ("level1/t1", "level1/t2") for turn in (1, 2) for s in (0, 1)
    ]
    assert len(judge.calls) == 8
    lines = [json.loads(x) for x in (tmp_path / VERDICTS).read_text().splitlines()]
    assert {"task", "sample", "turn", "source", "verdict", "completion"} <= set(lines[0])
    assert [x["source"] for x in lines] == [code for _, code in judge.calls]


def test_resume_after_a_torn_line_judges_only_unfinished_attempts(tmp_path):
    run(tmp_path, CountingJudge())
    path = tmp_path / VERDICTS
    lines = path.read_text().splitlines(keepends=True)
    # Interrupted while writing line 6: five whole lines, then half of the sixth (no newline).
    path.write_text("".join(lines[:5]) + lines[5][: len(lines[5]) // 2])
    kept = [json.loads(x) for x in lines[:5]]
    judge, policy = CountingJudge(), NumberingPolicy()
    records = run(tmp_path, judge, policy)

    # t1 (4 attempts) and t2's sample 0 turn 1 were finished: only t2 s1 t1, then t2's two turn-2 attempts remain.
    assert len(judge.calls) == 3 and {name for name, _ in judge.calls} == {"t2"}
    assert policy.count == 3
    # the resumed chain (t2, sample 0) saw its recorded turn-1 verdict as feedback at turn 2
    assert "wrong output for t2" in policy.chats[-2][-1]["content"]
    assert f"# {kept[4]['source'].split('# ')[-1]}" in policy.chats[-2][-2]["content"]
    after = [json.loads(x) for x in path.read_text().splitlines()]
    assert after[:5] == kept and len(after) == 8
    assert len({(x["task"], x["sample"], x["turn"]) for x in after}) == 8
    assert [(r.task, r.sample, r.turn) for r in records][-4:] == [("level1/t2", s, t) for t in (1, 2) for s in (0, 1)]
    # a third run has nothing left to do
    judge3 = CountingJudge()
    run(tmp_path, judge3)
    assert judge3.calls == []


def test_a_bad_line_before_the_last_is_corruption_not_interruption(tmp_path):
    run(tmp_path, CountingJudge())
    path = tmp_path / VERDICTS
    lines = path.read_text().splitlines(keepends=True)
    path.write_text(lines[0] + "{not json\n" + "".join(lines[1:]))
    with pytest.raises(ValueError, match=r"verdicts.jsonl:2: not an eval record"):
        read_records(path)


def test_a_torn_last_line_with_its_newline_is_dropped(tmp_path):
    run(tmp_path, CountingJudge())
    path = tmp_path / VERDICTS
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:3]) + '{"task": "level1/t1", "sam\n')
    assert len(read_records(path, repair=True)) == 3
    assert path.read_text() == "".join(lines[:3])


def test_solutions_are_found_by_name_or_level_folder_and_missing_ones_recorded(tmp_path):
    sols = tmp_path / "sols"
    (sols / "level1").mkdir(parents=True)
    (sols / "level1" / "t1.py").write_text("class ModelNew: ...  # ok")
    (sols / "t2.py").write_text("class ModelNew: ...  # wrong")
    three = [*tasks(), Task(name="t3", source=TASK_SRC, level=1)]
    assert find_solution(three[0], sols) == sols / "level1" / "t1.py"
    assert find_solution(three[2], sols) is None
    judge = CountingJudge()
    records = run_solutions(three, sols, backend="triton", judge_many=judge.many, out_dir=tmp_path / "run")
    assert [(r.task, r.verdict.status, r.verdict.guard) for r in records] == [
        ("level1/t1", "ok", None), ("level1/t2", "incorrect", None), ("level1/t3", "format_error", "missing_solution")
    ]  # fmt: skip
    assert len(judge.calls) == 2
    again = CountingJudge()
    run_solutions(three, sols, backend="triton", judge_many=again.many, out_dir=tmp_path / "run")
    assert again.calls == []


runner = CliRunner()


def test_cli_refuses_k_above_samples_and_kernelbench_without_a_checkout(tmp_path, monkeypatch):
    res = runner.invoke(app, ["eval", "--tasks", "tests/fixtures/eval_tasks", "--samples", "2", "--k", "1,10"])
    assert res.exit_code == 2 and "every k must be between 1 and the samples per task (2" in res.output
    monkeypatch.delenv("KERNELBENCH_DIR", raising=False)
    res = runner.invoke(app, ["eval", "--tasks", "kernelbench:1"])
    assert res.exit_code == 2 and "--kernelbench-dir DIR or set $KERNELBENCH_DIR" in res.output
    res = runner.invoke(app, ["eval", "--tasks", "kernelbench:1", "--kernelbench-dir", str(tmp_path)])
    assert res.exit_code == 2 and "is not a KernelBench checkout" in res.output
    res = runner.invoke(app, ["eval", "--tasks", "tests/fixtures/eval_tasks", "--solutions", str(tmp_path), "--k", "2"])
    assert res.exit_code == 2 and "one solution per task with --solutions" in res.output


def test_cli_resume_refuses_other_settings(tmp_path):
    (tmp_path / "eval_config.json").write_text(json.dumps({"samples": 4}))
    ok = Verdict(status="ok", correct=True)  # the pin binds once a verdict is recorded
    (tmp_path / "verdicts.jsonl").write_text(EvalRecord("1_relu", None, 0, 1, "code", ok).to_json() + "\n")
    res = runner.invoke(app, ["eval", "--tasks", "tests/fixtures/eval_tasks", "--samples", "2", "--out", str(tmp_path)])
    assert res.exit_code == 2 and re.search(r"samples: 4 there, 2 now", res.output)


class KeyedPolicy:
    """Answers that depend only on the chat and the answer's place among its n, never on which `generate` call asks:
    an attempt gets the same answer task by task or batched over tasks. Records (chats, n) of each call."""

    name = "keyed"

    def __init__(self):
        self.calls: list[tuple[int, int]] = []

    def generate(self, prompts, n: int, sampling: SamplingConfig) -> list[list[Completion]]:
        self.calls.append((len(prompts), n))
        out = []
        for chat in prompts:
            row = []
            for j in range(n):
                h = hashlib.sha256(json.dumps([chat, j]).encode()).hexdigest()[:8]
                marker = "ok" if h < "6" else "wrong"  # about a third correct
                code = f"from torch import nn\n\n\nclass ModelNew(nn.Module):\n    pass  # {marker} {h}"
                row.append(Completion(f"```python\n{code}\n```", "stop"))
            out.append(row)
        return out


class BatchedJudge(CountingJudge):
    """A `judge_many` (list-returning, as `JudgePool.judge_many`) that keeps the size of each batch."""

    def __init__(self):
        super().__init__()
        self.batches: list[int] = []

    def judge_many(self, requests):
        self.batches.append(len(requests))
        return list(self.many(requests))


def _fields(records: Sequence[EvalRecord]) -> list[tuple]:
    return [(r.key, r.level, r.source, r.completion, r.finish_reason, r.verdict.to_dict()) for r in records]


def test_judging_a_turn_in_one_batch_gives_the_same_records(tmp_path):
    one, batched = CountingJudge(), BatchedJudge()
    p1, p2 = KeyedPolicy(), KeyedPolicy()
    a = run_eval(tasks(), p1, backend="triton", judge_fn=one, out_dir=tmp_path / "a", samples=2, turns=2)
    b = run_eval(tasks(), p2, backend="triton", judge_fn=None, judge_many=batched.judge_many,
                 out_dir=tmp_path / "b", samples=2, turns=2)  # fmt: skip
    assert batched.batches == [4, 4]  # one batch per turn, over both tasks
    assert p1.calls == [(1, 2), (2, 1), (1, 2), (2, 1)] and p2.calls == [(2, 2), (4, 1)]  # one generate per turn
    assert _fields(a) == _fields(b) and len(a) == 8
    assert {r.verdict.status for r in a} == {"ok", "incorrect"}  # both kinds of feedback reach turn 2


def test_run_eval_with_a_pool_judges_every_task_of_a_turn_in_one_call(tmp_path):
    five = [Task(name=f"t{i}", source=TASK_SRC, level=2) for i in range(5)]
    one, batched = CountingJudge(), BatchedJudge()
    policy = NumberingPolicy()
    a = run_eval(five, NumberingPolicy(), backend="triton", judge_fn=one, out_dir=tmp_path / "a", samples=3)
    b = run_eval(five, policy, backend="triton", judge_fn=None, judge_many=batched.judge_many,
                 out_dir=tmp_path / "b", samples=3)  # fmt: skip
    assert batched.batches == [15] and len(one.calls) == 15  # one call of 15 requests, not five of three
    assert len(policy.chats) == 5 and policy.count == 15
    assert _fields(a) == _fields(b)
    assert [(r.task, r.sample) for r in b] == [(f"level2/t{i}", s) for i in range(5) for s in range(3)]
    assert (tmp_path / "a" / VERDICTS).read_text() == (tmp_path / "b" / VERDICTS).read_text()  # same lines, same order


def test_batched_verdicts_are_recorded_as_they_arrive(tmp_path):
    """With a streaming judge_many (`JudgePool.imap`), each verdict is on disk before the next one is judged."""
    judge, on_disk = CountingJudge(), []

    def imap(requests):
        for r in requests:
            path = tmp_path / VERDICTS
            on_disk.append(len(path.read_text().splitlines()) if path.exists() else 0)
            yield judge(*r)

    run_eval(tasks(), NumberingPolicy(), backend="triton", judge_fn=None, judge_many=imap, out_dir=tmp_path,
             samples=3)  # fmt: skip
    assert on_disk == [0, 1, 2, 3, 4, 5]


def test_resume_with_a_pool_neither_generates_nor_judges_recorded_attempts(tmp_path):
    run_eval(tasks(), NumberingPolicy(), backend="triton", judge_fn=None, judge_many=BatchedJudge().judge_many,
             out_dir=tmp_path, samples=2, turns=2)  # fmt: skip
    path = tmp_path / VERDICTS
    lines = path.read_text().splitlines(keepends=True)
    kept = [json.loads(x) for x in lines[:3]]
    assert [(x["task"], x["sample"], x["turn"]) for x in kept] == [("level1/t1", 0, 1), ("level1/t1", 1, 1),
                                                                    ("level1/t2", 0, 1)]  # fmt: skip
    path.write_text("".join(lines[:3]) + lines[3][:10])  # interrupted while writing t2's sample 1, turn 1
    judge, policy = BatchedJudge(), NumberingPolicy()
    records = run_eval(tasks(), policy, backend="triton", judge_fn=None, judge_many=judge.judge_many,
                       out_dir=tmp_path, samples=2, turns=2)  # fmt: skip

    assert judge.batches == [1, 4] and policy.count == 5  # t2 s1 t1, then every turn-2 attempt
    assert [name for name, _ in judge.calls] == ["t2", "t1", "t1", "t2", "t2"]
    assert policy.chats[0][-1]["role"] == "user" and len(policy.chats[0]) == 2  # t2's turn-1 chat, asked for n=1
    # the turn-2 chats of the resumed chains carry their recorded answers and verdicts
    for chat, old in zip(policy.chats[1:4], kept, strict=True):
        assert old["source"].split("# ")[-1] in chat[2]["content"]
        assert Verdict.from_dict(old["verdict"]).feedback in chat[3]["content"]
    after = [json.loads(x) for x in path.read_text().splitlines()]
    assert after[:3] == kept and len({(x["task"], x["sample"], x["turn"]) for x in after}) == len(after) == 8
    assert [r.key for r in records] == [(t, s, turn) for t in ("level1/t1", "level1/t2") for turn in (1, 2)
                                        for s in (0, 1)]  # fmt: skip
