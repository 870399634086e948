"""Row softmax over a (32, 128) matrix: a task with a reduction."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=1)


def get_inputs():
    return [torch.randn(32, 128)]


def get_init_inputs():
    return []
