"""Task validation decided by what forward RUNS and how long it runs: an API built in __init__ and never called in
forward is `missing_api` (the source alone lists it), and a task over the forward time budget is stopped at the
budget (`too_slow`) instead of after its forwards finish."""

import time

from kernelzero.curriculum.validate import ValidationConfig, Validator, forward_limit_s
from kernelzero.roles.proposer import TaskBudget

BUILT_NOT_RUN = """
import torch
from torch import nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(32)  # built, never called

    def forward(self, x):
        return torch.tanh(x)

def get_inputs():
    return [torch.randn(16, 32)]

def get_init_inputs():
    return []
"""

SLOW = """
import time
import torch
from torch import nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        time.sleep(30.0)
        return torch.tanh(x)

def get_inputs():
    return [torch.randn(16, 32)]

def get_init_inputs():
    return []
"""


def test_api_built_in_init_but_never_run_in_forward_is_missing_api():
    validator = Validator(ValidationConfig(device="cpu", workers=2))
    unused, used = validator.validate_many([
        ("built_not_run", BUILT_NOT_RUN, ["nn.LayerNorm", "torch.tanh"]),
        ("run", BUILT_NOT_RUN.replace("return torch.tanh(x)", "return torch.tanh(self.norm(x))"),
         ["nn.LayerNorm", "torch.tanh"]),
    ], within_batch=False)  # fmt: skip
    assert (unused.reason, unused.missing) == ("missing_api", ("nn.LayerNorm",)), unused
    assert "never run by forward" in unused.detail
    assert used.reason is None, used  # the same task calling its LayerNorm is valid


def test_task_over_the_forward_budget_is_stopped_at_the_budget():
    budget = TaskBudget(max_forward_ms_cpu=1000.0)
    validator = Validator(ValidationConfig(device="cpu", budget=budget, timeout_s=120.0))
    t0 = time.monotonic()
    r = validator.validate("slow", SLOW, ["torch.tanh"])
    elapsed = time.monotonic() - t0
    assert r.reason == "too_slow" and "stopped" in r.detail, r
    # three forwards of 30 s would take 90 s: the first is stopped at twice its limit (6 s here), plus start-up
    assert "still running" in r.detail and elapsed < 2 * forward_limit_s(budget.max_forward_ms_cpu) + 25, elapsed
