"""The lean host build's guard (judge/lean.py): which host code may be compiled against the lean headers."""

import json
import os
import sys
from pathlib import Path

import pytest

from kernelzero.judge.build import lean
from kernelzero.judge.build.farm import _fast_calls
from kernelzero.judge.guards import run_static

TABLE = {"blocked": frozenset({"nn", "save", "AT_SOME_MACRO"}), "scoped": {"Graph": [["jit"]], "Deep": [["jit", "ir"]]},
         "adl": {"cast": [["pybind11"]]}}  # fmt: skip


@pytest.mark.parametrize(
    "code, hit",
    [
        ("torch::Tensor f(torch::Tensor x) { return x * 2; }", None),
        ("auto m = torch::nn::Linear(3, 4);", "nn"),  # a namespace the lean headers lack
        ("torch::save(x, path);", "save"),  # a function they leave out, qualified
        ("#ifdef AT_SOME_MACRO\n#endif", "AT_SOME_MACRO"),  # a macro they define
        ("int Graph = 3; return Graph;", None),  # a jit name, but not torch::jit's: no `jit` named
        ("torch::jit::Graph g;", "Graph"),
        ("namespace tj = torch::jit; tj::ir::Deep d;", "Deep"),  # any component of its namespace counts
        ("auto y = std::cast(x);", None),  # an ADL-reachable function, called qualified elsewhere
        ("auto y = cast(x);", "cast"),  # called unqualified: ADL could find the left-out overload
        ("auto y = obj.cast(x); auto z = p->cast(x);", None),  # members
        ("auto y = pybind11::cast(x);", "cast"),
    ],
)
def test_blocked_by(code, hit):
    assert lean.blocked_by(code, TABLE) == hit


def test_installed_table_needs_the_audited_headers_byte_for_byte(tmp_path, monkeypatch):
    import torch

    include = tmp_path / "include"
    (include / "torch").mkdir(parents=True)
    (include / "torch" / "a.h").write_text("int a;\n")
    version = torch.__version__.split("+")[0]
    table = {"torch": version, "fingerprint": lean.fingerprint(include), "blocked": ["nn"], "scoped": {}, "adl": {},
             "includes": ["vector", "torch/types.h", "torch/cuda.h", "Python.h"]}  # fmt: skip
    (tmp_path / "tables").mkdir()
    path = tmp_path / "tables" / lean.table_name(version)
    path.write_text(json.dumps(table))
    monkeypatch.setattr(lean, "TABLES", tmp_path / "tables")
    monkeypatch.setattr(torch, "__file__", str(tmp_path / "__init__.py"))  # its include dir: tmp_path/include
    lean.installed_table.cache_clear()
    lean.load_table.cache_clear()
    try:
        assert lean.installed_table()["blocked"] == frozenset({"nn"})
        # audited for another lean set (torch/autograd.h kept too): stale until audited again
        path.write_text(json.dumps({**table, "includes": [*table["includes"], "torch/autograd.h"]}))
        lean.installed_table.cache_clear()
        lean.load_table.cache_clear()
        assert lean.installed_table() is None
        path.write_text(json.dumps(table))
        (include / "torch" / "a.h").write_text("int a; int b;\n")  # one header changed: the audit no longer holds
        lean.installed_table.cache_clear()
        lean.load_table.cache_clear()
        assert lean.installed_table() is None
    finally:
        lean.installed_table.cache_clear()
        lean.load_table.cache_clear()
    assert lean.header_text(table) == ("#pragma once\n#include <vector>\n#include <torch/types.h>\n"
                                       "#include <torch/cuda.h>\n#include <Python.h>\n")  # fmt: skip


def test_the_fingerprint_is_kept_while_the_headers_stat_the_same_and_computed_again_when_one_changes(tmp_path):
    include, memo = tmp_path / "include", tmp_path / "cache" / "torch-headers.json"
    (include / "torch").mkdir(parents=True)
    memo.parent.mkdir()
    header = include / "torch" / "a.h"
    header.write_text("int a;\n")
    digest = lean.fingerprint(include)
    assert lean.fingerprint(include, memo) == digest  # computed, then kept
    kept = json.loads(memo.read_text())
    assert kept["fingerprint"] == digest
    memo.write_text(json.dumps({**kept, "fingerprint": "read-back"}))  # the memo is what a second judge reads
    assert lean.fingerprint(include, memo) == "read-back"
    header.write_text("int b;\n")  # same size, a new modification time: the signature no longer holds
    os.utime(header, ns=(1, 10**18))
    assert lean.fingerprint(include, memo) == lean.fingerprint(include) != digest
    memo.write_text("{not json")
    assert lean.fingerprint(include, memo) == lean.fingerprint(include)  # an unreadable memo is computed again


def _load_inline_args(source: str) -> list[dict]:
    """The load_inline calls a candidate makes, their arguments evaluated from its own string constants."""
    import ast

    tree = ast.parse(source)
    consts = {t.id: ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)
              for t in n.targets if isinstance(t, ast.Name) and isinstance(n.value, ast.Constant)}  # fmt: skip
    calls = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "load_inline":
            kw = {}
            for k in node.keywords:
                v = k.value
                kw[k.arg] = consts.get(v.id) if isinstance(v, ast.Name) else ast.literal_eval(v)
            calls.append(kw)
    return calls


class _AnyFlags(dict):
    def get(self, key, default=None):
        return "/lean"


@pytest.mark.parametrize("table_path", sorted(lean.TABLES.glob("*.json")), ids=lambda p: p.stem)
def test_every_repository_cuda_candidate_builds_lean_with_each_shipped_table(table_path):
    """No shipped table refuses the repository's CUDA candidates (seed solutions, the coder's example, the corpus,
    the GPU fixtures, the throughput bench's): the guard is not so broad that the lean build never runs. (torch
    2.11's first table did: it blocked `cuda`, for torch::jit::cuda, a namespace reachable only as jit::cuda.)
    Sources the judge's static rules reject are left out: they never reach a build."""
    assert {"blocked", "scoped", "adl", "fingerprint", "includes"} <= json.loads(table_path.read_text()).keys()
    root = Path(__file__).parents[2]
    sys.path.insert(0, str(root / "bench"))
    from throughput_cases import cases

    patterns = ("src/kernelzero/data/seed_solutions/cuda/*.py", "src/kernelzero/data/coder_example_cuda.py",
                "tests/adversarial/*/cuda_*.py", "tests/fixtures/gpu/*cuda*.py")
    sources = {p.name: p.read_text() for pattern in patterns for p in root.glob(pattern)}
    sources = {name: src for name, src in sources.items() if run_static(src, "cuda") is None}
    sources.update({name: src for name, _, src, backend in cases(5, 0) if backend == "cuda"})
    job = {"pch_dirs": {}, "light_pch_dirs": {}, "bridge": "/b/lib.so",
           "lean_table": str(table_path)}  # fmt: skip
    modes, lean_built = {}, 0
    for name, src in sorted(sources.items()):
        for call in _load_inline_args(src):
            a = {"cpp_sources": None, "cuda_sources": None, "functions": None, "extra_cflags": None,
                 "extra_cuda_cflags": None, "extra_ldflags": None, "extra_include_paths": None, "sycl_sources": None,
                 "no_implicit_headers": False, "use_pch": False, "with_pytorch_error_handling": True}  # fmt: skip
            a.update(call)
            job["light_pch_dirs"] = _AnyFlags(lean="/lean")  # a lean header for whatever flags the call has
            modes[name] = [how for _, how in _fast_calls(a, job)][:1]
            lean_built += modes[name] in (["split+lean"], ["lean"])
    assert len(modes) >= 20 and lean_built == len(modes), {k: v for k, v in modes.items() if v[:1] != ["split+lean"]}


def test_every_shipped_table_was_audited_for_the_lean_set_the_judge_builds():
    """A change of `KEPT` without the tables written again (bench/lean_audit.py) would turn the lean build off, with
    no error, on every machine: each shipped table keeps exactly KEPT of torch/all.h's headers and leaves the rest."""
    tables = sorted(lean.TABLES.glob("torch-*.json"))
    assert len(tables) >= 2  # the GPU machine's torch and this one's
    for path in tables:
        table = json.loads(path.read_text())
        assert sorted(h for h in table["includes"] if h.startswith("torch/")) == sorted(lean.KEPT), path.name
        assert not set(table["left_out"]) & set(lean.KEPT) and "torch/nn.h" in table["left_out"], path.name
        assert path.name == lean.table_name(table["torch"]) and table["includes"][-1] == "Python.h"
