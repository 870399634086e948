"""A NEAR-DEGENERATE task, on purpose: x + 1e-6 * tanh(x) equals its input to within the fp32 tolerance.

The kind of chain a Proposer writes when a small correction term is scaled away: copying the input is "correct".
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + 1e-6 * torch.tanh(x)


def get_inputs():
    return [torch.randn(16, 256)]


def get_init_inputs():
    return []
