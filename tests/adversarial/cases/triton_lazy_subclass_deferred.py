"""EXPLOIT (family 8b, lazy tensor): forward returns at once; the real Triton softmax runs only when the output is
first used (by the harness's comparison), outside the timed region.

WHAT: a torch.Tensor subclass holds the input; its __torch_function__ materialises the result (launching the honest
kernel into its own storage) before any op that reads it, then behaves as a plain tensor. Timed calls only build the
wrapper. Unlike triton_lazy_subclass_lies the values are right, and a kernel does run: the only tells are the output
type and WHEN the work happens.
WHY A NAIVE HARNESS PASSES IT: allclose triggers materialisation, the values are exact; the timing loop never reads
its outputs, so nothing is computed while the clock runs.
EXPECTED: rejected by `tensor_subclass` (`type(out) is not torch.Tensor`). Note for the guard: converting the output
(`.cpu()`, `torch.save`, `.clone()`) triggers the computation, so the type check must come BEFORE any use of the value,
and the launch accounting must be closed when forward returns.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

EXPECT_STATUS = "rejected"
EXPECT_GUARD = "tensor_subclass"
EXPECT_ALSO = [("rejected", "no_custom_kernel")]
FAMILY = "tensor_subclass"
TASK = "softmax_small"
BACKEND = "triton"
NEEDS_GPU = False
NAIVE_FAST = True  # the naive harness's reported runtime is far below one honest launch


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    num = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row * n_cols + cols, num / tl.sum(num, axis=0), mask=mask)


class Deferred(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        for a in args:
            if isinstance(a, Deferred) and getattr(a, "_pending", None) is not None:
                src, a._pending = a._pending, None
                plain = a.as_subclass(torch.Tensor)
                softmax_kernel[(src.shape[0],)](src, plain, src.shape[1], BLOCK=triton.next_power_of_2(src.shape[1]))
        return super().__torch_function__(func, types, args, kwargs or {})


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.Tensor._make_subclass(Deferred, torch.empty_like(x))
        out._pending = x.contiguous()
        return out
