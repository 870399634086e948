"""bench/throughput_cases/mix.py, the realistic candidate mix: its make-up, and one Triton candidate of each kind
judged on CPU with the status the mix expects (the whole Triton mix, 64 candidates, matched on CPU in 177 s; the
CUDA half needs a GPU: `bench/judge_throughput.py --mix`)."""

import ast
import sys
from collections import Counter
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))

from throughput_cases.mix import EXPECTED, TASKS, mix  # noqa: E402

from kernelzero.judge.guards import run_static  # noqa: E402


@pytest.mark.parametrize("backend", ["cuda", "triton"])
def test_the_mix_has_64_distinct_candidates_over_8_tasks_in_training_proportions(backend):
    cases = mix(backend)
    assert len(cases) == 64 and len({c.source for c in cases}) == 64 and len({c.task for c in cases}) == len(TASKS) == 8
    kinds = Counter(c.kind for c in cases)
    assert kinds == {"ok": 26, "compile": 19, "wrong": 13, "crash": 4, "hang": 2}  # 40 / 30 / 20 / 10 %
    for c in cases:
        ast.parse(c.source)  # a flaw is in the kernel or its use, never a Python syntax error
        assert run_static(c.source, backend) is None, c.name  # no static guard stops it before the judge runs it
        assert (c.flaw == "") == (c.kind == "ok")
    per_task = Counter(c.name.split("_")[2] for c in cases if c.kind == "ok")
    assert len(per_task) == 8 and min(per_task.values()) >= 3  # every task has correct candidates and flawed ones
    assert len({c.flaw for c in cases if c.kind == "compile"}) >= 3


def test_one_triton_candidate_of_each_kind_gets_its_expected_status_on_cpu():
    from kernelzero.judge import JudgeOptions
    from kernelzero.judge.pool import JudgePool
    from kernelzero.tasks import Task

    cases = mix("triton", small=True)
    picked = [next(c for c in cases if c.kind == kind) for kind in EXPECTED]
    with JudgePool(JudgeOptions(device="cpu", timing=False, run_timeout_s=8), workers=2, warm=False) as pool:
        verdicts = pool.judge_many([(Task(name=c.name, source=c.task), c.source, "triton") for c in picked])
    assert [v.status for v in verdicts] == [EXPECTED[c.kind][0] for c in picked], [v.feedback[:200] for v in verdicts]
