"""Per-step Coder metrics (pure): pass rate, gate-open share, speedup of correct rollouts, status counts."""

import math

import pytest
import torch

from kernelzero.judge.verdict import STATUSES
from kernelzero.trainers.coder import coder_step_metrics, step_log_line

NAN = float("nan")


def test_metrics_on_two_groups():
    raw = torch.tensor([[1, 2.0], [0, 0.0], [1, NAN], [NAN, NAN], [0, 0.0], [0, 0.0], [1, 6.0], [0, 0.0]])  # (8, 2)
    statuses = ["ok", "incorrect", "ok", "infra_error", "compile_error", "timeout", "ok", "rejected"]
    m = coder_step_metrics(raw, statuses, group_size=4, alpha=0.5)
    assert m["coder/pass_rate"] == pytest.approx(3 / 7)
    assert m["coder/gate_open_share"] == 0.5  # group 0: 2/3 open; group 1: 1/4 closed
    assert m["coder/speedup_correct_mean"] == pytest.approx(4.0)  # the untimed correct rollout is left out
    assert [m[f"judge/status/{s}"] for s in STATUSES] == [3, 0, 1, 0, 1, 1, 0, 1, 1]
    assert "coder/dynamic_sampling_filtered_share" not in m
    line = step_log_line(7, m)
    assert line.startswith("coder step 7 | pass 0.429 | gate open 0.500 | speedup(correct) 4.000 |")
    assert "ok=3" in line and "format_error" not in line


def test_metrics_are_nan_where_undefined():
    raw = torch.tensor([[NAN, NAN], [NAN, NAN]])
    m = coder_step_metrics(raw, ["infra_error"] * 2, group_size=2, alpha=0.5, filtered=torch.tensor([True]))
    assert math.isnan(m["coder/pass_rate"]) and math.isnan(m["coder/gate_open_share"])
    assert math.isnan(m["coder/speedup_correct_mean"])
    assert m["judge/status/infra_error"] == 2 and m["coder/dynamic_sampling_filtered_share"] == 1.0
