"""The eval report's figures are the metrics module's functions on the same verdicts (records built by hand)."""

from __future__ import annotations

import json
import math

import pytest

from kernelzero.eval import metrics
from kernelzero.eval.evaluate import MISSING_GUARD, EvalRecord
from kernelzero.eval.report import compare, render_markdown, summarize, task_outcomes, write_report
from kernelzero.judge.verdict import Timing, Verdict


def ok(speedup: float | None, compile_speedup: float | None = None, iqr: float = 0.0) -> Verdict:
    """A correct verdict; with a speedup, candidate and references are timed with relative IQR `iqr` each."""
    if speedup is None:
        return Verdict(status="ok", correct=True)
    t = Timing(median_ms=1.0, iqr_ms=iqr, min_ms=1.0, n=50)
    ref = Timing(median_ms=speedup, iqr_ms=iqr * speedup, min_ms=speedup, n=50)
    return Verdict(status="ok", correct=True, timed=True, runtime=t, ref_runtime=ref, speedup_eager=speedup,
                   compile_runtime=ref if compile_speedup else None, speedup_compile=compile_speedup)  # fmt: skip


def bad(status: str = "incorrect", guard: str | None = None, **kw) -> Verdict:
    return Verdict.fail(status, "nope", guard=guard, **kw)


def rec(task: str, level: int | None, sample: int, turn: int, verdict: Verdict) -> EvalRecord:
    return EvalRecord(task, level, sample, turn, "code", verdict)


# Three level-1 tasks and one level-2 task, 3 samples x 2 turns each.
#   a: sample 0 ok at turn 1 (2.5x), sample 1 ok only at turn 2 (1.05x, noisy), sample 2 never.
#   b: never correct (incorrect, compile error, a rejected cheat).
#   c: every sample ok at turn 1 at 1.2x with 15 % IQR each (noise-aware: 1.2 / 1.3 < 1 -> not fast_1).
#   d (level 2): sample 2 ok at turn 2 at 0.5x.
RECORDS = [
    rec("a", 1, 0, 1, ok(2.5, 3.0)), rec("a", 1, 1, 1, bad()), rec("a", 1, 2, 1, bad("compile_error")),
    rec("a", 1, 0, 2, ok(2.0, 2.0)), rec("a", 1, 1, 2, ok(1.05, 1.0, iqr=0.05)), rec("a", 1, 2, 2, bad()),
    rec("b", 1, 0, 1, bad()), rec("b", 1, 1, 1, bad("compile_error")), rec("b", 1, 2, 1, bad("rejected", "no_kernel")),
    rec("b", 1, 0, 2, bad()), rec("b", 1, 1, 2, bad("timeout")), rec("b", 1, 2, 2, bad("rejected", "no_kernel")),
    *(rec("c", 1, s, t, ok(1.2, 0.9, iqr=0.15)) for t in (1, 2) for s in range(3)),
    rec("d", 2, 0, 1, bad()), rec("d", 2, 1, 1, bad()), rec("d", 2, 2, 1, bad()),
    rec("d", 2, 0, 2, bad()), rec("d", 2, 1, 2, bad()), rec("d", 2, 2, 2, ok(0.5, 0.4)),
]  # fmt: skip


def row(summary: dict, label: str) -> dict:
    return next(r for r in summary["rows"] if r["label"] == label)


def test_pass_at_k_is_the_metrics_estimator_over_chains():
    s = summarize(RECORDS, ks=[1, 2, 3])
    per_task = {"a": (3, 2), "b": (3, 0), "c": (3, 3)}  # (n, chains correct by the last turn)
    for k in (1, 2, 3):
        assert row(s, "level 1")["pass"][str(k)] == metrics.mean_pass_at_k(per_task.values(), k)
        expected_all = metrics.mean_pass_at_k([*per_task.values(), (3, 1)], k)
        assert row(s, "all")["pass"][str(k)] == pytest.approx(expected_all)
    # by turn: at turn 1 task a has one correct chain, task d none
    turn1 = metrics.mean_pass_at_k([(3, 1), (3, 0), (3, 3), (3, 0)], 1)
    assert row(s, "all")["pass_by_turn"]["1"] == [pytest.approx(turn1), pytest.approx(row(s, "all")["pass"]["1"])]
    assert row(s, "level 1")["pass"]["1"] == pytest.approx((2 / 3 + 0 + 1) / 3)  # a number, not only a call


def test_fast_p_strict_and_noise_aware_are_metrics_fast_p_on_the_best_attempts():
    s = summarize(RECORDS, ks=[1])
    best = {"a": 2.5, "b": None, "c": 1.2, "d": 0.5}  # fastest correct attempt per task, vs eager
    correct = [v is not None for v in best.values()]
    strict = list(best.values())
    aware = [2.5, None, 1.2 / 1.3, 0.5]  # a's best (2.5x) is untimed noise-free; c carries 15 % + 15 % IQR
    speed = row(s, "all")["speed"]["eager"]
    for p in (0.0, 1.0, 2.0):
        assert speed["strict"][str(p)] == metrics.fast_p(correct, strict, p)
        assert speed["noise_aware"][str(p)] == metrics.fast_p(correct, aware, p)
    assert speed["geomean"] == pytest.approx(metrics.geomean_speedup(correct, strict))
    assert speed["strict"]["1.0"] == 0.5 and speed["noise_aware"]["1.0"] == 0.25  # c is fast only strictly
    compile_best = [3.0, None, 0.9, 0.4]
    comp = row(s, "all")["speed"]["compile"]
    assert comp["strict"]["1.0"] == metrics.fast_p(correct, compile_best, 1.0) == 0.25


def test_noise_aware_rejects_a_speedup_inside_the_timing_noise():
    records = [rec("t", 1, 0, 1, ok(1.05, iqr=0.05))]  # 1.05 < 1 * (1 + 0.05 + 0.05)
    speed = summarize(records, ks=[1])["rows"][0]["speed"]["eager"]
    assert speed["strict"]["1.0"] == 1.0 and speed["noise_aware"]["1.0"] == 0.0


def test_status_counts_name_the_guard_of_each_rejection():
    s = summarize(RECORDS, ks=[1])
    level1 = next(st for st in s["statuses"] if st["label"] == "level 1")
    assert level1["attempts"] == 18
    assert level1["counts"] == {"ok": 9, "incorrect": 4, "compile_error": 2, "timeout": 1, "rejected": 2}
    assert level1["rejected_by_guard"] == {"no_kernel": 2}


def test_untimed_run_reports_speed_as_na_but_still_pass_at_k():
    records = [rec("x", None, 0, 1, ok(None)), rec("y", None, 0, 1, bad())]
    s = summarize(records, ks=[1])
    assert row(s, "all")["speed"] == {"eager": None, "compile": None}
    assert row(s, "all")["pass"]["1"] == 0.5
    md = render_markdown(s)
    assert "Untimed run" in md and "| all | n/a | n/a |" in md


def test_pass_at_k_needs_k_samples_per_task():
    s = summarize([rec("x", 1, 0, 1, ok(None))], ks=[1, 2])
    assert row(s, "all")["pass"] == {"1": 1.0, "2": None}


def test_degenerate_tasks_are_listed_and_figures_repeated_without_them():
    flagged = ok(3.0)
    flagged.env = {"degenerate_task": True}
    # what the judge's canaries write: infra_error, guard `degenerate`, the canary's name in env
    zeros = bad("infra_error", "degenerate", env={"degenerate_task": "zeros"})
    odd, odder = bad(), bad(env={"degenerate_task": 0})
    odd.env = None  # read defensively: no env at all, or a value of another type
    records = [rec("real", 1, 0, 1, ok(1.5)), rec("canary", 1, 0, 1, flagged), rec("other", 1, 0, 1, odd),
               rec("zero", 1, 0, 1, zeros), rec("odd", 1, 0, 1, odder)]  # fmt: skip
    s = summarize(records, ks=[1])
    assert s["degenerate"] == ["canary (flagged)", "zero (zeros)"]
    assert row(s, "all")["pass"]["1"] == pytest.approx(2 / 5)
    without = next(r for r in s["rows_without_degenerate"] if r["label"] == "all")
    assert without["tasks"] == 3 and without["pass"]["1"] == pytest.approx(1 / 3)
    assert "## Results without degenerate tasks" in render_markdown(s)


def test_missing_solutions_count_as_unsolved_and_are_listed():
    missing = Verdict.fail("format_error", "no file", guard=MISSING_GUARD)
    s = summarize([rec("have", 1, 0, 1, ok(None)), rec("lost", 1, 0, 1, missing)], ks=[1])
    assert s["missing"] == ["lost"] and row(s, "all")["pass"]["1"] == 0.5
    assert "Missing solutions (1, counted as not solved): lost" in render_markdown(s)
    assert [o.missing for o in task_outcomes(s and [rec("lost", 1, 0, 1, missing)])] == [True]


def test_report_files_and_compare(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    write_report(a, RECORDS, [1, 3], {"model": "m1"}, plots=True)
    write_report(b, RECORDS[:6], [1, 3], {"model": "m2"}, plots=False)
    assert all((a / f).stat().st_size > 1000 for f in ("speedups.png", "outcomes.png", "pass_by_turn.png"))
    summary = json.loads((a / "summary.json").read_text())
    assert math.isclose(row(summary, "all")["pass"]["3"], metrics.mean_pass_at_k([(3, 2), (3, 0), (3, 3), (3, 1)], 3))
    text = compare(a, b)
    assert "| level | figure | a (m1) | b (m2) |" in text
    assert "| all | tasks | 4 | 1 |" in text
    assert "| level 1 | fast_1 noise-aware vs eager | 33.3% | 100.0% |" in text
