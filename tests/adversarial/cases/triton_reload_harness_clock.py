"""EXPLOIT (family harness_patch, `importlib.reload` of the harness): patches the clock, then reloads every module of
the process that looks like the evaluator's own code, so names it bound at import (`from time import
perf_counter`, a clock kept in a module global) are bound again, to the patched clock.

WHAT: a careful harness binds its clock before candidate code runs, so patching `time.perf_counter` alone does not
reach it. Reloading the harness module re-executes it: its top-level imports and globals are rebound from the
patched `time` module, and any function the driver looks up through the module afterwards is the new one. The
patched clock runs at 1/50 speed. Modules from site-packages and the standard library are left alone, so torch and
triton keep working; `__main__` cannot be reloaded and is skipped. The kernel is honest.
WHY A NAIVE HARNESS PASSES IT: it reads `time.perf_counter()` at each call, so the patch alone already scales its
timings (the reload is for harnesses that bound the clock early); its check runs the honest kernel (NAIVE_FAST).
EXPECTED: rejected by `static:monkeypatch` (`time.perf_counter = ...`; `importlib` and `sys.modules` are
`static:introspection`). Behind it, guard `harness_patch`: the worker seals every harness function before the
candidate's import and finds the reloaded modules' functions replaced; its clocks live in a `Bound` built before the
import, which a reload does not rebuild.
"""

import importlib
import sys
import time

import torch
import torch.nn as nn
import triton
import triton.language as tl

EXPECT_STATUS = "rejected"
EXPECT_GUARD = "static:monkeypatch"
EXPECT_ALSO = [("rejected", "static:introspection"), ("rejected", "harness_patch")]
FAMILY = "harness_patch"
TASK = "relu_small"
BACKEND = "triton"
NEEDS_GPU = False
NAIVE_FAST = True  # the naive harness read the slowed clock

_real_clock = time.perf_counter
_t0 = _real_clock()


def _slow_clock() -> float:
    return _t0 + (_real_clock() - _t0) / 50


time.perf_counter = _slow_clock


def _is_evaluator(name: str, mod) -> bool:
    path = getattr(mod, "__file__", None) or ""
    return (
        name != "__main__" and name != __name__ and path.endswith(".py") and "site-packages" not in path
        and "/lib/python3" not in path and any(w in name for w in ("judge", "eval", "bench", "harness"))
    )  # fmt: skip


for _name, _mod in list(sys.modules.items()):
    if _is_evaluator(_name, _mod):
        importlib.reload(_mod)


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y
