import math

import pytest
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


def _ok_by_definition(r: torch.Tensor, o: torch.Tensor, atol: float, rtol: float) -> bool:
    """The rule written out in fp64, element by element: NaN=NaN, inf=inf exactly, else |o-r| <= atol + rtol|r|."""
    r64, o64 = r.double().reshape(-1).tolist(), o.double().reshape(-1).tolist()
    for a, b in zip(r64, o64):
        if math.isnan(a) or math.isnan(b):
            if not (math.isnan(a) and math.isnan(b)):
                return False
        elif math.isinf(a) or math.isinf(b):
            if a != b:
                return False
        elif abs(b - a) > atol + rtol * abs(a):
            return False
    return True


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.float64])
def test_fast_path_agrees_with_the_definition(dtype):
    gen = torch.Generator().manual_seed(0)
    tol = {"float32": 1e-4, "float16": 1e-2, "float64": 1e-4}
    key = str(dtype).removeprefix("torch.")
    agree = {True: 0, False: 0}
    for trial in range(200):
        r = torch.randn(64, generator=gen).to(dtype)
        # errors spread around the tolerance: some trials pass, some fail
        scale = tol[key] * (1 + r.double().abs()) * float(torch.rand(1, generator=gen) * 2)
        o = (r.double() + scale * (torch.rand(64, generator=gen, dtype=torch.float64) * 2 - 1) * 0.9).to(dtype)
        if trial % 10 == 0:
            r[3], o[3] = float("nan"), float("nan")
            r[5], o[5] = float("inf"), float("inf")
        res = compare([r], [o], tol, tol)
        expected = _ok_by_definition(r, o, tol[key], tol[key])
        assert res.ok == expected, (trial, res.feedback)
        agree[res.ok] += 1
        if res.ok:
            finite = torch.isfinite(r.double())
            want = float(torch.where(finite, (o.double() - r.double()).abs(), 0).max())
            assert res.max_abs_err == pytest.approx(want, rel=1e-3, abs=1e-12)
    assert agree[True] > 20 and agree[False] > 20  # both outcomes exercised


def test_quick_mismatch_skips_the_diagnosis():
    r = torch.zeros(8)
    full, quick = compare([r], [r + 1], TOL.atol, TOL.rtol), compare([r], [r + 1], TOL.atol, TOL.rtol, diagnose=False)
    assert not full.ok and not quick.ok and full.guard == quick.guard == "value"
    assert "first at flat index 0" in full.feedback and "first at" not in quick.feedback
    assert compare([r], [r], TOL.atol, TOL.rtol, device="cpu", diagnose=False).ok
