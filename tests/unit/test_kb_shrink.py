"""`bench/kb_check.shrink_source`: KernelBench size constants shrink in a copy; everything else is left alone."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("kb_check", ROOT / "bench" / "kb_check.py")
kb_check = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kb_check)

TASK = '''import torch
class Model(torch.nn.Module):
    size = 4096
    def forward(self, x):
        return x * 2.0
batch_size = 4096
dim = 393216  # comment kept
multiplier = 2.0
small = 3
kernel_size = (3, 5)
def get_inputs():
    n = 100000
    return [torch.rand(batch_size, dim)]
def get_init_inputs():
    return [multiplier]
'''


def test_module_level_int_sizes_shrink_and_nothing_else_changes():
    out = kb_check.shrink_source(TASK, cap=63, overrides={"dim": 4099})
    assert "batch_size = 63\n" in out and "dim = 4099  # comment kept\n" in out
    for kept in ("size = 4096", "multiplier = 2.0", "small = 3", "kernel_size = (3, 5)", "n = 100000"):
        assert kept in out
    assert len(out.splitlines()) == len(TASK.splitlines())


def test_expected_outcome_is_read_from_the_solution_docstring():
    assert kb_check.expected('"""DELIBERATELY INCORRECT. Expected: incorrect."""\n') == "incorrect"
    assert kb_check.expected('"""Fused. Expected: correct."""\n') == "correct"
    assert kb_check.expected('"""Correct code, but Expected: degenerate."""\n') == "degenerate"


@pytest.mark.skipif(not os.environ.get("KERNELBENCH_DIR"), reason="needs $KERNELBENCH_DIR (a KernelBench checkout)")
def test_every_kb_solution_has_a_kernelbench_task_and_states_its_expected_outcome():
    root = Path(os.environ["KERNELBENCH_DIR"])
    root = root / "KernelBench" if (root / "KernelBench").is_dir() else root
    sols = sorted((ROOT / "bench" / "kb_solutions").glob("level*/*.py"))
    assert len(sols) == 12
    assert all((root / s.parent.name / s.name).is_file() for s in sols)
    outcomes = [kb_check.expected(s.read_text()) for s in sols]
    assert outcomes.count("correct") == 8 and outcomes.count("degenerate") == 1 and outcomes.count("incorrect") == 3
