import torch
import torch.nn as nn

APIS = ["torch.add", "torch.mul"]


class Model(nn.Module):
    """(x + y) * scale, elementwise."""

    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x, y):
        return torch.mul(torch.add(x, y), self.scale)


def get_inputs():
    return [torch.randn(32, 32), torch.randn(32, 32)]


def get_init_inputs():
    return [0.5]
