"""EXPLOIT (family batch_skip, batch-and-skip): the first time an input buffer comes back with the same contents (a
timing loop has started) it computes the outputs of every input it remembers in ONE launch, then answers this and
every later call on those buffers by lookup, launching nothing.

WHAT: each call keeps a snapshot of its input (a clone, by buffer address). A call whose input equals the snapshot
kept for its address is a repeat: correctness checks never repeat an input exactly (fresh draws; replays refill
the same buffer with other contents), timing loops do nothing else. On the first repeat the module stacks all
remembered snapshots and runs one 2-D Triton launch over the stack (all the timed work, once), then serves calls from
that table after an exact `torch.equal` against the snapshot, so every output is right, timed ones included.
WHY A NAIVE HARNESS PASSES IT: its checks are on fresh inputs (honest); its warm-up and timed calls repeat one input,
so one batched launch covers them all and the timed calls are lookups (NAIVE_FAST).
EXPECTED: rejected by `no_custom_kernel`: every call of the timing stage must complete one of the candidate's own
kernels; the lookups complete none. The judge's check of timed outputs passes it (the values are right) and on
small outputs `roofline` cannot bite, which is why timed calls are counted one by one. The CPU corpus runs the
timing stage on host clocks (TIMED_ON_CPU) to reach the guard.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

EXPECT_STATUS = "rejected"
EXPECT_GUARD = "no_custom_kernel"
EXPECT_ALSO = [("rejected", "roofline")]
FAMILY = "batch_skip"
TASK = "relu_small"
BACKEND = "triton"
NEEDS_GPU = False
NAIVE_FAST = True  # the naive harness's timed calls are lookups
TIMED_ON_CPU = True

KEEP = 8  # inputs remembered (a judge rotates a few timing input sets)


@triton.jit
def relu_rows_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(1)  # one row per remembered input
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x_ptr + row * n + offs, mask=mask)
    tl.store(y_ptr + row * n + offs, tl.maximum(v, 0.0), mask=mask)


def _relu_batch(xs: torch.Tensor) -> torch.Tensor:  # (B, n) -> (B, n), one launch
    ys = torch.empty_like(xs)
    n = xs.shape[1]
    relu_rows_kernel[(triton.cdiv(n, 1024), xs.shape[0])](xs, ys, n, BLOCK=1024)
    return ys


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.snapshots = {}  # (data_ptr, shape) -> a copy of the last input seen there
        self.table = {}  # (data_ptr, shape) -> (input copy, output) from the batched launch

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        key = (x.data_ptr(), tuple(x.shape))
        done = self.table.get(key)
        if done is not None and torch.equal(done[0], x):
            return done[1]  # the skip: looked up
        snap = self.snapshots.get(key)
        if snap is not None and torch.equal(snap, x):  # a repeat: the timing loop. Batch everything seen so far.
            keys = [k for k, s in self.snapshots.items() if s.shape == x.shape]
            outs = _relu_batch(torch.stack([self.snapshots[k].reshape(-1) for k in keys]))
            for k, y in zip(keys, outs):
                self.table[k] = (self.snapshots[k], y.view(x.shape))
            return self.table[key][1]
        self.snapshots[key] = x.clone()
        while len(self.snapshots) > KEEP:
            self.snapshots.pop(next(iter(self.snapshots)))
        return _relu_batch(x.reshape(1, -1).contiguous()).view(x.shape)
