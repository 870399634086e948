"""The `tasks` and `apis` commands: output shapes, one-line errors with non-zero exit, and a light import."""

import json
import os
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from kernelzero.apis.mine import load_cooccurrence
from kernelzero.cli import app

FIX = Path(__file__).parents[1] / "fixtures" / "tasks"
runner = CliRunner()


def test_tasks_json_lines():
    result = runner.invoke(app, ["tasks", str(FIX), "--json"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["name"] for r in rows] == ["attention", "conv_block", "nested"]
    assert rows[2] == {
        "name": "nested",
        "level": None,
        "origin": "user",
        "path": str(FIX / "nested.py"),
        "apis": ["nn.Linear", "torch.sigmoid", "Tensor.squeeze", "nn.LayerNorm", "F.silu", "op.add"],
    }
    assert result.stderr.strip() == "3 tasks (no level: 3); 0 with no API, 0 with no vocabulary API"


def test_tasks_table_and_corpus(tmp_path):
    out = tmp_path / "corpus.jsonl"
    result = runner.invoke(app, ["tasks", str(FIX), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "conv_block" in result.stdout and "nn.Conv2d, nn.BatchNorm2d" in result.stdout
    again = runner.invoke(app, ["tasks", str(out), "--json"])
    first = runner.invoke(app, ["tasks", str(FIX), "--json"])
    assert again.stdout == first.stdout


def test_tasks_malformed_files_exit_nonzero_one_line_each(tmp_path):
    (tmp_path / "ok.py").write_text((FIX / "nested.py").read_text())
    (tmp_path / "bad_syntax.py").write_text("class Model(:\n")
    (tmp_path / "no_inputs.py").write_text("class Model:\n    def forward(self, x):\n        return x\n")
    result = runner.invoke(app, ["tasks", str(tmp_path)])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        f"kernelzero: error: {tmp_path / 'bad_syntax.py'}:1: syntax error: invalid syntax",
        f"kernelzero: error: {tmp_path / 'no_inputs.py'}:1: missing function get_inputs, function get_init_inputs "
        "(a task defines class Model, get_inputs, get_init_inputs)",
        f"kernelzero: error: 2 malformed task file(s) under {tmp_path}",
    ]


def test_tasks_missing_path():
    result = runner.invoke(app, ["tasks", "/no/such/place"])
    assert result.exit_code == 2
    assert result.stderr == "kernelzero: error: /no/such/place: no such file or folder\n"


def test_apis_sample(tmp_path):
    result = runner.invoke(app, ["apis", "sample", "--n", "40", "--seed", "1", "--json"])
    assert result.exit_code == 0, result.output
    sets = [tuple(json.loads(line)["apis"]) for line in result.stdout.splitlines()]
    assert len(sets) == len(set(sets)) == 40
    assert sorted(len(s) for s in sets) == [2] * 20 + [3] * 20
    assert result.stderr.startswith("40 sets (40 distinct): 20 pairs, 20 triples; ")
    out = tmp_path / "sets.jsonl"
    to_file = runner.invoke(app, ["apis", "sample", "--n", "40", "--seed", "1", "--out", str(out)])
    assert to_file.stdout == "" and out.read_text() == result.stdout


def test_apis_sample_unknown_exclude():
    result = runner.invoke(app, ["apis", "sample", "--n", "4", "--exclude", "F.nope"])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and "unknown excluded API 'F.nope'" in result.stderr


def test_apis_mine_from_folder(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "m.py").write_text((FIX / "attention.py").read_text())
    out = tmp_path / "co.json"
    result = runner.invoke(app, ["apis", "mine", "--from", str(tmp_path / "src"), "--out", str(out)])
    assert result.exit_code == 0, result.output
    co = load_cooccurrence(out)
    assert (co.files, co.classes) == (1, 1)
    assert co.pair("nn.Linear", "F.softmax") == 1
    bad = runner.invoke(app, ["apis", "mine", "--from", "no_such_pkg_xyz"])
    assert bad.exit_code == 2 and "neither a path nor an installed package" in bad.stderr


def test_cli_import_does_not_load_torch():
    modules = "kernelzero.cli, kernelzero.tasks, kernelzero.apis, kernelzero.eval.metrics"
    code = f"import sys, {modules}; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")})  # fmt: skip
    assert out.stdout.strip() == "False"


def test_a_bad_prompt_style_is_one_line_exit_2():
    task = str(FIX / "nested.py")
    for args in (["eval", "--tasks", task, "--prompts", "short"], ["solve", task, "-b", "triton", "--prompts", "x"],
                 ["propose", "--prompts", "x"], ["sft", "--prompts", "x"]):  # fmt: skip
        result = runner.invoke(app, args)
        assert result.exit_code == 2, result.output
        assert result.stderr.strip().splitlines()[-1].startswith("kernelzero: error: --prompts must be one of full, "
                                                                 "brief")  # fmt: skip
