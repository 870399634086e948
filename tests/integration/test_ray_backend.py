"""The Ray backend on CPU: a local Ray instance, judge actors, Triton candidates under the interpreter."""

from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="the Ray backend needs `pip install 'kernelzero[ray]'` (ray is optional)")

from kernelzero.judge import JudgeOptions  # noqa: E402
from kernelzero.judge.ray_backend import RayJudgePool  # noqa: E402
from kernelzero.tasks import Task  # noqa: E402

FIX = Path(__file__).parents[1] / "fixtures" / "judge"
SRC = Path(__file__).parents[2] / "src"
TASK = Task.from_file(FIX / "relu_task.py")


@pytest.fixture(scope="module")
def pool():
    # Actors import kernelzero from this checkout (a cluster would ship it: RayJudgePool's own ray.init does).
    ray.init(
        num_cpus=2, include_dashboard=False, log_to_driver=False, runtime_env={"env_vars": {"PYTHONPATH": str(SRC)}}
    )
    p = RayJudgePool(JudgeOptions(device="cpu", run_timeout_s=30), judge_actors=2)
    yield p
    p.close()
    ray.shutdown()


def test_ray_pool_judges_and_dedupes(pool):
    ok, bad = (FIX / "relu_triton_ok.py").read_text(), (FIX / "relu_triton_incorrect.py").read_text()
    verdicts = pool.judge_many([(TASK, ok, "triton"), (TASK, bad, "triton"), (TASK, ok, "triton")])
    assert [v.status for v in verdicts] == ["ok", "incorrect", "ok"], verdicts[1].feedback
    assert verdicts[0] is not verdicts[2]
    assert pool.stats["judged"] == 2 and pool.stats["deduped"] + pool.stats["cached"] == 1


def test_ray_pool_async(pool):
    import asyncio

    ok = (FIX / "relu_triton_ok.py").read_text()
    v = asyncio.run(pool.ajudge(TASK, ok + "\n# variant\n", "triton", timeout_s=120))
    assert v.status == "ok"
