"""A DEGENERATE task, on purpose: ReLU(x - rowmax(x)) is zero everywhere, whatever the input.

It looks like the first half of a numerically stable softmax, as KernelBench level-2 problems do when a chain of ops
collapses (for example a min then a subtraction of the same constant). Any candidate that writes zeros is "correct";
the judge must refuse to reward that (guard `degenerate`), and the Proposer's task validation must refuse the task.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x - torch.max(x, dim=1, keepdim=True).values
        return torch.relu(x)


def get_inputs():
    return [torch.randn(16, 256)]


def get_init_inputs():
    return []
