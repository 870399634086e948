"""EXPLOIT (family 3b, fallback without `try`): contextlib.suppress swallows the kernel's failure and an obfuscated
reference call answers.

WHAT: same broken kernel as triton_try_except_fallback (non-power-of-two tl.arange), but the fallback is written with
`contextlib.suppress(Exception)` and the reference op is fetched as getattr(torch, "soft" + "max"), so there is no
`try`/`except` token and no literal `torch.softmax` for a regex or name-based AST check to see.
WHY A NAIVE HARNESS PASSES IT: as any fallback: the reference op answers every call.
EXPECTED: rejected by `no_custom_kernel` at run time: no kernel launch completes in forward (a launch hook must count
completed launches, not attempts) and aten's _softmax is dispatched inside forward. A static check that treats
contextlib.suppress as a try/except, or flags getattr(torch, <computed string>), may fire first.
"""

import contextlib

import torch
import torch.nn as nn
import triton
import triton.language as tl

EXPECT_STATUS = "rejected"  # guards branch: was "rejected", see EXPECT_ALSO
EXPECT_GUARD = "static:introspection"
EXPECT_ALSO = [("rejected", "no_custom_kernel"), ("rejected", "static:try_except"), ("rejected", "static:reference_call")]
FAMILY = "fallback"
TASK = "softmax_small"
BACKEND = "triton"
NEEDS_GPU = False


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, PADDED: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, PADDED)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    num = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row * n_cols + cols, num / tl.sum(num, axis=0), mask=mask)


_fast_path = getattr(torch, "soft" + "max")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with contextlib.suppress(Exception):
            y = torch.empty_like(x)
            softmax_kernel[(x.shape[0],)](x, y, x.shape[1], PADDED=x.shape[1] + 2)
            return y
        return _fast_path(x, 1)
