"""The AST extractor: exact API lists for fixture tasks, alias resolution, the operator rule, the usage check."""

from pathlib import Path

import pytest

from kernelzero.apis import extract_apis, extract_classes, missing_apis, vocab_apis
from kernelzero.apis.names import canonical

FIX = Path(__file__).parents[1] / "fixtures" / "tasks"


def src(name: str) -> str:
    return (FIX / f"{name}.py").read_text()


def test_conv_block_exact():
    # forward's evaluation order; Sequential contents; helper method and module-level helper followed; clamp_ is
    # the same op as clamp; `n = b * c * self.half` and `* math.sqrt(SCALE)` on scalars are not tensor ops.
    assert extract_apis(src("conv_block")) == (
        "nn.Conv2d", "nn.BatchNorm2d", "nn.ReLU", "op.div", "op.mul", "op.add", "op.sub", "F.gelu",
        "Tensor.clamp", "torch.amax", "Tensor.view",
    )  # fmt: skip


def test_attention_exact():
    # `from torch import nn`, `from torch.nn import functional as F`, `import torch as th`; `C // self.heads` is
    # scalar arithmetic; `q @ k` is op.matmul and `th.matmul` is torch.matmul; `.T` and unary minus count.
    assert extract_apis(src("attention")) == (
        "nn.Linear", "Tensor.split", "Tensor.view", "Tensor.transpose", "op.matmul", "op.mul", "op.eq",
        "Tensor.masked_fill", "F.softmax", "torch.matmul", "Tensor.T", "op.neg",
    )  # fmt: skip


def test_nested_classes_followed_for_tasks_not_for_mining():
    # Block is built in a ModuleList and called in a loop: its APIs come after forward's own.
    assert extract_apis(src("nested")) == (
        "nn.Linear", "torch.sigmoid", "Tensor.squeeze", "nn.LayerNorm", "F.silu", "op.add",
    )  # fmt: skip
    assert extract_apis(src("nested"), follow_classes=False) == ("nn.Linear", "torch.sigmoid", "Tensor.squeeze")
    assert extract_classes(src("nested")) == {
        "Block": ("nn.LayerNorm", "F.silu", "op.add"),
        "Model": ("nn.Linear", "torch.sigmoid", "Tensor.squeeze"),
    }


def test_vocab_mapping_of_fixture():
    assert vocab_apis(extract_apis(src("conv_block"))) == (
        "nn.Conv2d", "nn.BatchNorm2d", "F.relu", "op.div", "op.mul", "op.add", "op.sub", "F.gelu",
        "torch.clamp", "torch.amax", "Tensor.view",
    )  # fmt: skip


MODEL = """
import torch
import torch.nn as nn
class Model(nn.Module):
    def __init__(self, k):
        super().__init__()
        self.k = k
        self.w = nn.Parameter(torch.randn(k))
        nn.init.zeros_(self.w)
    def forward(self, x, y, dim: int = 1):
{body}
"""


@pytest.mark.parametrize(
    "body, expected",
    [
        ("return x + y", ("op.add",)),
        ("return x * self.k", ("op.mul",)),  # tensor times a scalar attribute: counts
        ("return x.sum(self.k * 2 + dim)", ("Tensor.sum",)),  # scalar arithmetic inside: does not
        ("n = x.size(0) // 2\n        return x[:n]", ()),  # shape arithmetic and slicing: nothing
        ("return x.float().to(y.device).contiguous()", ("Tensor.contiguous",)),  # casts and moves are not ops
        ("x += self.w\n        return x", ("op.add",)),
        ("return x if self.k > 0 else y", ()),
        ("return torch.where(x > 0, x, y)", ("op.gt", "torch.where")),
        ("return torch.nn.functional.relu_(x)", ("F.relu",)),
        ("return torch.linalg.vector_norm(x) ** 2", ("torch.linalg.vector_norm", "op.pow")),
        ("with torch.no_grad():\n            return torch.zeros_like(x)", ("torch.zeros_like",)),
    ],
)
def test_forward_rules(body, expected):
    # __init__'s torch.randn and nn.init are setup, never listed.
    source = MODEL.format(body="        " + body)
    assert extract_apis(source) == expected


def test_canonical_names():
    assert canonical("torch.nn.functional.gelu") == "F.gelu"
    assert canonical("torch.nn.modules.conv.Conv2d") == "nn.Conv2d"
    assert canonical("torch.nn.Sequential") is None
    assert canonical("torch.nn.init.kaiming_uniform_") is None
    assert canonical("torch.add_") == "torch.add"
    assert canonical("torch.finfo") is None
    assert canonical("torch._C._nn.gelu") is None
    assert canonical("numpy.sum") is None


def test_missing_class_and_syntax_error():
    with pytest.raises(ValueError, match="no class 'Model'"):
        extract_apis("import torch\nclass Other: pass\n")
    with pytest.raises(SyntaxError):
        extract_apis("class Model(:\n")


def test_missing_apis_accepts_any_spelling():
    source = MODEL.format(body="        return torch.relu(x).sum() @ y")
    assert missing_apis(source, ["nn.ReLU", "torch.sum", "torch.matmul", "F.gelu", "torch.zeros"]) == (
        "F.gelu", "torch.zeros",
    )  # fmt: skip
