import torch
import torch.nn.functional as F
from torch import nn


class Model(nn.Module):
    """Linear projection, GELU, then a log-sum-exp over the features of each row."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.linear(x)
        x = F.gelu(x)
        return torch.logsumexp(x, dim=1, keepdim=True)


batch_size = 128
in_features = 1024
out_features = 512


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
