import torch
from torch import nn


class Model(nn.Module):
    """Scaled residual add followed by ReLU: relu(x + alpha * y)."""

    def __init__(self, alpha: float):
        super().__init__()
        self.alpha = alpha

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.relu(x + self.alpha * y)


batch_size = 16
dim = 16384


def get_inputs():
    return [torch.randn(batch_size, dim), torch.randn(batch_size, dim)]


def get_init_inputs():
    return [0.5]
