"""bench/timing_stability.py's table: a candidate's speedup spread against its bound, and, where the verdicts carry
the eager reference's time, which of the two moved it."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import timing_stability  # noqa: E402


def test_a_launch_bound_candidate_over_its_bound_shows_the_reference_moved():
    # [where, status, speedup, kernel ms, speed noise, noisy, reference ms]: the kernel holds at 4.0-4.1 us, the
    # reference takes one of two modes (6.4 or 7.4 us), as the absolute difference did on the H100
    runs = {"absdiff": [["alone", "ok", 6.3 / 4.1, 0.0041, 0.1, False, 0.0063],
                        ["alone", "ok", 6.4 / 4.0, 0.0040, 0.1, False, 0.0064],
                        ["batch", "ok", 7.4 / 4.0, 0.0040, 0.1, False, 0.0074]],
            "relu": [["alone", "ok", 0.59, 0.0827, 0.01, False, 0.0488],
                     ["batch", "ok", 0.60, 0.0826, 0.01, False, 0.0496]]}  # fmt: skip
    rows, failed = timing_stability.table(runs)
    by = {r["candidate"]: r for r in rows}
    assert failed == 1 and not by["absdiff"]["pass"] and by["relu"]["pass"]
    assert by["absdiff"]["bound"] == 0.15 and by["relu"]["bound"] == 0.05  # under 50 us: launch-bound
    assert round(by["absdiff"]["kernel_spread"], 3) == round(0.0001 / 0.0040, 3)
    assert round(by["absdiff"]["reference_spread"], 3) == round(0.0011 / 0.0064, 3)
    assert by["absdiff"]["spread"] > 0.15 and by["absdiff"]["reference_spread"] > 5 * by["absdiff"]["kernel_spread"]


def test_older_records_without_the_reference_still_make_a_table():
    runs = {"mul": [["alone", "ok", 1.01, 0.0041, 0.1, True], ["batch", "ok", 1.05, 0.0041, 0.1, True]]}
    rows, failed = timing_stability.table(runs)
    assert failed == 0 and rows[0]["reference_ms"] == [] and rows[0]["reference_spread"] is None
    assert rows[0]["noisy_runs"] == 2  # flagged noisy in every run: within its bound by the flag


def test_a_batch_pass_names_every_verdict_unlike_its_expected_status(tmp_path, capsys):
    from concurrent.futures import Future
    from types import SimpleNamespace

    def case(name, expected):
        return SimpleNamespace(name=name, task="t", source="s", backend="triton", expected=expected)

    statuses = {"ok_a": "ok", "typo": "ok", "wrong": "incorrect", "timed": "ok"}  # `typo` should not have built

    class Pool:
        def submit(self, task, source, backend):
            done = Future()
            done.set_result(SimpleNamespace(status=statuses[task.name]))
            return done

    batch = [case("ok_a", ("ok",)), case("typo", ("compile_error",)), case("wrong", ("incorrect",))]
    verdicts, wrong = timing_stability.judge_in_batch([case("timed", ("ok",))], batch, Pool(), "\n# pass\n")
    assert [v.status for v in verdicts] == ["ok"] and wrong == ["typo: ok"]
    assert timing_stability.finish({}, {"mismatches": wrong}, tmp_path / "s.json") == 1
    assert "1 verdicts of the batch passes unlike their expected status" in capsys.readouterr().out
    assert timing_stability.finish({}, {"mismatches": []}, None) == 0
