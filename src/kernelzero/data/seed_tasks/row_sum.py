import torch
import torch.nn as nn

APIS = ["torch.exp", "torch.sum"]


class Model(nn.Module):
    """Sum of exponentials over the last dimension."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.sum(torch.exp(x), dim=-1)


def get_inputs():
    return [torch.randn(16, 256)]


def get_init_inputs():
    return []
