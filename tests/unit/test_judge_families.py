"""Pure parts of the guards against exploit families 13-20: the wide trials' plan and tolerance, the reduction
canary, library compute that rebuilds the task from other aten ops, the strict fp32 tolerance against TF32, and the
run-time API check of task validation."""

import torch

from kernelzero.curriculum.validate import run_name, unrun_apis
from kernelzero.judge.check import compare
from kernelzero.judge.core import degenerate_canary
from kernelzero.judge.guards import library_op_violation
from kernelzero.judge.options import JudgeOptions
from kernelzero.judge.wide import WIDE_SCALE, scaled_atol, shrunk_sizes, wide_plan

SIZED = """
import torch
batch_size = 16
dim = 256
hidden = 64

class Model(torch.nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.lin = torch.nn.Linear(hidden, hidden)

def get_inputs():
    return [torch.randn(batch_size, dim)]

def get_init_inputs():
    return [hidden]
"""


def test_only_sizes_that_nothing_but_get_inputs_reads_are_shrunk():
    assert shrunk_sizes(SIZED) == {"batch_size": 9, "dim": 129}  # hidden also builds the Model: kept
    assert shrunk_sizes(SIZED.replace("super().__init__()", "super().__init__()\n        self.d = dim")) == {
        "batch_size": 9}  # fmt: skip
    assert shrunk_sizes("def get_inputs():\n    return [torch.randn(16, 256)]\n") == {}  # literals: nothing to rebind
    plan = wide_plan(SIZED, [11, 12])
    assert plan == [{"seed": 11, "scale": WIDE_SCALE}, {"seed": 12, "sizes": {"batch_size": 9, "dim": 129}}]
    assert wide_plan("def get_inputs():\n    return []\n", [1, 2]) == [{"seed": 1, "scale": WIDE_SCALE}]


def test_scale_trial_tolerance_grows_with_the_outputs_never_shrinks():
    plain = [torch.full((4,), 2.0)]
    assert scaled_atol({"float32": 1e-4}, [torch.full((4,), 2048.0)], plain) == {"float32": 1e-4 * 1024}
    assert scaled_atol({"float32": 1e-4}, [torch.full((4,), 1.0)], plain) == {"float32": 1e-4}  # softmax-like: kept


def test_reduction_canary_flags_an_output_that_is_a_reduction_of_the_input():
    xs = [torch.randn(16, 256) for _ in range(3)]
    outs = [[x.amax(dim=1)] for x in xs]
    reductions = [[[x.sum(dim=1), x.amax(dim=1)]] for x in xs]
    atol, rtol = JudgeOptions().atol, JudgeOptions().rtol
    assert degenerate_canary(outs, [[None]] * 3, atol, rtol, reductions) == "reduction"
    assert degenerate_canary(outs, [[None]] * 3, atol, rtol, None) is None  # a task that IS a reduction: not checked
    honest = [[torch.logsumexp(x, dim=1)] for x in xs]
    assert degenerate_canary(honest, [[None]] * 3, atol, rtol, reductions) is None


def test_task_rebuilt_from_other_library_ops_is_no_custom_kernel():
    ref = {"_softmax": 4096}
    decomposed = {"amax": 4096, "sub": 4096, "exp": 4096, "sum": 4096, "div": 4096, "empty_like": 4096}
    assert "library ops" in library_op_violation(ref, decomposed, 1)
    assert library_op_violation(ref, {"amax": 4096, "empty_like": 4096}, 1) is None  # one torch pass: allowed
    gemm = {"mm": 4096}
    assert library_op_violation(gemm, {"add": 4096 * 4}, 1) is None  # GEMM tasks: the family rule decides


def test_strict_fp32_tolerance_fails_tf32_on_a_64_deep_product():
    """TF32 keeps 10 mantissa bits of each fp32 input: simulated by rounding the inputs, the product's error is far
    outside the judge's fp32 tolerance (it is what catches `triton_tf32_default_dot` on a GPU)."""
    gen = torch.Generator().manual_seed(0)
    a, b = torch.randn(64, 64, generator=gen), torch.randn(64, 64, generator=gen)

    def tf32(t: torch.Tensor) -> torch.Tensor:
        bits = t.view(torch.int32)
        return ((bits + 0x1000) & ~0x1FFF).view(torch.float32)  # round to nearest, 13 low mantissa bits dropped

    ref, fast = a @ b, tf32(a) @ tf32(b)
    o = JudgeOptions()
    assert not compare([ref], [fast], o.atol, o.rtol).ok
    assert compare([ref], [fast], {"float32": 1e-2}, {"float32": 1e-2}).ok  # KernelBench's 1e-2 lets TF32 through


def test_run_names_and_apis_that_forward_never_ran():
    assert run_name("nn.LayerNorm") == "layer_norm" and run_name("torch.nn.BatchNorm2d") == "batch_norm"
    assert run_name("nn.Sequential") is None and run_name("torch.randn") is None  # not checked at run time
    ran = ["tanh", "linear", "addmm", "t"]
    assert unrun_apis(["nn.LayerNorm", "torch.tanh", "nn.Linear"], ran) == ("nn.LayerNorm",)
    assert unrun_apis(["nn.LayerNorm"], ["layer_norm", "native_layer_norm"]) == ()
