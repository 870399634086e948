"""The Triton front check (`judge/triton_front.py`): compile errors a launch certainly raises, read from the source
in milliseconds; anything less than certain is left to the worker."""

import ast
import sys
from pathlib import Path

import pytest

pytest.importorskip("triton")

from kernelzero.judge import JudgeOptions  # noqa: E402
from kernelzero.judge.core import Judge  # noqa: E402
from kernelzero.judge.triton_front import triton_front_check  # noqa: E402
from kernelzero.study.family import train_tasks  # noqa: E402
from kernelzero.study.writer import write_solution  # noqa: E402
from kernelzero.tasks import Task  # noqa: E402

sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))
from throughput_cases.mix import mix  # noqa: E402

OK = (Path(__file__).parents[1] / "fixtures" / "judge" / "relu_triton_ok.py").read_text()


def check(source: str) -> str | None:
    return triton_front_check(ast.parse(source))


def test_every_compile_error_of_the_realistic_mix_is_found_and_nothing_else_is():
    found = {}
    for case in mix("triton", 64):
        found.setdefault(case.kind, []).append(check(case.source))
    assert all(why is None for kind, whys in found.items() if kind != "compile" for why in whys)
    kinds = sorted({why.split(":")[1].strip() for why in found["compile"]})
    assert len(found["compile"]) == 19 and kinds == ["AttributeError", "NameError", "TypeError"]
    assert all("nothing run" in why and "_kernel`" in why for why in found["compile"])


def test_the_study_writers_kernels_pass_and_a_misspelt_function_in_any_of_them_is_found():
    sources = [write_solution(t) for t in train_tasks(40)]
    assert [check(s) for s in sources] == [None] * 40
    assert all("'arrange'" in check(s.replace("tl.arange", "tl.arrange", 1)) for s in sources)


def test_the_errors_it_names():
    assert "no attribute 'arrange'" in check(OK.replace("tl.arange", "tl.arrange"))
    assert "name 'maks' is not defined" in check(OK.replace("mask=mask)", "mask=maks)", 1))
    load = "tl.load(x_ptr + offs, mask=mask"
    assert "load() got an unexpected keyword argument 'padding'" in check(OK.replace(load, load + ", padding=0"))
    jit = OK.replace("import triton\n", "import triton\nfrom triton import jit\n").replace("@triton.jit", "@jit")
    assert check(jit) is None and "arrange" in check(jit.replace("tl.arange", "tl.arrange"))
    assert check(OK.replace(load, load + ", other=0.0, eviction_policy='evict_last'")) is None


@pytest.mark.parametrize("change", [
    ("relu_kernel[", "if n > 0:\n            relu_kernel["),  # launched only in a branch
    ("relu_kernel[", "None if n == 0 else relu_kernel["),  # launched in a conditional expression
    ("        x = x.contiguous()\n", "        if x.numel() == 0:\n            return x\n        x = x.contiguous()\n"),
    ("import torch\n", "import torch\nglobals()['maks'] = None\n"),  # names made where the tree cannot see
    ("import torch\n", "import torch\nmaks = None\n"),  # a module constant: defined
    ("    def forward", "    def __call__(self, x):\n        return x\n\n    def forward"),  # forward not what runs
    ("class ModelNew(nn.Module)", "class ModelNew(Base)"),  # a base class that may run something else
])
def test_what_is_not_certain_is_left_to_the_worker(change):
    faulty = OK.replace("mask=mask)", "mask=maks)", 1)
    assert check(faulty) is not None
    assert faulty.replace(*change) != faulty and check(faulty.replace(*change)) is None


def test_a_module_that_could_rebind_names_unseen_is_not_concluded_on():
    """`globals()` could rebind `tl` itself, to a module that has `arrange`."""
    source = OK.replace("tl.arange", "tl.arrange").replace("import torch\n", "import torch\nglobals()['tl'] = None\n")
    assert check(source) is None


def test_faults_inside_a_branch_or_an_unrolled_loop_are_not_concluded():
    kernel_if = OK.replace("    x = tl.load(", "    if n > 0:\n        x = tl.arrange(0, 4)\n    x = tl.load(")
    assert check(kernel_if) is None  # a branch on a constant may be pruned
    static = OK.replace("    x = tl.load(", "    for i in tl.static_range(0):\n        q = tl.arrange(0, 4)\n"
                        "    x = tl.load(")  # fmt: skip
    assert check(static) is None
    loop = static.replace("tl.static_range(0)", "range(0, n)")
    assert "arrange" in check(loop)  # a plain loop's body is generated whatever its trip count


def test_the_judge_answers_it_before_any_worker_or_reference():
    judge = Judge(JudgeOptions(device="cpu"))
    judge.reference = lambda task: pytest.fail("the reference was asked for")
    judge.farm = None
    v = judge.judge(Task(name="relu", source="import torch\n"), OK.replace("tl.arange", "tl.arrange"), "triton")
    assert (v.status, v.guard) == ("compile_error", "compile") and "arrange" in v.feedback
    assert Judge(JudgeOptions(device="cpu", front_check=False)).static_check(OK.replace("tl.arange", "tl.arrange"),
                                                                        "triton") is None  # fmt: skip


def test_a_deep_expression_is_read_without_recursion():
    """2,000 terms parse into a tree deeper than Python's recursion limit; more do not parse at all, and the judge
    answers those `format_error` (CPython raises RecursionError there, which escaped `judge`)."""
    deep = "    x = tl.load(x_ptr + offs, mask=mask)\n    z = " + "+".join(["x"] * 2000) + "\n"
    source = OK.replace("    x = tl.load(x_ptr + offs, mask=mask)\n", deep)
    assert source != OK and check(source) is None
    assert "'maks'" in check(source.replace("mask=mask)", "mask=maks)", 1))
    judge = Judge(JudgeOptions(device="cpu"))
    judge.farm = None
    deeper = source + "z = " + "+".join(["x"] * 20000) + "\n"
    v = judge.judge(Task(name="relu", source="import torch\n"), deeper, "triton")
    assert (v.status, v.guard) == ("format_error", "syntax") and "too deeply nested" in v.feedback


def test_a_pool_answers_it_at_submit_while_its_workers_are_busy():
    """The static steps run in `JudgePool.submit`: a compile error found there never queues behind running
    candidates (here the pool's one thread is taken by a candidate that hangs until its timeout)."""
    from kernelzero.judge.pool import JudgePool

    fixtures = Path(__file__).parents[1] / "fixtures" / "judge"
    task = Task.from_file(fixtures / "relu_task.py")
    with JudgePool(JudgeOptions(device="cpu", run_timeout_s=2), workers=1, warm=False) as pool:
        hang = pool.submit(task, (fixtures / "relu_timeout.py").read_text(), "triton")
        early = pool.submit(task, OK.replace("tl.arange", "tl.arrange"), "triton")
        assert early.done() and not hang.done()
        assert (early.result().status, early.result().guard) == ("compile_error", "compile")
        assert hang.result().status == "timeout"
        bad = pool.submit(task, "class ModelNew(:\n", "fortran")  # an unknown backend: raised by the future,
        with pytest.raises(ValueError, match="backend"):  # as for every request, not by `submit`
            bad.result()
