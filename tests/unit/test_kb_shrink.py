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
input_shape = (32768,)
K = 131072 * 8 # 1048576
ratio = 3 // 2
def get_inputs():
    n = 100000
    return [torch.rand(batch_size, dim)]
def get_init_inputs():
    return [multiplier]
'''


def test_module_level_int_sizes_shrink_and_nothing_else_changes():
    out = kb_check.shrink_source(TASK, cap=63, overrides={"dim": 4099})
    assert "batch_size = 63\n" in out and "dim = 4099  # comment kept\n" in out
    for kept in ("size = 4096", "multiplier = 2.0", "small = 3", "kernel_size = (3, 5)", "n = 100000", "3 // 2"):
        assert kept in out
    assert len(out.splitlines()) == len(TASK.splitlines())


def test_integer_arithmetic_and_int_tuples_are_sizes_too():
    """`K = 131072 * 8` (level-1 mat-vec) and `input_shape = (32768,)` (the losses) shrink like plain integers; an
    override may replace either, a tuple by a tuple."""
    out = kb_check.shrink_source(TASK, cap=63)
    assert "input_shape = (63,)\n" in out and "K = 63 # 1048576\n" in out and "kernel_size = (3, 5)\n" in out
    out = kb_check.shrink_source(TASK, cap=63, overrides={"K": 10000, "input_shape": (200,)})
    assert "K = 10000 # 1048576\n" in out and "input_shape = (200,)\n" in out


def test_expected_outcome_is_read_from_the_solution_docstring():
    assert kb_check.expected('"""DELIBERATELY INCORRECT. Expected: incorrect."""\n') == "incorrect"
    assert kb_check.expected('"""Fused. Expected: correct."""\n') == "correct"
    assert kb_check.expected('"""Correct code, but Expected: degenerate."""\n') == "degenerate"


# folder -> (solutions, correct, degenerate, incorrect); see bench/README.md for which and why
KB_SETS = {"kb_solutions": (12, 9, 0, 3), "kb_solutions_large": (12, 8, 1, 3)}


@pytest.mark.skipif(not os.environ.get("KERNELBENCH_DIR"), reason="needs $KERNELBENCH_DIR (a KernelBench checkout)")
@pytest.mark.parametrize("folder", sorted(KB_SETS))
def test_every_kb_solution_has_a_kernelbench_task_and_states_its_expected_outcome(folder):
    root = Path(os.environ["KERNELBENCH_DIR"])
    root = root / "KernelBench" if (root / "KernelBench").is_dir() else root
    sols = sorted((ROOT / "bench" / folder).glob("level*/*.py"))
    n, correct, degenerate, incorrect = KB_SETS[folder]
    assert len(sols) == n
    assert all((root / s.parent.name / s.name).is_file() for s in sols)
    outcomes = [kb_check.expected(s.read_text()) for s in sols]
    counts = (outcomes.count("correct"), outcomes.count("degenerate"), outcomes.count("incorrect"))
    assert counts == (correct, degenerate, incorrect)


def test_the_two_solution_sets_are_disjoint():
    """A task lives in one set: `kb_solutions` is judged on the GPU at real sizes, `kb_solutions_large` is not."""
    names = {f: {p.relative_to(ROOT / "bench" / f) for p in (ROOT / "bench" / f).glob("level*/*.py")} for f in KB_SETS}
    assert all(names.values()) and not set.intersection(*names.values())


@pytest.mark.skipif(not os.environ.get("KERNELBENCH_DIR"), reason="needs $KERNELBENCH_DIR (a KernelBench checkout)")
@pytest.mark.parametrize("folder", sorted(KB_SETS))
def test_real_size_outputs_fit_the_judge_only_in_kb_solutions(folder):
    """The judge copies every output to CPU and between processes, so the GPU-judged set keeps real-size outputs
    under 300 MB; `kb_solutions_large` is where tasks past that live. Shapes come from the meta device: no memory."""
    import types

    import torch

    root = Path(os.environ["KERNELBENCH_DIR"])
    root = root / "KernelBench" if (root / "KernelBench").is_dir() else root
    for sol in sorted((ROOT / "bench" / folder).glob("level*/*.py")):
        task = types.ModuleType(sol.stem)
        exec(compile((root / sol.parent.name / sol.name).read_text(), sol.name, "exec"), task.__dict__)
        with torch.device("meta"):
            out = task.Model(*task.get_init_inputs())(*task.get_inputs())
        nbytes = sum(t.numel() * t.element_size() for t in (out if isinstance(out, (tuple, list)) else [out]))
        assert (nbytes <= 300e6) == (folder == "kb_solutions"), f"{sol.stem}: {nbytes / 1e6:.0f} MB of output"
