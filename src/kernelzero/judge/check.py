"""Output comparison, done in the judge's process (never where candidate code runs): type, shape, dtype, values."""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class CheckResult:
    ok: bool
    guard: str | None = None  # which check failed: structure, tensor_subclass, shape, dtype, value
    feedback: str = ""
    max_abs_err: float = 0.0


def compare(ref: list[torch.Tensor], out: list, atol: dict[str, float], rtol: dict[str, float],
            device: str | None = None, diagnose: bool = True) -> CheckResult:  # fmt: skip
    """Compare one trial's outputs. NaN must match NaN and inf must match inf, position by position.

    device: where the values are compared (the judge's own GPU when it has one: a copy is cheaper than the CPU
    work). diagnose=False: a mismatch returns at once, without the fp64 search for the first bad element."""
    if len(ref) != len(out):
        return CheckResult(False, "structure", f"expected {len(ref)} output tensor(s), got {len(out)}")
    worst = 0.0
    for i, (r, o) in enumerate(zip(ref, out)):
        name = f"output {i}" if len(ref) > 1 else "output"
        if type(o) is not torch.Tensor:
            return CheckResult(False, "tensor_subclass", f"{name} is {type(o).__name__}, not a plain torch.Tensor")
        if o.shape != r.shape:
            return CheckResult(False, "shape", f"{name} shape {tuple(o.shape)} != expected {tuple(r.shape)}")
        if o.dtype != r.dtype:
            return CheckResult(False, "dtype", f"{name} dtype {o.dtype} != expected {r.dtype}")
        if device is not None:
            r, o = r.to(device), o.to(device)
        key = str(r.dtype).removeprefix("torch.")
        a, rt = atol.get(key, 0.0), rtol.get(key, 0.0)
        if not (r.is_floating_point() or r.is_complex()):
            if not torch.equal(o, r):
                n_bad = int((o != r).sum())
                return CheckResult(False, "value", f"{name}: {n_bad} of {r.numel()} elements differ (exact dtype)")
            continue
        if _all_close(r, o, a, rt):  # the common case, in a few passes at fp32 or wider
            worst = max(worst, _max_abs_err(r, o))
            continue
        if not diagnose:
            return CheckResult(False, "value", f"{name}: values outside atol={a}, rtol={rt}")
        # Something is off: diagnose in fp64 (the verdict names the first bad element). An element flagged only by
        # fp32 rounding at the tolerance's edge passes here.
        r64, o64 = r.double(), o.double()
        nan_r, nan_o = torch.isnan(r64), torch.isnan(o64)
        if not torch.equal(nan_r, nan_o):
            return CheckResult(False, "value", f"{name}: NaN at {int((nan_r ^ nan_o).sum())} positions that differ")
        finite = torch.isfinite(r64)
        inf_mismatch = (~finite & ~nan_r) & (o64 != r64)
        if bool(inf_mismatch.any()):
            return CheckResult(False, "value", f"{name}: infinities differ at {int(inf_mismatch.sum())} positions")
        diff = (o64 - r64).abs().masked_fill(~finite, 0.0)
        bound = a + rt * r64.abs().masked_fill(~finite, 0.0)
        bad = diff > bound
        err = float(diff.max()) if diff.numel() else 0.0
        worst = max(worst, err)
        if bool(bad.any()):
            idx = int(bad.reshape(-1).nonzero()[0])
            return CheckResult(
                False,
                "value",
                f"{name}: {int(bad.sum())} of {r.numel()} elements outside atol={a}, rtol={rt}; max abs error "
                f"{err:.3g}; first at flat index {idx}: got {float(o64.reshape(-1)[idx]):.6g}, "
                f"expected {float(r64.reshape(-1)[idx]):.6g}",
                err,
            )
    return CheckResult(True, max_abs_err=worst)


def _wide(t: torch.Tensor) -> torch.Tensor:
    return t if t.dtype in (torch.float32, torch.float64) or t.is_complex() else t.float()


def _all_close(r: torch.Tensor, o: torch.Tensor, atol: float, rtol: float) -> bool:
    """|o - r| <= atol + rtol * |r| everywhere, NaN matching NaN and infinities matching exactly (torch.isclose)."""
    return bool(torch.isclose(_wide(o), _wide(r), rtol=rtol, atol=atol, equal_nan=True).all())


def _max_abs_err(r: torch.Tensor, o: torch.Tensor) -> float:
    """The largest |o - r| over the reference's finite elements (0 for an empty tensor)."""
    if not r.numel():
        return 0.0
    rw, ow = _wide(r), _wide(o)
    return float(torch.where(torch.isfinite(rw), (ow - rw).abs(), 0).max())
