"""Task loading: files, folders, KernelBench-shaped trees, JSONL corpora; malformed sources as one-line errors."""

import json
from pathlib import Path

import pytest

from kernelzero.tasks import (
    Task,
    TaskFormatError,
    TaskLoadError,
    load_task,
    load_tasks,
    parse_task,
    read_corpus,
    write_corpus,
)

FIX = Path(__file__).parents[1] / "fixtures" / "tasks"

GOOD = """import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x) + 1

def get_inputs():
    return [torch.rand(4)]

def get_init_inputs():
    return []
"""


def write(path: Path, text: str = GOOD) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_parse_task_fills_apis():
    task = parse_task(GOOD, "relu_add")
    assert task == Task(name="relu_add", source=GOOD, origin="user", level=None, apis=("torch.relu", "op.add"))


@pytest.mark.parametrize(
    "source, message",
    [
        ("import torch\nclass Model(:\n", "bad.py:2: syntax error: invalid syntax"),
        (GOOD.replace("class Model", "class Net"), "bad.py:1: missing class Model"),
        (GOOD.replace("def get_inputs", "def inputs"), "bad.py:1: missing function get_inputs"),
        (
            GOOD.replace("def get_inputs", "def inputs").replace("def get_init_inputs", "def init"),
            "bad.py:1: missing function get_inputs, function get_init_inputs",
        ),
        (GOOD.replace("def forward", "def run"), "bad.py:4: class Model has no forward method"),
        (GOOD.replace("def get_inputs()", "def get_inputs(n)"), "bad.py:8: get_inputs must be callable with no"),
        (GOOD.replace("class Model(nn.Module):", "Model = nn.Identity\nclass M(nn.Module):"), "bad.py:4: Model must"),
    ],
)
def test_malformed_sources_give_one_line_file_line_errors(source, message):
    with pytest.raises(TaskFormatError) as info:
        parse_task(source, "bad", path="bad.py")
    text = str(info.value)
    assert text.startswith(message)
    assert "\n" not in text


def test_load_task_reads_level_and_origin_from_kernelbench_folder(tmp_path):
    f = write(tmp_path / "KernelBench" / "level2" / "7_relu.py")
    task = load_task(f)
    assert (task.name, task.level, task.origin, task.path) == ("7_relu", 2, "kernelbench", str(f))
    plain = load_task(write(tmp_path / "mine" / "relu.py"))
    assert (plain.level, plain.origin) == (None, "user")


def test_load_task_rejects_non_utf8(tmp_path):
    f = tmp_path / "latin.py"
    f.write_bytes(b"# caf\xe9\n")
    with pytest.raises(TaskFormatError, match=r"latin\.py:1: not UTF-8 text"):
        load_task(f)


def fake_kernelbench(root: Path) -> Path:
    for level, names in {1: ["1_a", "2_b", "10_c", "9_d"], 2: ["1_e"], 3: ["1_f"]}.items():
        for name in names:
            write(root / "KernelBench" / f"level{level}" / f"{name}.py")
    write(root / "KernelBench" / "level1" / "__init__.py", "")
    write(root / "KernelBench" / "helpers.py", "x = 1\n")  # not in a level folder: not a task
    return root


@pytest.mark.parametrize("sub", ["", "KernelBench"])
def test_kernelbench_checkout_root_or_inner_folder(tmp_path, sub):
    tasks = load_tasks(fake_kernelbench(tmp_path) / sub)
    assert [(t.level, t.name) for t in tasks] == [
        (1, "1_a"), (1, "2_b"), (1, "9_d"), (1, "10_c"), (2, "1_e"), (3, "1_f"),
    ]  # fmt: skip
    assert {t.origin for t in tasks} == {"kernelbench"}
    assert all(t.apis == ("torch.relu", "op.add") for t in tasks)


def test_levels_filter(tmp_path):
    root = fake_kernelbench(tmp_path)
    assert [t.name for t in load_tasks(root, levels=(2, 3))] == ["1_e", "1_f"]
    assert [t.name for t in load_tasks(root / "KernelBench" / "level2")] == ["1_e"]
    assert load_tasks(root / "KernelBench" / "level2")[0].level == 2


def test_folder_with_malformed_files_reports_every_one(tmp_path):
    write(tmp_path / "ok.py")
    write(tmp_path / "broken.py", "def (\n")
    write(tmp_path / "no_model.py", GOOD.replace("class Model", "class Other"))
    with pytest.raises(TaskLoadError) as info:
        load_tasks(tmp_path)
    lines = str(info.value).splitlines()
    assert lines == [
        f"{tmp_path / 'broken.py'}:1: syntax error: invalid syntax",
        f"{tmp_path / 'no_model.py'}:1: missing class Model (a task defines class Model, get_inputs, get_init_inputs)",
    ]
    assert len(info.value.errors) == 2


def test_missing_and_empty_paths(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file or folder"):
        load_tasks(tmp_path / "nope")
    with pytest.raises(ValueError, match="no task files"):
        load_tasks(tmp_path)


def test_corpus_round_trip(tmp_path):
    tasks = load_tasks(fake_kernelbench(tmp_path / "kb")) + [parse_task(GOOD, "mine", origin="proposed")]
    path = write_corpus(tasks, tmp_path / "out" / "corpus.jsonl")
    assert load_tasks(path) == tasks
    first = json.loads(path.read_text().splitlines()[0])
    assert first == {"name": "1_a", "level": 1, "origin": "kernelbench", "apis": ["torch.relu", "op.add"],
                     "path": tasks[0].path, "source": GOOD}  # fmt: skip


def test_corpus_keeps_given_apis_and_fills_missing_ones(tmp_path):
    path = tmp_path / "c.jsonl"
    rows = [{"name": "a", "source": GOOD, "apis": ["F.gelu"]}, {"name": "b", "source": GOOD}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert [t.apis for t in read_corpus(path)] == [("F.gelu",), ("torch.relu", "op.add")]


def test_corpus_errors_name_each_line(tmp_path):
    path = tmp_path / "c.jsonl"
    rows = [
        json.dumps({"name": "a", "source": GOOD}),
        "{not json",
        json.dumps({"name": "b"}),
        json.dumps({"name": "c", "source": GOOD.replace("def get_inputs", "def x")}),
        json.dumps({"name": "a", "source": GOOD}),
        json.dumps({"name": "d", "source": GOOD, "origin": "mystery"}),
    ]
    path.write_text("\n".join(rows) + "\n")
    with pytest.raises(TaskLoadError) as info:
        read_corpus(path)
    assert [str(e) for e in info.value.errors] == [
        f"{path}:2: invalid JSON: Expecting property name enclosed in double quotes (column 2)",
        f"{path}:3: field 'source' missing or not a str",
        f"{path}:4: task 'c': source line 1: missing function get_inputs "
        "(a task defines class Model, get_inputs, get_init_inputs)",
        f"{path}:5: task 'a' (level None) repeats line 1",
        f"{path}:6: task 'd': origin 'mystery' is not one of kernelbench, proposed, user, recycled",
    ]


def test_fixture_tasks_all_load():
    tasks = load_tasks(FIX)
    assert [t.name for t in tasks] == ["attention", "conv_block", "nested"]
    assert all(t.apis for t in tasks)
