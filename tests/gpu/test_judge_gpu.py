"""The judge on a real GPU: CUDA and Triton builds, correctness, timing, faults and OOM (run with -m gpu)."""

from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

FIX = Path(__file__).parents[1] / "fixtures" / "gpu"


@pytest.fixture(scope="module")
def pool():
    import torch

    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    from kernelzero.judge import JudgeOptions
    from kernelzero.judge.pool import JudgePool

    with JudgePool(JudgeOptions(device="cuda", budget_s=0.5), workers=4) as p:
        yield p


@pytest.fixture(scope="module")
def task():
    from kernelzero.tasks import Task

    return Task.from_file(FIX / "relu_big_task.py")


def judge(pool, task, name, backend):
    return pool.judge(task, (FIX / name).read_text(), backend)


@pytest.mark.parametrize("name,backend", [("relu_triton_ok.py", "triton"), ("relu_cuda_ok.py", "cuda")])
def test_correct_kernel_is_ok_and_timed(pool, task, name, backend):
    v = judge(pool, task, name, backend)
    assert v.status == "ok", v.feedback
    assert v.timed and v.runtime.n >= 20 and v.ref_runtime.n >= 20
    assert v.speedup_eager == pytest.approx(v.ref_runtime.median_ms / v.runtime.median_ms)
    assert v.speedup_compile is not None and v.speedup_compile > 0
    assert v.env["gpu"] and v.env["precision"] == "fp32-strict"
    print(f"{name}: {v.runtime.median_ms:.4f} ms, x{v.speedup_eager:.2f} eager, x{v.speedup_compile:.2f} compile")
    # the task's reference stays on the judge's GPU (reference_device_gb), where outputs are compared
    refs = [r for j in pool.judges for r in j._refs.values()]
    assert refs and all(r.on_device and r.outputs[0][0].is_cuda for r in refs)


@pytest.mark.parametrize("name,backend", [("relu_triton_incorrect.py", "triton"), ("relu_cuda_incorrect.py", "cuda")])
def test_wrong_kernel_is_incorrect(pool, task, name, backend):
    v = judge(pool, task, name, backend)
    assert v.status == "incorrect" and v.guard == "value", v.feedback
    assert not v.timed


def test_illegal_memory_access_then_a_correct_candidate(pool, task):
    bad = judge(pool, task, "relu_cuda_illegal_access.py", "cuda")
    assert bad.status in ("runtime_error", "crashed"), bad.feedback
    assert "illegal" in bad.feedback.lower() or bad.status == "crashed"
    good = judge(pool, task, "relu_cuda_ok.py", "cuda")
    assert good.status == "ok", good.feedback


def test_out_of_memory_is_a_runtime_error(pool, task):
    v = judge(pool, task, "relu_oom.py", "triton")
    assert v.status == "runtime_error", v.feedback
    assert "OutOfMemory" in v.feedback or "out of memory" in v.feedback


def test_gpu_workers_are_forked_from_a_template(pool, task):
    """CUDA cannot survive a fork, so the template never touches it: on a GPU machine it must still serve (not fall
    back to the exec chain), and the CUDA workers it forks initialise CUDA after the fork and judge correctly."""
    from kernelzero.judge.sandbox import template

    v = judge(pool, task, "relu_triton_ok.py", "triton")
    assert v.status == "ok", v.feedback
    counts = template.summary()
    assert counts["serving"] >= 1 and counts["fallback"] == 0, counts


def test_a_split_cuda_launch_without_a_stream_is_timed_from_graphs(pool):
    """A CUDA candidate written `k<<<g, b>>>` (no stream, as models write them) on a small task: the split build gives
    the launch torch's current stream, so the judge's graph capture records it and both sides are timed from
    replayed graphs (before, the launch went to the legacy stream outside the capture: an empty graph, eager
    figures)."""
    import sys

    from kernelzero.tasks import Task

    sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))
    from throughput_cases.mix import mix

    case = next(c for c in mix("cuda", small=True) if c.kind == "ok" and c.name.endswith("_absdiff_ok"))
    assert "<<<" in case.source and ">>>(x" in case.source.replace(" ", "")
    v = pool.judge(Task(name=case.name, source=case.task), case.source, "cuda")
    assert v.status == "ok", v.feedback
    modes = pool.farm.build_modes
    assert sum(n for mode, n in modes.items() if mode.startswith("split")) >= 1, modes
    assert v.timed_by == "graphs", v.timed_by
