"""A NEAR-DEGENERATE task, on purpose: the row max of x * sigmoid(100 x) is the row max of x (the gate is 1 there).

Every row of 256 normal draws has a maximum far above 0.1, where sigmoid(100 x) rounds to 1 in fp32, so a kernel
that only reduces the input (a row max) is "correct" without computing the gate.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.amax(x * torch.sigmoid(100.0 * x), dim=1)


def get_inputs():
    return [torch.randn(16, 256)]


def get_init_inputs():
    return []
