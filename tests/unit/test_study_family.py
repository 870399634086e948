"""The study's task family: deterministic generation, the grammar's guarantees, the pair split, the real validator."""

import ast
import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kernelzero.apis import extract_apis, vocab_apis
from kernelzero.curriculum.validate import ValidationConfig, Validator
from kernelzero.study import family
from kernelzero.study.family import (
    ALL_PAIRS,
    APIS,
    REDUCTIONS,
    TEST_PAIRS,
    TEST_SETS,
    TRAIN_PAIRS,
    TRAIN_SETS,
    FamilyConfig,
    api_pairs,
    make_task,
    test_tasks,
    train_tasks,
)
from kernelzero.tasks import parse_task

SRC = Path(__file__).parents[2] / "src"
SMALL = FamilyConfig(rows=(64, 128), cols=(64, 128))  # what the CPU sandbox validates quickly


def test_generation_is_deterministic_and_a_longer_list_extends_a_shorter():
    a, b = train_tasks(30), train_tasks(30)
    assert a == b and len({t.name for t in a}) == 30
    assert train_tasks(12) == a[:12]
    assert test_tasks(10) == test_tasks(64)[:10]
    assert {t.source for t in train_tasks(30, seed=1)} != {t.source for t in a}


def test_generation_and_split_are_the_same_in_another_process():
    """Another interpreter with another hash seed draws the same tasks and the same split (no set-order or hash()
    dependence): the study's tasks are the same on every machine."""

    def digest() -> str:
        h = hashlib.sha256()
        for t in train_tasks(40) + test_tasks(64):
            h.update(t.source.encode())
        h.update(repr(sorted(sorted(p) for p in TEST_PAIRS)).encode())
        return h.hexdigest()

    code = (
        "import hashlib\nfrom kernelzero.study.family import TEST_PAIRS, test_tasks, train_tasks\n"
        "h = hashlib.sha256()\nfor t in train_tasks(40) + test_tasks(64):\n    h.update(t.source.encode())\n"
        "h.update(repr(sorted(sorted(p) for p in TEST_PAIRS)).encode())\nprint(h.hexdigest())\n"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": str(SRC)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == digest()


def test_every_task_is_a_well_formed_composition_of_its_api_set():
    validator = Validator(ValidationConfig(device="cpu"))
    for t in train_tasks(150) + test_tasks(64):
        assert 2 <= len(t.apis) <= 3 and len(set(t.apis)) == len(t.apis) and set(t.apis) <= set(APIS)
        assert family.compatible(t.apis)
        assert not any(a in REDUCTIONS for a in t.apis[:-1])  # a reduction only ever ends the chain
        assert [op.api for op in t.ops] == list(t.apis)
        assert set(vocab_apis(extract_apis(t.source))) == set(t.apis)  # what the source uses is the recorded set
        parsed = parse_task(t.source, t.name)
        assert set(parsed.apis) == set(t.apis)
        assert validator.static(t.name, t.source, t.apis) is None  # parse, usage, (empty) pool: no static failure
        tree = ast.parse(t.source)
        model = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model")
        init, forward = (next(f for f in model.body if isinstance(f, ast.FunctionDef) and f.name == n)
                         for n in ("__init__", "forward"))  # fmt: skip
        assert [a.arg for a in init.args.args] == ["self", *(n for n, _ in t.init)]
        assert [a.arg for a in forward.args.args] == ["self", *t.inputs]
        assert f"torch.randn({t.rows}, {t.cols})" in t.source
        assert 64 <= t.rows <= 4096 and 64 <= t.cols <= 1024


def test_shapes_follow_the_config():
    for t in train_tasks(40, config=SMALL):
        assert t.rows in (64, 128) and t.cols in (64, 128)
    with pytest.raises(ValueError, match="FamilyConfig.cols"):
        FamilyConfig(cols=(64, 100))


def test_make_task_refuses_sets_outside_the_family():
    import random

    for apis in (["torch.sum", "F.softmax"], ["torch.clamp", "torch.amax"], ["F.relu", "torch.amax"],
                 ["F.relu", "nn.Linear"], ["F.relu"] * 2):  # fmt: skip
        with pytest.raises(ValueError, match="no task on"):
            make_task(apis, random.Random(0))


def test_split_is_a_partition_and_no_test_pair_reaches_a_training_task():
    assert len(ALL_PAIRS) == 97 and len(TEST_PAIRS) == family.N_TEST_PAIRS == 20
    assert not TEST_PAIRS & TRAIN_PAIRS and TEST_PAIRS | TRAIN_PAIRS == set(ALL_PAIRS)
    for s in TRAIN_SETS:
        assert not api_pairs(s) & TEST_PAIRS
    for s in TEST_SETS:
        assert api_pairs(s) & TEST_PAIRS
    train = train_tasks(400)
    assert all(not t.pairs & TEST_PAIRS for t in train) and all(t.name.startswith("train-") for t in train)
    # every API is trained on, so a test pair is a new composition of ops each seen in training
    assert {a for p in TRAIN_PAIRS for a in p} == set(APIS)
    assert {a for t in train for a in t.apis} == set(APIS)


def test_at_least_64_test_tasks_cover_every_test_pair():
    tests = test_tasks()
    assert len(tests) == 64 and len({t.source for t in tests}) == 64
    assert all(t.pairs & TEST_PAIRS and t.name.startswith("test-") for t in tests)
    assert set().union(*(t.pairs for t in tests)) >= TEST_PAIRS
    assert {len(t.apis) for t in tests} == {2, 3}
    assert not {t.source for t in tests} & {t.source for t in train_tasks(400)}


# The real validator runs each task in its sandbox (one worker process each, about 1 s of CPU).
def _validated(tasks):
    results = family.validate(tasks)
    bad = [(t.name, r.reason, r.detail) for t, r in zip(tasks, results) if not r.valid]
    assert not bad, bad
    assert all(r.forward_ms is not None for r in results)


def _covering(tasks):
    """Tasks that together use every API of the family, picked greedily (each adds the most APIs not yet used, the
    earliest on a tie), so that few sandboxed validations cover the vocabulary."""
    picked, seen = [], set()
    while seen != set(APIS):
        best = max(tasks, key=lambda t: len(set(t.apis) - seen))
        assert set(best.apis) - seen, f"no task uses {sorted(set(APIS) - seen)}"
        picked.append(best)
        seen |= set(best.apis)
    return picked


def test_generated_tasks_pass_the_real_validator():
    """Training and test tasks at small sizes that together use every API pass the validator's run-time checks."""
    tasks = _covering([t for pair in zip(train_tasks(40, config=SMALL), test_tasks(40, config=SMALL)) for t in pair
                       if len(t.apis) == 3])  # fmt: skip
    assert len(tasks) <= 8
    _validated(tasks)


@pytest.mark.slow  # 40 sandboxed validations at full sizes: about a minute on the 2-core box
def test_forty_generated_tasks_at_full_size_pass_the_real_validator():
    _validated(train_tasks(20) + test_tasks(20))
