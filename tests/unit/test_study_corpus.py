"""The study's cold-start corpus: only `ok` pairs kept, in the export format, test tasks refused, leaks found.

The judge is not under test here (tests/unit/test_study_writer.py judges the writer for real): a stub returns the
verdict each task is given, so these tests take well under a second."""

import json

import pytest

from kernelzero.judge import JudgeOptions
from kernelzero.judge.pool import JudgePool
from kernelzero.judge.verdict import Verdict
from kernelzero.loop.export import load_pairs
from kernelzero.study.corpus import PHASE, build_corpus, check_corpus, solution_rows
from kernelzero.study.family import TEST_PAIRS, FamilyConfig, api_pairs, test_tasks, train_tasks
from kernelzero.study.writer import write_solution

SMALL = FamilyConfig(rows=(64, 128), cols=(64, 128))
# loop.export's row schema
EXPORT_KEYS = {"task_name", "task_source", "apis", "backend", "solution", "speedup", "verdict", "round", "phase",
               "step", "index"}  # fmt: skip


def stub_judge(fail: set[str]):
    """A judge_many that passes every task except those named in `fail` (judged `incorrect`)."""
    seen = []

    def judge_many(requests):
        out = []
        for task, source, backend in requests:
            seen.append((task.name, source, backend))
            if task.name in fail:
                out.append(Verdict.fail("incorrect", "outside atol", guard="value", backend=backend, task=task.name))
            else:
                out.append(Verdict(status="ok", correct=True, backend=backend, device="cpu", task=task.name, trials=5))
        return out

    judge_many.seen = seen
    return judge_many


def test_only_ok_pairs_are_kept_in_the_export_format(tmp_path):
    tasks = train_tasks(5, config=SMALL)
    judge = stub_judge({tasks[1].name, tasks[3].name})
    summary = build_corpus(tasks, tmp_path / "corpus", judge)
    assert [name for name, _, _ in judge.seen] == [t.name for t in tasks]
    assert all(src == write_solution(t) and b == "triton" for t, (_, src, b) in zip(tasks, judge.seen))
    assert (summary.judged, summary.kept) == (5, 3) and summary.statuses == {"ok": 3, "incorrect": 2}
    assert [f[0] for f in summary.failures] == [tasks[1].name, tasks[3].name]
    rows = [json.loads(x) for x in (tmp_path / "corpus" / "corpus.jsonl").read_text().splitlines()]
    assert [r["task_name"] for r in rows] == [tasks[i].name for i in (0, 2, 4)]
    for r, i in zip(rows, (0, 2, 4)):
        assert set(r) == EXPORT_KEYS and r["phase"] == PHASE and r["step"] == i
        assert r["task_source"] == tasks[i].source and r["solution"] == write_solution(tasks[i])
        assert r["apis"] == list(tasks[i].apis) and Verdict.from_json(r["verdict"]).status == "ok"
    assert (tmp_path / "corpus" / "dataset").is_dir()
    pairs = load_pairs(tmp_path / "corpus")  # what `kernelzero sft --pairs` reads
    assert [(p.task.name, p.backend) for p in pairs] == [(tasks[i].name, "triton") for i in (0, 2, 4)]
    assert check_corpus(tmp_path / "corpus").ok


def test_a_test_task_is_refused_before_anything_is_judged(tmp_path):
    judge = stub_judge(set())
    with pytest.raises(ValueError, match="test-pair tasks"):
        solution_rows(train_tasks(3) + test_tasks(1), judge)
    assert judge.seen == []


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_check_corpus_rejects_a_corpus_holding_a_test_pair(tmp_path):
    train = train_tasks(4, config=SMALL)
    rows, _ = solution_rows(train, stub_judge(set()))
    clean = tmp_path / "clean.jsonl"
    _write(clean, rows)
    check = check_corpus(clean)
    assert check.ok and check.rows == 4

    leak = test_tasks(1, config=SMALL)[0]
    bad_row = {**rows[0], "task_name": leak.name, "task_source": leak.source, "apis": list(leak.apis),
               "solution": write_solution(leak)}  # fmt: skip
    dirty = tmp_path / "dirty.jsonl"
    _write(dirty, [*rows[:2], bad_row, *rows[2:]])
    check = check_corpus(dirty)
    assert not check.ok and check.rows == 5
    assert [(x.line, x.task_name) for x in check.leaks] == [(3, leak.name)]
    assert {frozenset(p) for p in check.leaks[0].pairs} == set(api_pairs(leak.apis) & TEST_PAIRS)


def test_check_corpus_reads_the_source_not_only_the_recorded_api_set(tmp_path):
    """A row that records a training set but whose task uses a test pair is still a leak."""
    leak = test_tasks(1, config=SMALL)[0]
    row = {"task_name": "looks-clean", "task_source": leak.source, "apis": ["F.relu", "torch.tanh"]}
    path = tmp_path / "corpus.jsonl"
    _write(path, [row])
    assert [x.task_name for x in check_corpus(path).leaks] == ["looks-clean"]


@pytest.mark.slow  # three real CPU judgings and a reference each: about 30 s on the 2-core box
def test_build_corpus_with_the_real_cpu_judge_keeps_the_writer_solutions(tmp_path):
    tasks = train_tasks(3, config=FamilyConfig(rows=(64, 64), cols=(64, 128)))
    with JudgePool(JudgeOptions(device="cpu", trials=3), workers=2) as pool:
        summary = build_corpus(tasks, tmp_path / "corpus", pool.judge_many)
    assert summary.kept == 3 and summary.statuses == {"ok": 3}, summary.failures
    assert check_corpus(tmp_path / "corpus").ok
