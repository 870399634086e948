"""CA-GRPO on hand-made groups: the scalar reference, the gathered-matrix form, and the dynamic-sampling filter."""

import math

import pytest
import torch

from kernelzero.rewards.cagrpo import (
    GateConfig,
    SpeedupShaping,
    gate_open_per_group,
    gate_reward_matrix,
    gated_group_rewards,
    mask_groups,
    shape_speedup,
    uninformative_groups,
)
from kernelzero.rewards.proposer import mean_correct

NAN = float("nan")
PAPER = GateConfig()  # alpha 0.5, beta 0.1, f = identity


def test_gate_open_at_exactly_alpha_adds_speed_to_correct_rollouts_only():
    # acc = 2/4 = 0.5 >= alpha: open. r = c * (1 + 0.1 * S)
    r = gated_group_rewards([True, True, False, False], [2.0, 3.0, 0.0, 0.0], PAPER)
    assert r == pytest.approx([1.2, 1.3, 0.0, 0.0])


def test_gate_closed_below_alpha_pays_correctness_only():
    # acc = 1/4 < 0.5: closed, the fast correct kernel gets 1, not 1 + 0.1 * 8
    assert gated_group_rewards([True, False, False, False], [8.0, 0.0, 0.0, 0.0], PAPER) == [1.0, 0.0, 0.0, 0.0]


def test_unscored_rollouts_are_left_out_of_accuracy_and_of_the_rewards():
    # 1 of 2 scored is correct -> acc 0.5 -> open; counting the two infra failures as 0 would close it (1/4)
    r = gated_group_rewards([True, None, False, None], [4.0, None, 0.0, None], PAPER)
    assert r == pytest.approx([1.4, None, 0.0, None]) and r[1] is None and r[3] is None
    assert mean_correct([True, None, False, None]) == 0.5  # acc(G): the one mean over scored rollouts
    assert mean_correct([None, None]) is None
    assert gated_group_rewards([None, None], [None, None], PAPER) == [None, None]


def test_correct_but_untimed_rollout_gets_no_speed_bonus():
    assert gated_group_rewards([True, True], [None, 3.0], PAPER) == pytest.approx([1.0, 1.3])


def test_alpha_compares_exactly_at_seven_tenths():
    cfg = GateConfig(alpha=0.7, beta=1.0)
    correct = [True] * 7 + [False] * 3
    speed = [2.0] * 7 + [0.0] * 3
    assert gated_group_rewards(correct, speed, cfg)[0] == 3.0
    raw = torch.tensor([[float(c), s] for c, s in zip(correct, speed)])  # (10, 2)
    assert gate_reward_matrix(raw, 10, cfg)[0, 1].item() == 2.0


@pytest.mark.parametrize(
    ("kind", "s", "expected"),
    [
        ("identity", 50.0, 50.0),
        ("clip", 50.0, 10.0),
        ("clip", 0.5, 0.5),
        ("log", 1.0, 0.0),
        ("log", 50.0, math.log(10.0)),
        ("log", 0.5, math.log(0.5)),
        ("log", 1e-6, math.log(0.1)),
    ],
)
def test_speedup_shaping(kind, s, expected):
    assert shape_speedup(s, SpeedupShaping(kind, cap=10.0)) == pytest.approx(expected)


def test_config_validation_names_the_field():
    with pytest.raises(ValueError, match="SpeedupShaping.kind"):
        SpeedupShaping("sqrt")
    with pytest.raises(ValueError, match="GateConfig.alpha"):
        GateConfig(alpha=1.5)


# Three groups of four, rows contiguous: (N=12, 2) [correct, speedup]
RAW = torch.tensor(
    [
        # group 0: 3/4 correct -> open
        [1, 2.0], [1, 3.0], [1, 0.5], [0, 0.0],
        # group 1: 1 correct of 3 scored (one infra failure) -> 1/3 < 0.5 -> closed
        [1, 4.0], [0, 0.0], [NAN, NAN], [0, 0.0],
        # group 2: 1 of 2 scored -> 0.5 -> open (would be closed if NaN counted as wrong); one correct row untimed
        [NAN, NAN], [1, NAN], [NAN, NAN], [0, 0.0],
    ]
)  # fmt: skip


def test_matrix_gate_exact_values():
    gated = gate_reward_matrix(RAW, 4, PAPER)
    expected = torch.tensor(
        [
            [1, 2.0], [1, 3.0], [1, 0.5], [0, 0.0],
            [1, 0.0], [0, 0.0], [NAN, NAN], [0, 0.0],
            [NAN, NAN], [1, 0.0], [NAN, NAN], [0, 0.0],
        ]
    )  # fmt: skip
    torch.testing.assert_close(gated, expected, equal_nan=True)
    assert gate_open_per_group(RAW, 4, 0.5).tolist() == [True, False, True]


def test_matrix_gate_agrees_with_scalar_reference_under_trl_weights():
    cfg = GateConfig(alpha=0.5, beta=0.1, shaping=SpeedupShaping("log", cap=10.0))
    gated = gate_reward_matrix(RAW, 4, cfg)
    weighted = gated[:, 0] + cfg.beta * gated[:, 1]  # TRL: nansum(matrix * [1, beta]) per row
    for g in range(3):
        rows = RAW[4 * g : 4 * g + 4]
        correct = [None if math.isnan(c) else bool(c) for c in rows[:, 0].tolist()]
        speed = [None if math.isnan(s) else s for s in rows[:, 1].tolist()]
        ref = gated_group_rewards(correct, speed, cfg)
        got = [None if math.isnan(x) else x for x in weighted[4 * g : 4 * g + 4].tolist()]
        assert got == pytest.approx(ref)


def test_matrix_gate_rejects_bad_shapes_and_values():
    with pytest.raises(ValueError, match="groups of 4"):
        gate_reward_matrix(torch.zeros(6, 2), 4, PAPER)
    with pytest.raises(ValueError, match=r"\(N, 2\)"):
        gate_reward_matrix(torch.zeros(4, 3), 4, PAPER)
    with pytest.raises(ValueError, match="0, 1 or NaN"):
        gate_reward_matrix(torch.tensor([[0.5, 1.0], [1.0, 1.0]]), 2, PAPER)


def test_dynamic_sampling_filter_is_on_correctness_not_on_shaped_reward():
    raw = torch.tensor(
        [
            [1, 2.0], [1, 3.0], [1, 1.0],  # all correct, speeds differ: uninformative on correctness
            [0, 0.0], [0, 0.0], [NAN, NAN],  # all wrong
            [1, 2.0], [0, 0.0], [NAN, NAN],  # mixed: kept
            [1, 2.0], [NAN, NAN], [NAN, NAN],  # a single scored rollout: no contrast
        ]
    )  # fmt: skip
    mask = uninformative_groups(raw, 3)
    assert mask.tolist() == [True, True, False, True]
    masked = mask_groups(gate_reward_matrix(raw, 3, PAPER), mask, 3)
    assert torch.isnan(masked[:6]).all() and torch.isnan(masked[9:]).all()
    torch.testing.assert_close(masked[6:9], torch.tensor([[1, 2.0], [0, 0.0], [NAN, NAN]]), equal_nan=True)
