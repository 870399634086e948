"""The curated vocabulary: its size and categories, spellings mapping to entries, and errors for unknown names."""

import pytest

from kernelzero.apis.vocab import ALIASES, CATEGORIES, VOCABULARY, category, check_names, to_vocab, vocab_apis


def test_size_and_categories():
    assert 100 <= len(VOCABULARY) <= 200
    assert set(VOCABULARY.values()) == set(CATEGORIES)  # every category holds at least one API
    assert all(ALIASES[name] == name for name in VOCABULARY)


@pytest.mark.parametrize(
    "spelling, entry",
    [("nn.ReLU", "F.relu"), ("Tensor.relu", "F.relu"), ("op.matmul", "torch.matmul"), ("F.conv2d", "nn.Conv2d"),
     ("Tensor.reshape", "Tensor.view"), ("torch.add", "op.add"), ("Tensor.sum", "torch.sum"), ("nn.Dropout", None),
     ("torch.zeros", None)],
)  # fmt: skip
def test_spellings(spelling, entry):
    assert to_vocab(spelling) == entry


def test_vocab_apis_keeps_first_seen_order_once():
    assert vocab_apis(["Tensor.sum", "nn.Dropout", "op.add", "torch.sum", "torch.add"]) == ("torch.sum", "op.add")


def test_unknown_names_are_one_line_errors():
    assert category("nn.GELU") == "activation"
    assert check_names(["nn.GELU", "op.add"]) == ("F.gelu", "op.add")
    with pytest.raises(ValueError, match=r"unknown excluded API 'F.nope': not in the vocabulary"):
        check_names(["op.add", "F.nope"], what="excluded API")
    with pytest.raises(ValueError, match="unknown API 'x'"):
        category("x")
