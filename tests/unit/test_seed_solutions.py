"""The shipped seed solutions (the SFT cold start's pairs): each Triton one is `ok` under the CPU judge, each CUDA one
passes the judge's static checks (its run needs a GPU: tests/gpu/test_seed_solutions_gpu.py)."""

import shutil
from importlib import resources
from pathlib import Path

import pytest

from kernelzero.judge import JudgeOptions
from kernelzero.judge.core import Judge
from kernelzero.trainers import sft as sft_module
from kernelzero.trainers.sft import builtin_pairs

DATA = Path(str(resources.files("kernelzero") / "data"))
STEMS = sorted(p.stem for p in (DATA / "seed_tasks").glob("*.py"))
PAIRS = builtin_pairs()


@pytest.fixture(scope="module")
def cpu_judge():
    return Judge(JudgeOptions(device="cpu"))


def test_builtin_pairs_cover_every_seed_task_and_backend():
    assert len(STEMS) == 4 and len(PAIRS) == 8
    assert sorted((p.task.name, p.backend) for p in PAIRS) == sorted(
        (f"seed-{s}", b) for s in STEMS for b in ("triton", "cuda")
    )
    for p in PAIRS:
        assert "class Model(" in p.task.source and "class ModelNew(" in p.solution
        assert ("load_inline(" in p.solution) == (p.backend == "cuda")
    assert [p.backend for p in builtin_pairs(backends=("cuda",))] == ["cuda"] * 4
    for backend in ("triton", "cuda"):  # no stray solution without a task
        assert sorted(p.stem for p in (DATA / "seed_solutions" / backend).glob("*.py")) == STEMS
    with pytest.raises(ValueError, match="backend"):
        builtin_pairs(backends=("metal",))


def test_a_missing_solution_file_is_a_clear_error(tmp_path, monkeypatch):
    shutil.copytree(DATA / "seed_tasks", tmp_path / "seed_tasks")
    shutil.copytree(DATA / "seed_solutions", tmp_path / "seed_solutions")
    (tmp_path / "seed_solutions" / "cuda" / "gelu.py").unlink()
    monkeypatch.setattr(sft_module, "_data_root", lambda: tmp_path)
    assert len(builtin_pairs(backends=("triton",))) == 4
    with pytest.raises(FileNotFoundError, match=r"'gelu.py' has no cuda solution.*seed_solutions/cuda/gelu.py"):
        builtin_pairs()


@pytest.mark.parametrize("pair", [p for p in PAIRS if p.backend == "triton"], ids=lambda p: p.task.name)
def test_triton_seed_solution_is_ok_under_the_cpu_judge(cpu_judge, pair):
    pytest.importorskip("triton")
    v = cpu_judge.judge(pair.task, pair.solution, "triton")
    assert v.status == "ok", v.feedback


@pytest.mark.parametrize("pair", [p for p in PAIRS if p.backend == "cuda"], ids=lambda p: p.task.name)
def test_cuda_seed_solution_passes_the_static_checks(cpu_judge, pair):
    v = cpu_judge.judge(pair.task, pair.solution, "cuda")
    # on CPU the judge stops at "needs a GPU" only after every static rule has passed
    assert v.status == "infra_error" and "need a GPU" in v.feedback, (v.status, v.guard, v.feedback)
