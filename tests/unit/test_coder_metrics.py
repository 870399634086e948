"""Per-step Coder metrics (pure): pass rate, gate-open share, speedup of correct rollouts, status counts."""

import math

import pytest
import torch

from kernelzero.judge.verdict import STATUSES
from kernelzero.rewards.cagrpo import GateConfig, gate_open_per_group, gate_reward_matrix
from kernelzero.trainers.coder import coder_step_metrics, step_log_line

NAN = float("nan")


def test_metrics_on_two_groups():
    raw = torch.tensor([[1, 2.0], [0, 0.0], [1, NAN], [NAN, NAN], [0, 0.0], [0, 0.0], [1, 6.0], [0, 0.0]])  # (8, 2)
    statuses = ["ok", "incorrect", "ok", "infra_error", "compile_error", "timeout", "ok", "rejected"]
    gate = GateConfig(alpha=0.5, beta=0.1)
    gated = gate_reward_matrix(raw, 4, gate)
    m = coder_step_metrics(raw, gated, gate_open_per_group(raw, 4, gate.alpha), statuses, gate.beta)
    assert m["coder/pass_rate"] == pytest.approx(3 / 7)
    assert m["coder/gate_open_share"] == 0.5  # group 0: 2/3 open; group 1: 1/4 closed
    assert m["coder/reward_mean"] == pytest.approx((1.2 + 1.0 + 1.0) / 8)  # group 0's bonus only; NaN row adds 0
    assert m["coder/speedup_correct_mean"] == pytest.approx(4.0)  # the untimed correct rollout is left out
    assert [m[f"judge/status/{s}"] for s in STATUSES] == [3, 0, 1, 0, 1, 1, 0, 1, 1]
    assert "coder/dynamic_sampling_filtered_share" not in m
    line = step_log_line(7, m)
    assert line.startswith("coder step 7 | pass 0.429 | gate open 0.500 | speedup(correct) 4.000 |")
    assert "ok=3" in line and "format_error" not in line


def test_metrics_are_nan_where_undefined():
    raw = torch.tensor([[NAN, NAN], [NAN, NAN]])
    gate_open = gate_open_per_group(raw, 2, 0.5)
    m = coder_step_metrics(raw, raw, gate_open, ["infra_error"] * 2, 0.1, filtered=torch.tensor([True]))
    assert math.isnan(m["coder/pass_rate"]) and math.isnan(m["coder/gate_open_share"])
    assert math.isnan(m["coder/speedup_correct_mean"])
    assert m["judge/status/infra_error"] == 2 and m["coder/dynamic_sampling_filtered_share"] == 1.0


def test_gate_share_is_the_gates_decision_where_float32_would_disagree():
    """7 of 10 correct at alpha 0.7: 0.7 in float32 is below 0.7, the gate (float64) opens; the share says open."""
    raw = torch.tensor([[1.0, 2.0]] * 7 + [[0.0, 0.0]] * 3)  # (10, 2) float32, as TRL gathers it
    assert not float(raw[:, 0].mean()) >= 0.7  # the float32 mean a copy of the gate would compare
    gate_open = gate_open_per_group(raw, 10, 0.7)
    m = coder_step_metrics(raw, gate_reward_matrix(raw, 10, GateConfig(alpha=0.7)), gate_open, ["ok"] * 10, 0.1)
    assert bool(gate_open[0]) and m["coder/gate_open_share"] == 1.0


def _group_advantages(gated: torch.Tensor, beta: float, group_size: int) -> torch.Tensor:
    """TRL's advantages with scale_rewards="group": weighted sum [1, beta], then (r - group mean) / group std."""
    r = (gated.nan_to_num(0.0) @ torch.tensor([1.0, beta])).view(-1, group_size)  # (B, G)
    return ((r - r.mean(dim=1, keepdim=True)) / (r.std(dim=1, keepdim=True) + 1e-4)).flatten()


def test_speed_ranked_share_counts_the_groups_where_speed_moves_an_advantage():
    raw = torch.tensor(
        [[1, 2.0], [1, 3.0], [0, 0.0], [0, 0.0]]  # open, two speeds: ranked
        + [[1, 2.0], [1, 2.0], [1, 2.0], [0, 0.0]]  # open, one speed (identical completions): not ranked
        + [[1, 2.0], [0, 0.0], [0, 0.0], [0, 0.0]]  # closed (1 of 4): not ranked
        + [[1, 2.0], [1, NAN], [0, 0.0], [NAN, NAN]]  # open, one correct rollout untimed (term 0): ranked
        + [[NAN, NAN]] * 4  # unscored: left out of the share
    )  # (20, 2)
    gate = GateConfig(alpha=0.5, beta=0.1)
    gated = gate_reward_matrix(raw, 4, gate)
    m = coder_step_metrics(raw, gated, gate_open_per_group(raw, 4, gate.alpha), ["ok"] * 20, gate.beta)
    assert m["coder/speed_ranked_share"] == pytest.approx(2 / 4)
    # What the share claims: outside the ranked groups the speed term leaves every advantage as beta 0 gives it.
    moved = (_group_advantages(gated, 0.1, 4) - _group_advantages(gated, 0.0, 4)).abs().view(5, 4).amax(dim=1)
    assert [bool(x > 1e-3) for x in moved] == [True, False, False, True, False]
    # beta 0 (a correctness-only reward): the term carries no weight, so no group is ranked
    m0 = coder_step_metrics(raw, gated, gate_open_per_group(raw, 4, gate.alpha), ["ok"] * 20, 0.0)
    assert m0["coder/speed_ranked_share"] == 0.0


def test_speed_ranked_share_is_nan_without_a_scored_group():
    raw = torch.tensor([[NAN, NAN]] * 4)
    m = coder_step_metrics(raw, raw, gate_open_per_group(raw, 4, 0.5), ["infra_error"] * 4, 0.1)
    assert math.isnan(m["coder/speed_ranked_share"])
