"""EXPLOIT (family 5, replay after N calls): honest for the first 8 calls, then returns the 8th output forever.

WHAT: a call counter; calls 1-8 launch an honest Triton ReLU; from call 9 on, forward returns the last output
without touching the input. 8 covers a typical harness's correctness trials (1-5) plus its warm-up (3).
WHY A NAIVE HARNESS PASSES IT: correctness is checked on the first calls only; every TIMED call is a free replay.
EXPECTED: rejected by `replay`: the judge checks outputs of calls made after (and between) the timed ones against
the reference on fresh inputs, or checks a call at a random index. A judge that re-checks only once after timing
would see `incorrect` instead. On CPU (no timing) the guard must itself make more forward calls than the
correctness trials (here: more than 8) before a checked one; the exploit can raise N, so on a GPU the outputs of
timed calls must be checked too.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

EXPECT_STATUS = "rejected"
EXPECT_GUARD = "replay"
EXPECT_ALSO = [("incorrect", "value"), ("rejected", "no_custom_kernel")]
FAMILY = "replay"
TASK = "relu_small"
BACKEND = "triton"
NEEDS_GPU = False
NAIVE_FAST = True  # the naive harness's reported runtime is far below one honest launch

HONEST_CALLS = 8


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0
        self.last = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        if self.calls > HONEST_CALLS and self.last is not None:
            return self.last
        x = x.contiguous()
        y = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        self.last = y
        return y
