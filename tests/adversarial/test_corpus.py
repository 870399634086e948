"""The adversarial corpus through the real judge: every exploit gets its expected verdict, every legit solution `ok`.

Each file in `cases/` and `legit/` declares EXPECT_STATUS, EXPECT_GUARD, TASK, BACKEND and NEEDS_GPU as module
constants (read here with `ast`, never by importing the file). NEEDS_GPU files are marked `gpu`. Files with
`MIXED = True` (library GEMM plus a custom epilogue) are judged under `library_ops="allow_gemm"`.
"""

from __future__ import annotations

import ast
import os
import time
from concurrent.futures import as_completed
from pathlib import Path

import pytest

from kernelzero.judge import JudgeOptions
from kernelzero.judge.pool import JudgePool
from kernelzero.tasks import Task

HERE = Path(__file__).parent
FILES = sorted((HERE / "cases").glob("*.py")) + sorted((HERE / "legit").glob("*.py"))


def constants(path: Path) -> dict:
    out = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                out[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                pass
    return out


def _param(path: Path):
    c = constants(path)
    marks = [pytest.mark.gpu] if c.get("NEEDS_GPU") else []
    return pytest.param(path, id=f"{path.parent.name}/{path.stem}", marks=marks)


@pytest.fixture(scope="module")
def pool():
    device = "cpu"
    with JudgePool(JudgeOptions(device=device), workers=2) as p:
        yield p


@pytest.fixture(scope="module")
def mixed_pool():
    with JudgePool(JudgeOptions(device="cpu", library_ops="allow_gemm"), workers=1) as p:
        yield p


@pytest.fixture(scope="module")
def timed_pool():
    """The timing protocol on host clocks, for TIMED_ON_CPU files (cheats in timed calls): few calls, no compile."""
    opts = JudgeOptions(device="cpu", timing_on_cpu=True, compile_baseline=False, warmup=2, min_calls=12,
                        max_calls=12, budget_s=0.01)  # fmt: skip
    with JudgePool(opts, workers=2) as p:
        yield p


def _requests(paths: list[Path]) -> list:
    return [(Task.from_file(HERE / "tasks" / f"{constants(p)['TASK']}.py"), p.read_text(), constants(p)["BACKEND"])
            for p in paths]  # fmt: skip


@pytest.fixture(scope="module")
def cpu_verdicts(pool, request):
    """All CPU-runnable files judged at once (two workers in parallel), keyed by path."""
    paths = [p for p in FILES if not constants(p).get("NEEDS_GPU") and not constants(p).get("MIXED")]
    plain = [p for p in paths if not constants(p).get("TIMED_ON_CPU")]
    timed = [p for p in paths if constants(p).get("TIMED_ON_CPU")]
    out = dict(zip(plain, pool.judge_many(_requests(plain))))
    if timed:
        out.update(zip(timed, request.getfixturevalue("timed_pool").judge_many(_requests(timed))))
    return out


@pytest.mark.parametrize("path", [_param(p) for p in FILES])
def test_corpus_verdict(path: Path, request):
    c = constants(path)
    if c.get("NEEDS_GPU"):
        verdict = request.getfixturevalue("gpu_verdicts")[path]
    elif c.get("MIXED"):
        mixed = request.getfixturevalue("mixed_pool")
        verdict = mixed.judge(Task.from_file(HERE / "tasks" / f"{c['TASK']}.py"), path.read_text(), c["BACKEND"])
    else:
        verdict = request.getfixturevalue("cpu_verdicts")[path]
    assert (verdict.status, verdict.guard) == (c["EXPECT_STATUS"], c["EXPECT_GUARD"]), verdict.feedback


def _judge_all_on_gpu(paths: list[Path]) -> dict:
    """Every file judged on the GPU at once: CUDA builds overlap (8 workers), timing is serialised by the judge."""
    out = {}
    for mixed in (False, True):
        group = [p for p in paths if bool(constants(p).get("MIXED")) == mixed]
        policy = "allow_gemm" if mixed else "reject"
        # Short stage caps: a stuck case becomes a `timeout` verdict (a failing test that names it), not a lost run
        opts = JudgeOptions(device="cuda", budget_s=0.3, compile_baseline=False, library_ops=policy,
                            build_timeout_s=300, run_timeout_s=60)  # fmt: skip
        with JudgePool(opts, workers=8) as pool:
            futures = {pool.submit(Task.from_file(HERE / "tasks" / f"{constants(p)['TASK']}.py"), p.read_text(),
                                   constants(p)["BACKEND"]): p for p in group}  # fmt: skip
            for fut in as_completed(futures):  # one line per verdict as it lands: a stuck case shows by its absence
                out[futures[fut]] = v = fut.result()
                _progress(f"{futures[fut].parent.name}/{futures[fut].stem}: {v.status} {v.guard} {v.stage_s}")
    return out


def _progress(line: str) -> None:
    """Append to $KZ_CORPUS_LOG (bench/gpu_check.sh sets it): pytest captures output until a test ends."""
    log = os.environ.get("KZ_CORPUS_LOG")
    if log:
        with open(log, "a") as f:
            f.write(f"{time.strftime('%H:%M:%S')} {line}\n")


@pytest.fixture(scope="module")
def gpu_verdicts():
    import torch

    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    return _judge_all_on_gpu(FILES)


@pytest.mark.gpu
@pytest.mark.parametrize("path", [pytest.param(p, id=f"{p.parent.name}/{p.stem}") for p in FILES
                                  if not constants(p).get("NEEDS_GPU")])  # fmt: skip
def test_cpu_corpus_also_holds_on_gpu(path: Path, gpu_verdicts):
    """The Triton cases that CI judges under the interpreter, judged again as real GPU kernels (`GPU_EXPECT` where an
    exploit timed on host clocks gains nothing at the case's size on a GPU)."""
    c = constants(path)
    verdict = gpu_verdicts[path]
    expected = tuple(c.get("GPU_EXPECT", (c["EXPECT_STATUS"], c["EXPECT_GUARD"])))
    assert (verdict.status, verdict.guard) == expected, verdict.feedback


def test_mixed_solution_is_rejected_under_the_strict_policy(pool):
    """The same mixed GEMM + epilogue solution fails under the default `library_ops="reject"`: the policy matters."""
    path = HERE / "legit" / "triton_gemm_bias_relu_mixed.py"
    c = constants(path)
    v = pool.judge(Task.from_file(HERE / "tasks" / f"{c['TASK']}.py"), path.read_text(), c["BACKEND"])
    assert (v.status, v.guard) == ("rejected", "no_custom_kernel")


def test_calls_on_new_inputs_measure_the_honest_product_and_expose_the_kept_outputs(cpu_verdicts):
    """Timed on host clocks: the honest product's fastest call on never-seen inputs is about its timed median; the
    module that copies kept outputs takes many times longer on them than on the inputs the loop repeated."""
    honest = cpu_verdicts[HERE / "legit" / "triton_matmul.py"]
    assert honest.status == "ok" and honest.fresh_ratio is not None and 0.3 < honest.fresh_ratio < 3.0
    kept = cpu_verdicts[HERE / "cases" / "triton_kept_outputs_own_copy.py"]
    assert kept.guard == "fresh_inputs" and "never seen" in kept.feedback
