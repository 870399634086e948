"""Proposer prompts and parsing: an API set in, chat messages out; a KernelBench-format task source back out.

This file owns only what the model sees and how its answer is cut out. Validation of a proposed task (it runs, is
deterministic, finite, non-degenerate, really uses its APIs, fits the budget, is not a duplicate) lives in its own
module; the rules below tell the model what that validator enforces, and `TaskBudget` is the one place the budget's
numbers are set for both.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources

from kernelzero.roles.parsing import ParseResult, extract_code

# What a KernelBench-format task defines at top level.
TASK_DEFINITIONS = ("class Model", "def get_inputs", "def get_init_inputs")

# The worked example's API set; its task is `kernelzero/data/proposer_example_task.py`.
EXAMPLE_APIS = ("torch.nn.Linear", "torch.nn.functional.gelu", "torch.logsumexp")

SYSTEM_PROMPT = (
    "You design benchmark problems for GPU kernel engineers. Each problem is a small, realistic PyTorch module "
    "whose forward pass is worth writing custom CUDA or Triton kernels for. You answer with complete, runnable "
    "Python source."
)


@dataclass(frozen=True)
class TaskBudget:
    """Size limits a proposed task must respect (the validator reads the same record)."""

    max_input_elements: int = 1 << 26  # all get_inputs() tensors together: 256 MiB of fp32
    max_param_elements: int = 1 << 26  # all parameters of Model together
    max_forward_ms_cpu: float = 2000.0  # one eager forward on a CPU core, as the validator times it


def proposer_messages(apis: Sequence[str], *, budget: TaskBudget | None = None,
                      brief: bool = False) -> list[dict[str, str]]:  # fmt: skip
    """The chat for one Proposer rollout: system, then the rules, the worked example and the API set to use.
    `brief`: the API set alone (`roles.coder.PROMPTS`), for a model cold-started on valid tasks."""
    if not apis:
        raise ValueError("proposer_messages needs at least one API, got an empty set")
    if brief:
        user = ("Write a new PyTorch task that uses every API in the set below.\n\n## Your API set\n" + _api_list(apis)
                + "\n\nReply with one ```python block holding the complete task.")  # fmt: skip
        return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]
    budget = budget or TaskBudget()
    example = (resources.files("kernelzero") / "data" / "proposer_example_task.py").read_text(encoding="utf-8")
    rules = f"""\
- Write one complete Python source file in KernelBench format: `class Model(nn.Module)` with `__init__` and \
`forward`, a function `get_inputs()` that returns the list of input tensors for `forward`, and a function \
`get_init_inputs()` that returns the list of positional arguments for `Model(...)`.
- Call every API of the set in `Model.__init__` or `Model.forward` (a module such as `torch.nn.Linear` counts when \
it is built in `__init__` and applied in `forward`). Other PyTorch operations may be added to make a meaningful \
computation.
- `get_inputs()` creates CPU tensors with torch.randn, torch.rand or torch.randint (the judge moves them to the \
GPU). Together they hold at most {budget.max_input_elements:,} elements; the parameters hold at most \
{budget.max_param_elements:,}. Pick sizes big enough that a GPU kernel matters.
- `forward` must be deterministic (no dropout, no random sampling), must \
return finite values for random inputs (no log of negative numbers, no division by values that can be zero), and \
must return a tensor (or tuple of tensors) whose values vary with the input: not constant, not all zeros, not \
vanishingly small.
- Only torch may be imported. No file, network or device-specific code (no `.cuda()`).
- One eager forward must finish within {budget.max_forward_ms_cpu:.0f} ms on one CPU core.
- Reply with exactly one ```python block that holds the full source. Do not copy the example."""
    user = "\n\n".join(
        [
            "Write a new PyTorch task that uses every API in the set below.",
            "## Rules\n" + rules,
            "## Example\nAPI set: " + _api_list(EXAMPLE_APIS) + "\nTask:\n```python\n" + example.strip("\n") + "\n```",
            "## Your API set\n" + _api_list(apis) + "\n\nReply with one ```python block holding the complete task.",
        ]
    )
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def parse_proposer_completion(completion: str) -> ParseResult:
    """The last Python block that defines `class Model` and `get_inputs()`; it must also define `get_init_inputs()`."""
    return extract_code(completion, select=TASK_DEFINITIONS[:2], require=TASK_DEFINITIONS[2:])


def _api_list(apis: Sequence[str]) -> str:
    return "{" + ", ".join(f"`{a}`" for a in apis) + "}"
