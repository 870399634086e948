"""Task validation in the sandbox: one task built to trigger each reason, validated in one concurrent batch."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kernelzero.curriculum.similarity import SimilarityIndex
from kernelzero.curriculum.validate import REASONS, ValidationConfig, Validator
from kernelzero.roles.proposer import TaskBudget

FIXTURES = Path(__file__).parents[1] / "fixtures" / "proposer"
SRC = Path(__file__).parents[2] / "src"

TEMPLATE = """
import torch
import torch.nn.functional as F
from torch import nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(32, 32)

    def forward(self, x):
        {body}

def get_inputs():
    return [torch.randn({shape})]

def get_init_inputs():
    return []
"""


def task(body: str, shape: str = "16, 32") -> str:
    return TEMPLATE.format(body=body, shape=shape)


CASES = {  # name: (source, API set, expected reason)
    "valid": (task("return F.gelu(self.lin(x))"), ["torch.nn.Linear", "torch.nn.functional.gelu"], None),
    "missing": (task("return F.gelu(self.lin(x))"), ["nn.Linear", "F.gelu", "torch.softmax"], "missing_api"),
    "nan": (task("return torch.sqrt(self.lin(x))"), ["nn.Linear", "torch.sqrt"], "non_finite"),
    "random": (task("return self.lin(x) + torch.randn_like(x)"), ["nn.Linear"], "nondeterministic"),
    "constant": (task("return torch.sigmoid(self.lin(x) * 0.0)"), ["nn.Linear", "torch.sigmoid"], "constant_output"),
    "zeros": (task("return F.relu(-torch.abs(self.lin(x)))"), ["nn.Linear", "F.relu"], "zero_output"),
    "tiny": (task("return torch.tanh(self.lin(x)) * 1e-7"), ["nn.Linear", "torch.tanh"], "below_tolerance"),
    "ignores_input": (task("return torch.tanh(self.lin.weight)"), ["nn.Linear", "torch.tanh"], "input_independent"),
    "large": (task("return torch.tanh(self.lin(x))", "4000, 32"), ["nn.Linear", "torch.tanh"], "too_large"),
    "slow": (task("__import__('time').sleep(1.0)\n        return torch.tanh(self.lin(x))"), ["nn.Linear", "torch.tanh"],
             "too_slow"),
    "raises": (task("return torch.tanh(self.lin(x.t()[:5]))"), ["nn.Linear", "torch.tanh"], "runtime_error"),
}
POOLED = task("return torch.sigmoid(self.lin(x)) * x")
KB_RELU = """import torch
import torch.nn as nn


class Model(nn.Module):
    \"\"\"Simple model that performs a ReLU activation.\"\"\"

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


batch_size = 16
dim = 16384


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
"""
NEAR_COPY = KB_RELU.replace("x", "inp").replace("16384", "4096").replace("Simple model that", "This model")


def test_each_reason_is_produced_by_a_task_built_for_it(tmp_path):
    kb = tmp_path / "KernelBench" / "level1"
    kb.mkdir(parents=True)
    (kb / "19_ReLU.py").write_text(KB_RELU)
    budget = TaskBudget(max_input_elements=50_000, max_param_elements=50_000, max_forward_ms_cpu=500.0)
    validator = Validator(ValidationConfig(device="cpu", budget=budget, workers=4), kernelbench=tmp_path)
    items = [(name, src, apis) for name, (src, apis, _) in CASES.items()] + [("kb_copy", NEAR_COPY, ["torch.relu"])]
    results = {r.name: r for r in validator.validate_many(items)}
    got = {name: results[name].reason for name in CASES}
    assert got == {name: expected for name, (_, _, expected) in CASES.items()}
    kb_copy = results["kb_copy"]
    assert (kb_copy.reason, kb_copy.similar_to) == ("contaminated", "level1/19_ReLU")
    assert results["missing"].missing == ("torch.softmax",)
    assert results["large"].input_elements == 128_000 and "budget 50,000" in results["large"].detail
    assert "forward" in results["raises"].detail
    assert results["valid"].forward_ms is not None and results["valid"].param_elements == 32 * 32 + 32
    assert all(r.reason is None or r.reason in REASONS for r in results.values())


def test_duplicate_of_a_pool_task_is_rejected_before_running():
    pool = SimilarityIndex()
    pool.add("pooled_sigmoid_gate", POOLED)
    copy = POOLED.replace("lin", "fc").replace("16, 32", "64, 32")
    r = Validator(ValidationConfig(device="cpu"), pool=pool).validate("copy", copy, ["nn.Linear", "torch.sigmoid"])
    assert (r.reason, r.similar_to, r.forward_ms) == ("duplicate", "pooled_sigmoid_gate", None)


def _cli(*args: str, cwd: Path, env_extra: dict | None = None) -> subprocess.CompletedProcess:
    import os

    env = {**os.environ, "PYTHONPATH": str(SRC), **(env_extra or {})}
    return subprocess.run([sys.executable, "-m", "kernelzero.cli", *args], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=300)  # fmt: skip


def test_cli_validate_folder_names_each_reason(tmp_path):
    proc = _cli("propose", "--validate", str(FIXTURES), "--kernelbench", str(FIXTURES / "kernelbench"),
                "--device", "cpu", cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    verdicts = {line.split()[0]: line.split()[1:3] for line in proc.stdout.splitlines()[:9]}
    assert verdicts == {
        "01_valid_linear_gelu": ["valid"],
        "02_valid_layernorm_softmax": ["valid"],
        "03_missing_api": ["REJECTED", "missing_api:"],
        "04_nan_output": ["REJECTED", "non_finite:"],
        "05_nondeterministic": ["REJECTED", "nondeterministic:"],
        "06_constant_output": ["REJECTED", "constant_output:"],
        "07_too_large": ["REJECTED", "too_large:"],
        "08_kernelbench_copy": ["REJECTED", "contaminated:"],
        "09_duplicate": ["REJECTED", "duplicate:"],
    }, proc.stdout


@pytest.mark.usefixtures("tiny_model_dir")
def test_cli_propose_end_to_end_with_the_tiny_model(tiny_model_dir, tmp_path):
    out = tmp_path / "run" / "tasks.jsonl"
    proc = _cli("propose", "--n", "3", "--out", str(out), "--device", "cpu", "--max-new-tokens", "64",
                "--pool", str(tmp_path / "run"), cwd=tmp_path,
                env_extra={"KERNELZERO_CACHE": str(tiny_model_dir.parent)})  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out.parent / "tasks.summary.json").read_text())
    assert summary["total"] == 3 and sum(summary["reasons"].values()) == 3
    assert all(t["reward"] == -0.5 for t in summary["tasks"] if not t["valid"])  # rho for every rejected task
    assert out.read_text().count("\n") == summary["valid"]
    assert "verdict" in proc.stdout and "wrote" in proc.stdout
    from kernelzero.curriculum.pool import TaskPool

    assert len(TaskPool.load(tmp_path / "run")) == summary["valid"] and TaskPool.load(tmp_path / "run").round == 1
