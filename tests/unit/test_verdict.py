import pytest

from kernelzero.judge.verdict import STATUSES, Timing, Verdict


def test_json_round_trip_keeps_every_field():
    v = Verdict(status="ok", correct=True, backend="triton", device="cuda", timed=True,
                runtime=Timing(1.5, 0.1, 1.4, 50), ref_runtime=Timing(3.0, 0.2, 2.9, 50),
                speedup_eager=2.0, env={"gpu": "H200"}, stage_s={"build": 1.0}, trials=5)
    back = Verdict.from_json(v.to_json())
    assert back == v
    assert back.runtime.median_ms == 1.5


def test_status_set_is_closed_and_correct_matches_status():
    assert len(STATUSES) == 9
    with pytest.raises(ValueError, match="status must be one of"):
        Verdict(status="passed")
    with pytest.raises(ValueError, match="contradicts"):
        Verdict(status="incorrect", correct=True)


def test_infra_error_is_not_scored():
    assert not Verdict.fail("infra_error", "lost worker").scored
    assert Verdict.fail("timeout", "slow").scored


def test_feedback_is_clipped_for_prompts():
    v = Verdict.fail("compile_error", "\n".join(f"line {i}" for i in range(100)))
    assert v.feedback.count("\n") == 25
    assert v.feedback.startswith("line 0") and v.feedback.endswith("(75 more lines)")
