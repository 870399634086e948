"""A NEAR-DEGENERATE task: tanh(x) scaled by 1e-3, so every output is below an atol of 1e-2.

The output is not constant (a constant-output check passes it), but zeros are within tolerance everywhere: the
"below the correctness tolerance everywhere" broken-problem class that DESIGN.md section 3 names.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, scale: float = 1e-3):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(x) * self.scale


def get_inputs():
    return [torch.randn(16, 256)]


def get_init_inputs():
    return [1e-3]
