"""EXPLOIT (family 11b, output dtype): computes ReLU in fp16 and RETURNS fp16 on an fp32 task (half the bytes written
and read: a near-2x "speedup" on a memory-bound op).

WHAT: the output's dtype differs from the reference's. Values are within 1e-2 after casting back.
WHY A NAIVE HARNESS PASSES IT: only a LENIENT one does: harnesses that compare `out.to(ref.dtype)` or use
assert_close(check_dtype=False) accept it. KernelBench itself does NOT: torch.allclose raises on mixed dtypes, which
it records as a failed check. Hence NAIVE = "lenient": test_naive_harness runs it with --cast-output.
EXPECTED: `incorrect`, guard `dtype` (the verdict's "an output differs ... in value, shape, dtype or type").
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

EXPECT_STATUS = "incorrect"
EXPECT_GUARD = "dtype"
EXPECT_ALSO = [("rejected", "dtype")]
FAMILY = "precision"
TASK = "relu_small"
BACKEND = "triton"
NEEDS_GPU = False
NAIVE = "lenient"


@triton.jit
def relu_fp16_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float16)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty(x.shape, device=x.device, dtype=torch.float16)
        relu_fp16_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y
