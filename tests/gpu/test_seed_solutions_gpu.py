"""The shipped CUDA seed solutions build and are correct on a real GPU (run with -m gpu)."""

import pytest

from kernelzero.trainers import builtin_pairs

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def pool():
    import torch

    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    from kernelzero.judge import JudgeOptions
    from kernelzero.judge.pool import JudgePool

    with JudgePool(JudgeOptions(device="cuda", budget_s=0.5), workers=4) as p:
        yield p


@pytest.mark.parametrize("pair", builtin_pairs(backends=("cuda",)), ids=lambda p: p.task.name)
def test_cuda_seed_solution_is_ok_on_the_gpu(pool, pair):
    v = pool.judge(pair.task, pair.solution, "cuda")
    assert v.status == "ok", v.feedback
