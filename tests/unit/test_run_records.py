"""The run's records: one type per line of tasks.jsonl and verdicts.jsonl, written once and read back as that type."""

import json

from kernelzero.curriculum.proposals import Proposal, proposed_task_name
from kernelzero.curriculum.validate import ValidationResult
from kernelzero.judge.verdict import Timing, Verdict
from kernelzero.loop.records import TaskRecord, VerdictRecord, read_task_records, read_verdict_records
from kernelzero.loop.runlog import KeyedLog
from kernelzero.roles.coder import Judged
from kernelzero.tasks import Task

SRC = "import torch\n# a task\n"


def test_task_record_keeps_the_validation_fields_whole(tmp_path):
    """Both places that propose tasks write one schema; reason and detail come back as fields, not a joined string."""
    name = proposed_task_name(SRC)
    dup = ValidationResult(name, "duplicate", "similarity 0.91 to proposed-0a1b: a close copy", ("torch.relu",),
                           similar_to="proposed-0a1b", similarity=0.91)  # fmt: skip
    measured = Proposal(name, ("torch.relu",), SRC, ValidationResult(name, None, "", ("torch.relu",)), 1, 4, 0.25, 0.5)
    measured.record_samples([Judged("c", "code", Verdict(status="ok", correct=True))] +
                            [Judged("c", None, Verdict.fail("format_error", "no code"))] * 2 +
                            [Judged("c", "code", Verdict.fail("infra_error", "lost worker"))])  # fmt: skip
    assert (measured.successes, measured.samples, measured.success_rate) == (1, 3, 1 / 3)  # infra: not a sample
    lines = [TaskRecord(0, "proposer", 2, 5, Proposal(name, ("torch.relu",), SRC, dup, reward=-0.5), reward_raw=-0.5),
             TaskRecord(0, "tasks", 0, 1, measured)]  # fmt: skip
    log = KeyedLog(tmp_path / "tasks.jsonl")
    for line in lines:
        log.append(line.key, line.to_dict())
    back = list(read_task_records(tmp_path))
    assert back == lines  # the in-memory judged samples are not part of the record
    assert back[0].proposal.validation == dup and back[0].proposal.validation.detail.count(":") == 1
    raw = json.loads((tmp_path / "tasks.jsonl").read_text().splitlines()[1])
    assert (raw["phase"], raw["valid"], raw["success_rate"]) == ("tasks", True, 1 / 3)
    assert raw["validation"]["reason"] is None


def test_verdict_record_round_trips_the_verdict(tmp_path):
    task = Task(name="t", source=SRC, apis=("torch.relu",))
    v = Verdict(status="ok", correct=True, timed=True, runtime=Timing(1.0, 0.1, 0.9, 10), speedup_eager=2.0)
    rec = VerdictRecord.of((1, "coder", 3, 7), task, Judged("```python\nx\n```", "x", v), "triton")
    assert rec.backend == "triton" and rec.solution == "x"  # the verdict names no backend: the run's
    log = KeyedLog(tmp_path / "verdicts.jsonl")
    log.append(rec.key, rec.to_dict())
    (back,) = read_verdict_records(tmp_path)
    assert back == rec and back.verdict.runtime == Timing(1.0, 0.1, 0.9, 10) and back.verdict.scored_correct
