"""The study's kernel writer: solutions with the task's signatures, clean under the static guards, and `ok` under the
real CPU judge (Triton interpreter) for every kind of chain; a broken one is not."""

import ast

import pytest

from kernelzero.judge import JudgeOptions
from kernelzero.judge.guards import run_static
from kernelzero.judge.pool import JudgePool
from kernelzero.study.family import REDUCTIONS, SOFTMAX, FamilyConfig, test_tasks, train_tasks
from kernelzero.study.writer import write_solution

SMALL = FamilyConfig(rows=(64, 64), cols=(64, 128))  # the interpreter runs one program per row: few rows
ROW_OPS = {*REDUCTIONS, SOFTMAX}


def _signature(source: str, cls: str) -> tuple[list[str], list[str]]:
    node = next(n for n in ast.parse(source).body if isinstance(n, ast.ClassDef) and n.name == cls)
    fns = {f.name: [a.arg for a in f.args.args] for f in node.body if isinstance(f, ast.FunctionDef)}
    return fns["__init__"], fns["forward"]


def test_solutions_keep_the_task_signatures_and_pass_the_static_guards():
    for t in train_tasks(120) + test_tasks(64):
        source = write_solution(t)
        assert _signature(source, "ModelNew") == _signature(t.source, "Model")
        assert "@triton.jit" in source and "make_block_ptr" not in source
        assert run_static(source) is None, t.name
        row_op = any(a in ROW_OPS for a in t.apis)
        assert ("triton.next_power_of_2(n_cols)" in source) == row_op  # one program per row
        assert ("triton.cdiv(n_elements, BLOCK_SIZE)" in source) == (not row_op)  # flat 1-D grid


def _pick(tasks, kinds):
    """The first task of each kind: every way the writer lays out a kernel, every operand kind."""
    checks = {
        "elementwise_clamp": lambda t: not set(t.apis) & ROW_OPS and "torch.clamp" in t.apis,
        "elementwise_tensor": lambda t: not set(t.apis) & ROW_OPS and any(op.tensor for op in t.ops),
        "reduction_tensor": lambda t: t.apis[-1] in ("torch.sum", "torch.mean") and any(op.tensor for op in t.ops),
        "amax_scalar": lambda t: t.apis[-1] == "torch.amax" and any(op.params for op in t.ops),
        "softmax_then_more": lambda t: SOFTMAX in t.apis and t.apis[-1] != SOFTMAX,
    }
    return {kind: next(t for t in tasks if checks[kind](t)) for kind in kinds}


KINDS = ("elementwise_clamp", "elementwise_tensor", "reduction_tensor", "amax_scalar", "softmax_then_more")
CASES = _pick(train_tasks(80, config=SMALL) + test_tasks(64, config=SMALL), KINDS)


def _broken(source: str) -> str:
    """The same kernel with its stored result off by 1% (a plausible numerical bug)."""
    out = source.replace("x, mask=mask)", "x * 1.01, mask=mask)")
    assert out != source
    return out


@pytest.fixture(scope="module")
def verdicts():
    """Five writer solutions and one broken one, judged by the real judge on CPU (about 5 s of CPU each)."""
    requests = [(t.task(), write_solution(t), "triton") for t in CASES.values()]
    broken = CASES["softmax_then_more"]
    requests.append((broken.task(), _broken(write_solution(broken)), "triton"))
    with JudgePool(JudgeOptions(device="cpu", trials=3, run_timeout_s=60), workers=2) as pool:
        results = pool.judge_many(requests)
    return dict(zip([*CASES, "broken"], results))


@pytest.mark.parametrize("kind", list(CASES))
def test_writer_solution_is_ok_under_the_cpu_judge(verdicts, kind):
    v = verdicts[kind]
    assert v.status == "ok", (CASES[kind].name, v.feedback)
    assert v.trials == 3 and v.device == "cpu"


def test_a_broken_solution_is_judged_incorrect(verdicts):
    v = verdicts["broken"]
    assert v.status == "incorrect" and not v.correct and v.guard == "value", v.feedback
