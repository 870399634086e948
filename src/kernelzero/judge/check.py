"""Output comparison, done in the judge's process (never where candidate code runs): type, shape, dtype, values."""

from __future__ import annotations

from dataclasses import dataclass

import torch

CHUNK = 1 << 28  # elements compared at once: 1 GB of fp32 per side on the device, whatever the output's size


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
        key = str(r.dtype).removeprefix("torch.")
        a, rt = atol.get(key, 0.0), rtol.get(key, 0.0)
        n = r.numel()
        rf, of = (r, o) if n <= CHUNK else (r.reshape(-1), o.reshape(-1))
        for start in range(0, max(n, 1), CHUNK):  # a 6 GB output in 1 GB pieces: bounded device memory
            rc, oc = (rf, of) if n <= CHUNK else (rf[start:start + CHUNK], of[start:start + CHUNK])
            res = _compare_values(name, rc, oc, a, rt, device, diagnose, start, n)
            if not res.ok:
                return res
            worst = max(worst, res.max_abs_err)
    return CheckResult(True, max_abs_err=worst)


def _compare_values(name: str, r: torch.Tensor, o: torch.Tensor, a: float, rt: float, device: str | None,
                    diagnose: bool, offset: int, total: int) -> CheckResult:  # fmt: skip
    """Values of one output, or of the piece of it starting at flat index `offset` (of `total` elements)."""
    if device is not None:
        r, o = r.to(device), o.to(device)
    part = "" if r.numel() == total else " (in the first piece that differs)"
    if not (r.is_floating_point() or r.is_complex()):
        if not torch.equal(o, r):
            n_bad = int((o != r).sum())
            return CheckResult(False, "value", f"{name}: {n_bad} of {total} elements differ (exact dtype){part}")
        return CheckResult(True)
    if _all_close(r, o, a, rt):  # the common case, in a few passes at fp32 or wider
        return CheckResult(True, max_abs_err=_max_abs_err(r, o))
    if not diagnose:
        return CheckResult(False, "value", f"{name}: values outside atol={a}, rtol={rt}")
    # Something is off: diagnose in fp64 (the verdict names the first bad element). An element flagged only by
    # fp32 rounding at the tolerance's edge passes here.
    r64, o64 = r.double(), o.double()
    nan_r, nan_o = torch.isnan(r64), torch.isnan(o64)
    if not torch.equal(nan_r, nan_o):
        return CheckResult(False, "value", f"{name}: NaN at {int((nan_r ^ nan_o).sum())} positions that differ{part}")
    finite = torch.isfinite(r64)
    inf_mismatch = (~finite & ~nan_r) & (o64 != r64)
    if bool(inf_mismatch.any()):
        return CheckResult(False, "value", f"{name}: infinities differ at {int(inf_mismatch.sum())} positions{part}")
    diff = (o64 - r64).abs().masked_fill(~finite, 0.0)
    bound = a + rt * r64.abs().masked_fill(~finite, 0.0)
    bad = diff > bound
    err = float(diff.max()) if diff.numel() else 0.0
    if bool(bad.any()):
        idx = int(bad.reshape(-1).nonzero()[0])
        return CheckResult(
            False,
            "value",
            f"{name}: {int(bad.sum())} of {total} elements outside atol={a}, rtol={rt}; max abs error "
            f"{err:.3g}; first at flat index {offset + idx}: got {float(o64.reshape(-1)[idx]):.6g}, "
            f"expected {float(r64.reshape(-1)[idx]):.6g}{part}",
            err,
        )
    return CheckResult(True, max_abs_err=err)


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


REDUCTION_FAMILIES = {"sum", "mean", "amax", "amin", "max", "min"}  # canary `reduction` skips tasks made of these


def degenerate_canary(outputs: list[list[torch.Tensor]], identity: list[list], atol: dict, rtol: dict,
                      reductions: list | None = None) -> str | None:  # fmt: skip
    """The first trivial answer that passes the check on every trial, or None (the task can tell right from wrong).

    Canaries: zeros, the reference output's mean as a constant (over all trials), a copy of an input of the output's
    shape and dtype, and a sum/mean/amax/amin of an input along one dim (`reductions`: per trial, per output, the
    candidates `harness.input_reductions` found; the caller passes None for a task that is itself a reduction).
    (An uninitialised `empty` is not a canary: its contents are arbitrary; zeros covers its usual value.) A task
    where one passes rewards the trivial answer; its verdicts become infra_error, guard `degenerate`.
    """
    if not outputs or not outputs[0]:
        return None
    means = [float(torch.stack([t[i].double().mean() for t in outputs]).mean()) for i in range(len(outputs[0]))]
    # Each canary is made when it is compared and dropped after: on a 6 GB output, one at a time fits the device.
    canaries = {
        "zeros": lambda j, i, r: torch.zeros_like(r),
        "mean": lambda j, i, r: torch.full_like(r, means[i]),
        "input": lambda j, i, r: identity[j][i] if j < len(identity) and i < len(identity[j]) else None,
    }
    for name, make in canaries.items():
        if name == "input" and len(identity) != len(outputs):
            continue
        ok = all(
            r.is_floating_point() and (c := make(j, i, r)) is not None
            and compare([r], [c], atol, rtol, diagnose=False).ok
            for j, outs in enumerate(outputs) for i, r in enumerate(outs)
        )  # fmt: skip
        if ok:
            return name
    if reductions is not None and len(reductions) == len(outputs) and all(
        any(all(k < len(red[i]) and r[i].is_floating_point() and red[i][k].shape == r[i].shape
                and compare([r[i]], [red[i][k]], atol, rtol, diagnose=False).ok
                for r, red in zip(outputs, reductions)) for k in range(len(reductions[0][i])))
        for i in range(len(outputs[0]))
    ):  # fmt: skip
        return "reduction"
    return None
