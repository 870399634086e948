"""A proposed task that forges its own validation. Task code runs in the validation worker, where the channel's key
lives, so it can send signed messages of its own: here, at import time, before the worker has measured or run
anything, it finds the harness's channel and output writer on the call stack, seals a plausible set of outputs and
reports them, then exits before the real checks run. Its Model is nondeterministic (noise in forward), which the
honest run rejects. Before the worker protocol was typed, the parent read the forged `outputs` message as it came
and the task was valid; now a message the worker never sends (a `valid` claim, a field missing) or one out of order
(outputs before any sizes) rejects it as `protocol`.

What this does not stop: a forgery in the exact shape and order of the real messages is the worker's word, as the
sizes and times always were (see judge/sandbox/validate_job.py); the caller's timeout and memory limit still hold.
"""

import pytest

from kernelzero.curriculum.validate import REASONS, ValidationConfig, Validator

FORGED = """
import os
import sys

import torch
from torch import nn


def _report_valid():
    frame = sys._getframe()
    while frame is not None and "chan" not in frame.f_locals:  # the worker's main: its channel and output writer
        frame = frame.f_back
    chan, bound = frame.f_locals["chan"], frame.f_locals["bound"]
    x, other = torch.randn(16, 32), torch.randn(16, 32)
    bound.save({{"runs": [[x], [x.clone()], [other]]}}, "out")
    chan.send({message})
    chan.send({{"event": "done"}})
    os._exit(0)


_report_valid()


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(32, 32)

    def forward(self, x):
        return self.lin(x) + torch.randn_like(x)


def get_inputs():
    return [torch.randn(16, 32)]


def get_init_inputs():
    return []
"""

MESSAGES = {
    # what a model writes first: the verdict it wants, in the message the parent reads outputs from
    "claims_valid": {"event": "outputs", "valid": True, "non_tensor": [], "forward_ms": 0.1},
    # every field right, but sent before the worker measured the task's sizes (the budget check never ran)
    "before_sizes": {"event": "outputs", "structures": ["tensor"] * 3, "non_tensor": [], "forward_ms": 0.1},
}


@pytest.mark.parametrize("forgery", list(MESSAGES))
def test_a_proposed_task_that_forges_its_validation_is_rejected(forgery):
    source = FORGED.format(message=repr(MESSAGES[forgery]))
    honest = source.replace("\n_report_valid()\n", "\n")
    validator = Validator(ValidationConfig(device="cpu", workers=2))
    forged, control = validator.validate_many([(forgery, source, ["nn.Linear"]), ("honest", honest, ["nn.Linear"])],
                                              within_batch=False)  # fmt: skip
    assert control.reason == "nondeterministic", control  # the task itself fails validation when not forging
    assert forged.reason == "protocol" and forged.reason in REASONS, forged
    assert "outputs" in forged.detail, forged.detail
