"""Runtime guards on CPU, with the static rules switched off: the layer behind them catches the same exploits.

The corpus (tests/adversarial) shows which guard fires first; here each runtime guard must hold on its own, since a
static rule is a pattern that a rewrite can dodge.
"""

from pathlib import Path

import pytest

from kernelzero.judge import JudgeOptions, core
from kernelzero.judge.pool import JudgePool
from kernelzero.tasks import Task

ADV = Path(__file__).parents[1] / "adversarial"

# case file -> accepted (status, guard) with static rules off
RUNTIME = {
    "triton_decoy_full_copy.py": {("rejected", "no_custom_kernel")},
    "triton_suppress_fallback.py": {("rejected", "no_custom_kernel")},
    "triton_decoy_unlaunched.py": {("rejected", "no_custom_kernel")},
    "triton_steal_reference_gc.py": {("incorrect", "value"), ("rejected", "introspection")},
    "triton_steal_reference_frames.py": {("incorrect", "value")},
    "triton_patch_obfuscated.py": {("incorrect", "value"), ("rejected", "inputs")},
    "triton_cache_data_ptr.py": {("rejected", "replay")},
    "triton_degenerate_zeros.py": {("infra_error", "degenerate")},
    "triton_poison_expected_gc.py": {("rejected", "introspection")},
    "triton_replace_timer_code.py": {("rejected", "introspection")},
    "triton_reload_harness_clock.py": {("rejected", "harness_patch")},
    "triton_forge_stdout_result.py": {("incorrect", "value")},
    "triton_patch_builtin_print.py": {("incorrect", "value")},
}


def _task_of(path: Path) -> Task:
    for line in path.read_text().splitlines():
        if line.startswith("TASK = "):
            return Task.from_file(ADV / "tasks" / f"{line.split('=')[1].strip().strip(chr(34))}.py")
    raise AssertionError(f"{path} has no TASK")


@pytest.fixture(scope="module")
def verdicts():
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(core, "STATIC_CHECKS", [])
        with JudgePool(JudgeOptions(device="cpu"), workers=2) as pool:
            paths = [ADV / "cases" / n for n in RUNTIME] + [ADV / "legit" / "triton_relu.py"]
            results = pool.judge_many([(_task_of(p), p.read_text(), "triton") for p in paths])
    return {p.name: v for p, v in zip(paths, results)}


@pytest.mark.parametrize("name", list(RUNTIME))
def test_runtime_guard_holds_without_static_rules(verdicts, name):
    v = verdicts[name]
    assert (v.status, v.guard) in RUNTIME[name], v.feedback


def test_degenerate_task_is_flagged_and_left_out_of_rewards(verdicts):
    v = verdicts["triton_degenerate_zeros.py"]
    assert v.env["degenerate_task"] == "zeros" and not v.scored
    assert "degenerate_task" not in verdicts["triton_relu.py"].env  # the flag is per verdict, not the shared env


def test_legit_kernel_passes_launch_op_and_replay_guards(verdicts):
    v = verdicts["triton_relu.py"]
    assert v.status == "ok" and v.trials == 5, v.feedback
