"""Metrics against hand-computed values: pass@k (closed form), fast_p and geometric mean (KernelBench's), tables."""

import math

import pytest

from kernelzero.eval.metrics import LevelRow, fast_p, geomean_speedup, level_table, mean_pass_at_k, pass_at_k


@pytest.mark.parametrize(
    "n, c, k, expected",
    [
        (5, 2, 1, 2 / 5),  # pass@1 is the success rate
        (5, 2, 2, 1 - 3 / 10),  # 1 - C(3,2)/C(5,2) = 1 - 3/10
        (10, 3, 5, 1 - 21 / 252),  # 1 - C(7,5)/C(10,5) = 1 - 21/252
        (4, 0, 2, 0.0),
        (4, 3, 2, 1.0),  # n - c < k: every pair of samples holds a correct one
        (4, 4, 4, 1.0),
    ],
)
def test_pass_at_k_hand_values(n, c, k, expected):
    assert pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-12)


def test_pass_at_k_matches_comb_and_stays_finite_for_large_n():
    for n, c, k in [(20, 7, 3), (100, 1, 10), (200, 50, 100)]:
        assert pass_at_k(n, c, k) == pytest.approx(1 - math.comb(n - c, k) / math.comb(n, k), rel=1e-12)
    # C(5000, 2500) overflows a float; the product form does not.
    assert pass_at_k(5000, 1, 2500) == pytest.approx(0.5, abs=1e-12)


def test_pass_at_k_arguments_checked():
    with pytest.raises(ValueError, match=r"k <= n \(got k=6, n=5\)"):
        pass_at_k(5, 2, 6)
    with pytest.raises(ValueError, match="0 <= c <= n"):
        pass_at_k(5, 6, 1)
    with pytest.raises(ValueError, match="1 <= k"):
        pass_at_k(5, 1, 0)
    assert mean_pass_at_k([(5, 2), (5, 5)], 1) == pytest.approx((0.4 + 1.0) / 2)
    with pytest.raises(ValueError, match="no tasks"):
        mean_pass_at_k([], 1)


# KernelBench's scoring example: baseline / actual times give speedups 0.5, 1.0, 2/3, 5.0, 1.5.
CORRECT = [True, False, True, True, False]
SPEEDUPS = [0.1 / 0.2, 0.15 / 0.15, 0.2 / 0.3, 0.05 / 0.01, 0.3 / 0.2]


def test_fast_p_counts_correct_and_strictly_faster_over_all_tasks():
    assert fast_p(CORRECT, SPEEDUPS, 1.0) == pytest.approx(1 / 5)  # only the 5x one; the incorrect 1.5x is out
    assert fast_p(CORRECT, SPEEDUPS, 0.0) == pytest.approx(3 / 5)  # fast_0 is the correctness rate
    assert fast_p(CORRECT, SPEEDUPS, 0.5) == pytest.approx(2 / 5)  # strictly above: 0.5 itself is not
    assert fast_p(CORRECT, SPEEDUPS, 5.0) == 0.0
    assert fast_p(CORRECT, SPEEDUPS, 1.0, n=10) == pytest.approx(1 / 10)  # tasks with no record count as misses
    assert fast_p([], [], 1.0) == 0.0


def test_geomean_over_correct_only():
    assert geomean_speedup(CORRECT, SPEEDUPS) == pytest.approx((0.5 * (2 / 3) * 5.0) ** (1 / 3))
    assert geomean_speedup(CORRECT, SPEEDUPS) == pytest.approx(1.185631101, abs=1e-7)  # KernelBench's figure
    assert geomean_speedup([False, False], [None, None]) == 0.0


def test_bad_inputs():
    with pytest.raises(ValueError, match="differ in length"):
        fast_p([True], [1.0, 2.0], 1.0)
    with pytest.raises(ValueError, match="record 1: a correct solution needs a finite speedup > 0, got None"):
        geomean_speedup([True, True], [1.0, None])
    with pytest.raises(ValueError, match="n=1 is smaller than the 2 records"):
        fast_p([True, True], [1.0, 2.0], 1.0, n=1)


def test_level_table():
    records = [
        {"level": 1, "correct": True, "speedup": 2.0},
        {"level": 1, "correct": True, "speedup": 0.5},
        {"level": 1, "correct": False, "speedup": None},
        {"level": 2, "correct": True, "speedup": 4.0},
        {"level": None, "correct": False, "speedup": 9.0},
    ]
    rows = level_table(records, ps=(1.0,))
    expected = [
        LevelRow("level 1", 1, tasks=3, correct=2, accuracy=2 / 3, geomean_speedup=1.0, fast={1.0: 1 / 3}),
        LevelRow("level 2", 2, tasks=1, correct=1, accuracy=1.0, geomean_speedup=4.0, fast={1.0: 1.0}),
        LevelRow("no level", None, tasks=1, correct=0, accuracy=0.0, geomean_speedup=0.0, fast={1.0: 0.0}),
        # geometric mean of 2, 0.5 and 4 is 4 ** (1/3); the incorrect 9x does not count anywhere
        LevelRow("all", None, tasks=5, correct=3, accuracy=3 / 5, geomean_speedup=4 ** (1 / 3), fast={1.0: 2 / 5}),
    ]
    assert [(r.label, r.level, r.tasks, r.correct) for r in rows] == [
        (r.label, r.level, r.tasks, r.correct) for r in expected
    ]
    for got, want in zip(rows, expected):
        assert (got.accuracy, got.geomean_speedup) == pytest.approx((want.accuracy, want.geomean_speedup))
        assert got.fast == pytest.approx(want.fast)
    with pytest.raises(ValueError, match="has no 'speedup'"):
        level_table([{"level": 1, "correct": True}])
