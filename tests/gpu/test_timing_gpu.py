"""The launch cover on a real GPU (`timing.time_model`): the sleep kernel is calibrated against the GPU's clock, sized
from the host's enqueue time and reported; turned off, it is absent. (Whether it steadies launch-bound figures is
measured in bench/timing_stability.py, not asserted here.)"""

import pytest

from kernelzero.judge.sandbox.harness import Bound
from kernelzero.judge.timing import TimingConfig, launch_cover_cycles, time_model

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def torch():
    import torch

    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    return torch


def test_the_sleep_is_calibrated_to_the_gpus_clock(torch):
    bound = Bound(torch)
    cycles, us = launch_cover_cycles(bound, [50e-6], TimingConfig())
    assert us == 150.0
    assert 150 * 500 < cycles < 150 * 5000  # a GPU clock between 0.5 and 5 GHz


@pytest.mark.parametrize("cover", [True, False])
def test_a_timed_module_reports_its_cover(torch, cover):
    bound = Bound(torch)
    x = torch.randn(1 << 16, device="cuda")
    cfg = {"warmup": 3, "min_calls": 20, "max_calls": 20, "budget_s": 0.01, "launch_cover": cover}
    stats = time_model(torch, bound, torch.nn.ReLU(), [[x]], cfg)
    assert stats["events"]["n"] == 20 and stats["events"]["median_ms"] > 0
    if cover:
        assert TimingConfig.cover_min_us <= stats["cover_us"] <= TimingConfig.cover_max_us
    else:
        assert stats["cover_us"] is None
