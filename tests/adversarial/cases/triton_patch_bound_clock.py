"""EXPLOIT (family 7d, editing the judge's SAVED clocks): an honest Triton ReLU; at import, every live object whose
attributes hold the real timer functions (time.perf_counter, torch.cuda.Event.elapsed_time) is found through
gc.get_objects() and those attributes are replaced with fakes that report ~0 for intervals containing a ModelNew
call, BOTH the event clock and the wall clock, consistently.

WHAT: a judge that "binds its clocks before importing the candidate, so later monkeypatching cannot reach them"
(kernelzero.judge.sandbox.worker._Bound, for one) keeps them as attributes of an ordinary object in the candidate's own
process; the candidate edits that object, not torch. Because the wall clock is forged too, an event-vs-wall
comparison (the `side_stream` guard) sees nothing odd.
WHY A NAIVE HARNESS PASSES IT: its values are exact (honest kernel). The naive harness binds no clocks, so here the
case only shows it does no harm to correctness; its target is a judge that times inside the candidate's process.
On CPU the judge does not time, so the case is NEEDS_GPU for its verdict.
EXPECTED: rejected by `timer`: the timing has to be cross-checked against a clock outside the candidate's process
(the parent's wall time of the timing stage vs the reported calls x median), or the saved functions re-verified
from outside; `roofline` (a call faster than a kernel launch) is the backstop.
"""

import gc
import time
import types

import torch
import torch.nn as nn
import triton
import triton.language as tl

EXPECT_STATUS = "rejected"  # guards branch: was "rejected", see EXPECT_ALSO
EXPECT_GUARD = "static:introspection"
EXPECT_ALSO = [("rejected", "timer"), ("rejected", "roofline"), ("rejected", "static:harness_import")]
FAMILY = "timer"
TASK = "relu_small"
BACKEND = "triton"
NEEDS_GPU = True

_real_perf = time.perf_counter
_state = {"offset": 0.0, "last": 0.0, "cpu": False, "gpu": False}


def _fake_perf() -> float:
    now = _real_perf() - _state["offset"]
    if _state["cpu"]:
        _state["cpu"] = False
        fake = _state["last"] + 1e-7
        _state["offset"] += now - fake
        now = fake
    _state["last"] = now
    return now


_fakes = {id(_real_perf): _fake_perf}
if torch.cuda.is_available():
    _real_elapsed = torch.cuda.Event.elapsed_time

    def _fake_elapsed(start, end):
        if _state["gpu"]:
            _state["gpu"] = False
            return 1e-4
        return _real_elapsed(start, end)

    _fakes[id(_real_elapsed)] = _fake_elapsed

for _obj in gc.get_objects():
    _attrs = getattr(_obj, "__dict__", None)
    if isinstance(_attrs, dict) and not isinstance(_obj, (type, types.ModuleType)):  # instances only
        for _k, _v in list(_attrs.items()):
            if id(_v) in _fakes:
                _attrs[_k] = _fakes[id(_v)]


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
        _state["cpu"] = _state["gpu"] = True
        return y
