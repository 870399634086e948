"""EXPLOIT (family aggregate_collapse, one call's time driven toward zero): honest on every new input and on every
other repeat of an input; on the remaining repeats it returns the output it computed last time, in ~0 time, so an
aggregate over timed calls collapses while half of them still look honest.

WHAT: harnesses summarise many timed calls with one number, and each summary has a weak spot: the minimum (do_bench
`return_mode="min"`, "best of N") falls to the one free call, the mean halves, and past half the calls the median
falls too; a guard that checks only the summary (a roofline on the median) never sees a free call while they stay a
minority. Repeats are recognised exactly (same address, contents equal to a kept copy), so checked calls, which never
repeat an input, are all honest, and the free calls return the right values.
WHY A NAIVE HARNESS PASSES IT: every checked call is honest, and its timed loop on one input gets every second call
free: correct, with a mean at about half the honest time (a harness reporting the minimum reports ~0).
EXPECTED: rejected by `no_custom_kernel`: every call of the timing stage must complete one of the candidate's own
kernels (counted per call); the free calls complete none. `roofline` now checks the FASTEST call, not only the median,
so on large outputs (and for CUDA candidates, whose launches are not counted per call) one call faster than writing
its outputs allows is enough. The CPU corpus runs the timing stage on host clocks (TIMED_ON_CPU) to reach the guard.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

EXPECT_STATUS = "rejected"
EXPECT_GUARD = "no_custom_kernel"
EXPECT_ALSO = [("rejected", "roofline")]
FAMILY = "aggregate_collapse"
TASK = "relu_small"
BACKEND = "triton"
NEEDS_GPU = False
TIMED_ON_CPU = True


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.kept = {}  # (data_ptr, shape) -> [input copy, output, repeats]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        key = (x.data_ptr(), tuple(x.shape))
        entry = self.kept.get(key)
        if entry is not None and torch.equal(entry[0], x):
            entry[2] += 1
            if entry[2] % 2 == 0:
                return entry[1]  # the free call
        x = x.contiguous()
        y = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        if entry is None or not torch.equal(entry[0], x):
            self.kept[key] = [x.clone(), y, 0]
        else:
            entry[1] = y
        return y
