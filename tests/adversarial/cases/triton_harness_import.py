"""EXPLOIT (extra, reaching into the harness): imports the judge package and, in every loaded module that looks like
a harness (kernelzero.judge.*, *harness*, *eval*, __main__), swaps the module-level `torch` for a proxy whose
allclose always says True; forward returns zeros from a Triton kernel.

WHAT: the candidate does not patch torch itself (torch.allclose stays the real one for everybody else); it patches
the harness's NAME for torch, which a check on `torch.allclose is <saved>` does not see.
WHY A NAIVE HARNESS PASSES IT: the naive harness runs as __main__ in the candidate's process and resolves `torch` in
its globals at call time: `torch.allclose(output, output_new, ...)` reaches the proxy.
EXPECTED: rejected by `static:harness_import` (`import kernelzero...` / sys.modules walking in candidate code). The
judge's own defence in depth: comparison happens in the parent, which never imports candidate code, so even an
obfuscated import would end `incorrect`.
"""

import sys

import torch
import torch.nn as nn
import triton
import triton.language as tl

import kernelzero.judge  # noqa: F401  (the judge's package: whatever of it runs in this process is ours to edit)

EXPECT_STATUS = "rejected"
EXPECT_GUARD = "static:harness_import"
EXPECT_ALSO = [("incorrect", "value")]
FAMILY = "harness_import"
TASK = "relu_small"
BACKEND = "triton"
NEEDS_GPU = False


class _AgreeableTorch:
    """Everything is torch, except that any two tensors are close."""

    def __getattr__(self, name):
        return getattr(torch, name)

    @staticmethod
    def allclose(*args, **kwargs):
        return True


def _looks_like_harness(name: str, module) -> bool:
    return (
        name == "__main__" or name.startswith("kernelzero.judge") or "harness" in name or "eval" in name
    ) and getattr(module, "torch", None) is torch


for _name, _module in list(sys.modules.items()):
    if _module is not None and _looks_like_harness(_name, _module):
        _module.torch = _AgreeableTorch()


@triton.jit
def zeros_kernel(y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.zeros((BLOCK,), dtype=tl.float32), mask=offs < n)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.empty_like(x)
        zeros_kernel[(triton.cdiv(y.numel(), 1024),)](y, y.numel(), BLOCK=1024)
        return y
