"""LEGIT: two-pass row softmax in Triton that keeps its scratch buffer across calls (a workspace, keyed by shape,
dtype and device): the legitimate kind of caching, the honest twin of cases/triton_cache_transposed_operand.py.
Nothing derived from input VALUES survives a call: the workspace is overwritten by pass 1 every call, and both
kernels launch on every call. A false-positive probe for the replays that refill inputs without moving `_version`,
the count of timed calls that launch nothing (judged on CPU with the timing stage, TIMED_ON_CPU) and the harness
seal.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

EXPECT_STATUS = "ok"
EXPECT_GUARD = None
TASK = "softmax_small"
BACKEND = "triton"
NEEDS_GPU = False
TIMED_ON_CPU = True


@triton.jit
def _exp_kernel(x_ptr, e_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    tl.store(e_ptr + row * n_cols + cols, tl.exp(x - tl.max(x, axis=0)), mask=mask)


@triton.jit
def _normalise_kernel(e_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    e = tl.load(e_ptr + row * n_cols + cols, mask=mask, other=0.0)
    tl.store(y_ptr + row * n_cols + cols, e / tl.sum(e, axis=0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._workspace = {}  # (shape, dtype, device) -> scratch for exp(x - max): contents never outlive a call

    def _scratch(self, x: torch.Tensor) -> torch.Tensor:
        key = (tuple(x.shape), x.dtype, x.device)
        if key not in self._workspace:
            self._workspace[key] = torch.empty_like(x)
        return self._workspace[key]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        rows, cols = x.shape
        block = triton.next_power_of_2(cols)
        scratch = self._scratch(x)
        _exp_kernel[(rows,)](x, scratch, cols, BLOCK=block)
        y = torch.empty_like(x)
        _normalise_kernel[(rows,)](scratch, y, cols, BLOCK=block)
        return y
