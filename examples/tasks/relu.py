import torch
import torch.nn as nn


class Model(nn.Module):
    """ReLU of a small tensor."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(16, 64)]


def get_init_inputs():
    return []
