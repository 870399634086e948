import torch

from kernelzero.judge.check import compare
from kernelzero.judge.options import JudgeOptions

TOL = JudgeOptions()


def run(ref, out):
    return compare(ref, out, TOL.atol, TOL.rtol)


def test_equal_within_fp32_tolerance():
    r = torch.tensor([1.0, -2.0, 3.0])
    res = run([r], [r + 5e-5])
    assert res.ok and abs(res.max_abs_err - 5e-5) < 1e-6


def test_value_outside_tolerance_names_index_and_values():
    r = torch.tensor([1.0, 2.0, 3.0])
    res = run([r], [torch.tensor([1.0, 2.1, 3.0])])
    assert not res.ok and res.guard == "value"
    assert "1 of 3 elements" in res.feedback and "flat index 1" in res.feedback


def test_fp16_uses_looser_tolerance():
    r = torch.tensor([1.0, 2.0], dtype=torch.float16)
    assert run([r], [r + 0.005]).ok
    assert not run([r.float()], [r.float() + 0.005]).ok


def test_nan_must_match_nan_and_inf_must_match_inf():
    r = torch.tensor([float("nan"), float("inf"), 1.0])
    assert run([r], [r.clone()]).ok
    assert run([r], [torch.tensor([0.0, float("inf"), 1.0])]).guard == "value"
    assert run([r], [torch.tensor([float("nan"), 1e30, 1.0])]).guard == "value"


def test_shape_dtype_structure_and_subclass():
    r = torch.zeros(2, 3)
    assert run([r], [torch.zeros(3, 2)]).guard == "shape"
    assert run([r], [torch.zeros(2, 3, dtype=torch.float64)]).guard == "dtype"
    assert run([r], [r, r]).guard == "structure"

    class Lazy(torch.Tensor):
        pass

    assert run([r], [torch.zeros(2, 3).as_subclass(Lazy)]).guard == "tensor_subclass"


def test_integer_outputs_compare_exactly():
    r = torch.tensor([1, 2, 3])
    assert run([r], [r.clone()]).ok
    assert run([r], [torch.tensor([1, 2, 4])]).guard == "value"
