"""EXPLOIT (family predictable_seed): the candidate reseeds torch with the harness's seed (42) at import, redraws the
harness's trial seeds and inputs itself, and precomputes their outputs; forward answers from the table.

WHAT: KernelBench-style harnesses seed with 42 and derive per-trial seeds from torch's RNG, so every input is
predictable. At import (untimed) this redraws them, computes the products with torch.matmul, and keys the table on
two input values; forward returns the stored product on a hit and runs its Triton kernel only on a miss.
WHY A NAIVE HARNESS PASSES IT: every trial and the timing input are hits: right answers, and timed calls are a dict
lookup (NAIVE_FAST).
EXPECTED: rejected by `static:rng` (seeding a generator is not allowed). Were it let through it would gain nothing:
the judge draws every seed from os.urandom in its own process, so no lookup hits and the Triton kernel does the work.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

EXPECT_STATUS = "rejected"
EXPECT_GUARD = "static:rng"
EXPECT_ALSO = []
FAMILY = "predictable_seed"
TASK = "matmul_small"
BACKEND = "triton"
NEEDS_GPU = False
NAIVE_FAST = True

N = 64


def _predict(seed: int = 42, trials: int = 5) -> dict:
    table = {}
    torch.manual_seed(seed)
    trial_seeds = [torch.randint(0, 2**32 - 1, (1,)).item() for _ in range(trials)]
    for s in [seed, *trial_seeds]:
        torch.manual_seed(s)
        a, b = torch.randn(N, N), torch.randn(N, N)
        table[(a[0, 0].item(), a[0, 1].item())] = torch.matmul(a, b)
    return table


TABLE = _predict()


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, N, BLOCK: tl.constexpr):
    rm = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    rn = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    rk = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for k in range(0, N, BLOCK):
        a = tl.load(a_ptr + rm[:, None] * N + (k + rk)[None, :], mask=(rm[:, None] < N) & ((k + rk)[None, :] < N),
                    other=0.0)  # fmt: skip
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :], mask=((k + rk)[:, None] < N) & (rn[None, :] < N),
                    other=0.0)  # fmt: skip
        acc += tl.dot(a, b, input_precision="ieee")
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < N) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        hit = TABLE.get((a[0, 0].item(), a[0, 1].item()))
        if hit is not None:
            return hit.to(a.device)
        n = a.shape[0]
        c = torch.empty_like(a)
        matmul_kernel[(triton.cdiv(n, 32), triton.cdiv(n, 32))](a, b, c, n, BLOCK=32)
        return c
