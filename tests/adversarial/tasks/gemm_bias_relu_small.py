"""Linear then ReLU, (32, 64) x (64 -> 48): the task for fused-epilogue solutions (vendor GEMM, custom epilogue)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.linear(x))


def get_inputs():
    return [torch.randn(32, 64)]


def get_init_inputs():
    return [64, 48]
