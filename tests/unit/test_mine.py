"""Co-occurrence mining on small folders of our own, the JSON round trip, and the packaged default counts."""

from pathlib import Path

import pytest

from kernelzero.apis.mine import (
    CoOccurrence,
    count,
    load_cooccurrence,
    mine,
    python_files,
    resolve_source,
    save_cooccurrence,
)
from kernelzero.apis.vocab import VOCABULARY

BLOCKS = """
import torch.nn as nn
import torch.nn.functional as F

class A(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
    def forward(self, x):
        return F.gelu(self.fc(x)) + x

class B(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = A()              # not followed when mining: B's own forward only
        self.norm = nn.LayerNorm(4)
    def forward(self, x):
        return self.norm(self.a(x)).relu()

class NoForward(nn.Module):
    pass
"""


def test_count_is_pure_and_sorts_pairs():
    singles, pairs, n = count([("b", "a"), ("a", "c", "b"), ()])
    assert n == 3
    assert singles == {"a": 2, "b": 2, "c": 1}
    assert pairs == {("a", "b"): 2, ("a", "c"): 1, ("b", "c"): 1}


def test_mine_folder_exact_counts(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "blocks.py").write_text(BLOCKS)
    (tmp_path / "pkg" / "modular_blocks.py").write_text(BLOCKS)  # template of blocks.py: skipped
    (tmp_path / "pkg" / "py2.py").write_text("print 'hello'\n")  # does not parse: skipped and counted
    co = mine([str(tmp_path / "pkg")])
    assert (co.files, co.skipped_files, co.classes) == (2, 1, 2)
    assert {k: v for k, v in co.api_counts.items() if v} == {"nn.Linear": 1, "F.gelu": 1, "op.add": 1,
                                                             "nn.LayerNorm": 1, "F.relu": 1}  # fmt: skip
    assert set(co.api_counts) == set(VOCABULARY)
    assert co.pair_counts == {("F.gelu", "nn.Linear"): 1, ("F.gelu", "op.add"): 1, ("nn.Linear", "op.add"): 1,
                              ("F.relu", "nn.LayerNorm"): 1}  # fmt: skip
    assert co.pair("nn.Linear", "F.gelu") == 1 and co.pair("F.relu", "F.gelu") == 0


def test_json_round_trip(tmp_path):
    co = CoOccurrence({"op.add": 3, "op.mul": 2}, {("op.add", "op.mul"): 2}, classes=4, files=1, sources=["x"])
    path = save_cooccurrence(co, tmp_path / "co.json")
    assert load_cooccurrence(path) == co
    (tmp_path / "bad.json").write_text('{"format": "other"}')
    with pytest.raises(ValueError, match="not a co-occurrence file"):
        load_cooccurrence(tmp_path / "bad.json")
    with pytest.raises(FileNotFoundError, match="no such co-occurrence file"):
        load_cooccurrence(tmp_path / "missing.json")


def test_resolve_source_paths_and_packages(tmp_path):
    assert resolve_source(str(tmp_path)) == (tmp_path, str(tmp_path))
    folder, label = resolve_source("kernelzero.apis")
    assert folder == Path(__file__).parents[2] / "src" / "kernelzero" / "apis"
    assert label.startswith("kernelzero.apis (kernelzero ")
    with pytest.raises(ValueError, match="'no_such_pkg_xyz' is neither a path nor an installed package"):
        resolve_source("no_such_pkg_xyz")
    assert python_files([folder]) == sorted(folder.glob("*.py"))


def test_packaged_counts_load_and_cover_the_vocabulary():
    co = load_cooccurrence()
    assert set(co.api_counts) == set(VOCABULARY)  # a count, maybe 0, for every API
    seen = [a for a, n in co.api_counts.items() if n > 0]
    assert len(seen) >= 150  # mined from real code: almost every API shows up
    assert co.classes > 1000 and co.files > 100
    assert any(s.startswith("transformers.models") for s in co.sources)
    assert any(s.startswith("torch.nn") for s in co.sources)
    assert all(a in VOCABULARY and b in VOCABULARY and a < b for a, b in co.pair_counts)
    assert co.pair("nn.Linear", "op.add") > co.pair("nn.Linear", "F.triplet_margin_loss")
