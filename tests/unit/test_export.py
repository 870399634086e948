"""`kernelzero export`: only correct solutions, once each, as JSONL + a datasets dataset that SFT consumes."""

import json

from kernelzero.judge.verdict import Verdict
from kernelzero.loop.export import corpus_rows, export_corpus, load_pairs
from kernelzero.loop.records import VerdictRecord
from kernelzero.loop.runlog import KeyedLog
from kernelzero.roles.coder import Judged
from kernelzero.tasks import Task

TASK_SRC = """import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)

def get_inputs():
    return [torch.randn(4, 4)]

def get_init_inputs():
    return []
"""
SOLUTION = """import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def forward(self, x):
        return x
"""


def write(log, key, status, solution):
    if status == "format_error":
        v = Verdict.fail("format_error", "no code", backend="triton")
    else:
        v = Verdict(status=status, correct=status == "ok", backend="triton")
    task = Task(name="relu", source=TASK_SRC, apis=("torch.relu",))
    record = VerdictRecord.of(key, task, Judged("...", solution, v), "triton")  # as the loop writes it
    log.append(record.key, record.to_dict())


def test_export_keeps_correct_solutions_once(tmp_path):
    run = tmp_path / "run"
    log = KeyedLog(run / "verdicts.jsonl")
    write(log, (0, "coder", 0, 0), "ok", SOLUTION)
    write(log, (0, "coder", 0, 1), "incorrect", SOLUTION + "# wrong\n")
    write(log, (0, "coder", 0, 2), "format_error", None)
    write(log, (0, "coder", 1, 0), "ok", SOLUTION)  # the same solution again
    write(log, (0, "tasks", 0, 0), "ok", SOLUTION + "# other\n")
    rows = corpus_rows(run)
    assert [(r["phase"], r["step"], r["index"]) for r in rows] == [("coder", 0, 0), ("tasks", 0, 0)]
    assert export_corpus(run, tmp_path / "out") == 2
    lines = [json.loads(x) for x in (tmp_path / "out" / "corpus.jsonl").read_text().splitlines()]
    assert lines[0]["solution"] == SOLUTION and json.loads(lines[0]["verdict"])["status"] == "ok"

    from datasets import load_from_disk

    ds = load_from_disk(str(tmp_path / "out" / "dataset"))
    assert ds.num_rows == 2 and ds[0]["task_source"] == TASK_SRC and ds[0]["apis"] == ["torch.relu"]

    from kernelzero.trainers.sft import sft_dataset

    pairs = load_pairs(tmp_path / "out")
    assert [p.solution for p in pairs] == [SOLUTION, SOLUTION + "# other\n"]
    sft = sft_dataset(pairs)  # the format run_sft consumes
    assert sft.num_rows == 2 and SOLUTION.strip() in sft[0]["completion"][0]["content"]
