import torch
import torch.nn as nn

APIS = ["torch.add", "torch.relu"]


class Model(nn.Module):
    """ReLU of a shifted matrix."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(torch.add(x, 0.1))


def get_inputs():
    return [torch.randn(16, 64)]


def get_init_inputs():
    return []
