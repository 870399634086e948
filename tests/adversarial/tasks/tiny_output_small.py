"""A NEAR-DEGENERATE task: tanh(x) scaled by 1e-5, so every output is below an fp32 atol of 1e-4 (and of 1e-2).

The output is not constant (a constant-output check passes the task) but zeros are within tolerance everywhere: the
"below the correctness tolerance everywhere" broken-problem class that task validation screens for. The scale sits
under the judge's fp32 atol on purpose: at 1e-3 a 1e-4 tolerance already refuses zeros and no guard is needed.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, scale: float = 1e-5):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(x) * self.scale


def get_inputs():
    return [torch.randn(16, 256)]


def get_init_inputs():
    return [1e-5]
