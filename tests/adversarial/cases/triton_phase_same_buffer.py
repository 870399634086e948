"""EXPLOIT (family phase_detection, warm-up / phase detection by input identity): honest on every input it has not
seen; once the SAME buffer comes back unchanged (same data_ptr, same `_version`) it knows it is in a timing loop and
returns the output it computed for that buffer, launching nothing.

WHAT: correctness harnesses draw fresh inputs per trial; timing loops reuse a few input buffers and never write to
them. `(data_ptr, _version, shape)` plus a sparse probe of the contents (a fresh input can land on a recycled
address) tells the two apart as far as torch can see: a write through torch (`copy_`, in-place ops) bumps
`_version`, so a buffer refilled that way is a miss and is computed honestly, and every output it returns is RIGHT,
including the outputs of timed calls a judge keeps and checks. Only the work is missing.
WHY A NAIVE HARNESS PASSES IT: its five checks are on fresh inputs (all misses, honest); its warm-up and timed calls
reuse one input (all hits after the first): correct, and "fast" (NAIVE_FAST).
EXPECTED: rejected by `replay`: the replay trials refill the last trial's buffer through `.data` (same address, same
`_version`, as a kernel writing by pointer) with contents that differ in two elements, which the sparse probe almost
always misses; the stale output fails the comparison. A variant that compares every element against a kept copy
passes the replays and meets `no_custom_kernel` in the timing stage (each timed call must complete one of its own
kernels: `triton_batch_and_skip`, `triton_alternate_free_calls`); on a GPU, `roofline` (checked on the fastest
call) is the backstop for large outputs and for CUDA candidates.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

EXPECT_STATUS = "rejected"
EXPECT_GUARD = "replay"
EXPECT_ALSO = [("rejected", "no_custom_kernel"), ("rejected", "roofline")]
FAMILY = "phase_detection"
TASK = "relu_small"
BACKEND = "triton"
NEEDS_GPU = False
NAIVE_FAST = True  # the naive harness's timed calls launch nothing


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.seen = {}  # (data_ptr, _version, shape, probe) -> output: the warm-up filled it, the timed calls read it

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # the probe tells a recycled address (a fresh input in the same memory, _version 0 again) from the same input
        key = (x.data_ptr(), x._version, tuple(x.shape), float(x.reshape(-1)[::61].sum()))
        hit = self.seen.get(key)
        if hit is not None:
            return hit
        x = x.contiguous()
        y = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        self.seen[key] = y
        while len(self.seen) > 16:
            self.seen.pop(next(iter(self.seen)))
        return y
