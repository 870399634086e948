"""Parsers of both roles on realistic completions: fences, thinking text, several blocks, broken and truncated code."""

from __future__ import annotations

import pytest

from kernelzero.roles.coder import parse_coder_completion
from kernelzero.roles.parsing import ParsedCode, ParseFailure
from kernelzero.roles.proposer import parse_proposer_completion

SOLUTION = """\
import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
        return out
"""

TASK = """\
import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(1024, 1024)]


def get_init_inputs():
    return []
"""


def fenced(code: str, lang: str = "python") -> str:
    return f"```{lang}\n{code}```"


def ok(result) -> str:
    assert isinstance(result, ParsedCode), result
    return result.code


def failed(result) -> str:
    assert isinstance(result, ParseFailure), result
    assert "\n" not in result.reason
    return result.reason


@pytest.mark.parametrize("lang", ["python", "py", "Python", "python3", ""])
def test_fence_languages_are_accepted(lang):
    completion = "Here is a fused ReLU kernel.\n\n" + fenced(SOLUTION, lang) + "\n\nIt avoids a second pass."
    assert ok(parse_coder_completion(completion)) == SOLUTION


def test_thinking_text_is_dropped_even_when_it_holds_a_draft():
    draft = SOLUTION.replace("BLOCK=1024", "BLOCK=64")
    completion = f"<think>\nFirst try:\n{fenced(draft)}\nBetter use 1024.\n</think>\nFinal answer:\n{fenced(SOLUTION)}"
    assert ok(parse_coder_completion(completion)) == SOLUTION


def test_closing_think_tag_alone_means_the_template_opened_it():
    completion = f"The input is contiguous, so one pass suffices.\n</think>\n\n{fenced(SOLUTION)}"
    assert ok(parse_coder_completion(completion)) == SOLUTION


def test_code_only_inside_thinking_is_not_an_answer():
    completion = f"<think>\n{fenced(SOLUTION)}\n</think>\nI could not finish."
    assert "no ```python code block defining class ModelNew" in failed(parse_coder_completion(completion))


def test_completion_cut_inside_thinking_says_so():
    reason = failed(parse_coder_completion("<think>\nLet me consider tiling the reduction so that"))
    assert "ended inside <think>" in reason and "max tokens" in reason


def test_last_block_that_defines_modelnew_wins():
    first = SOLUTION.replace("BLOCK=1024", "BLOCK=256")
    usage = "model = ModelNew()\nprint(model(torch.randn(8)))\n"
    completion = f"v1:\n{fenced(first)}\nv2, faster:\n{fenced(SOLUTION)}\nUsage:\n{fenced(usage)}"
    assert ok(parse_coder_completion(completion)) == SOLUTION


def test_cuda_source_block_is_not_taken_for_the_python_solution():
    kernel = "__global__ void k(float* x) { x[threadIdx.x] = 0; }\nclass ModelNew {};\n"
    completion = f"The kernel:\n{fenced(kernel, 'cuda')}\nThe module:\n{fenced(SOLUTION)}"
    assert ok(parse_coder_completion(completion)) == SOLUTION


def test_no_code_at_all():
    reason = failed(parse_coder_completion("I would fuse the add and the ReLU into one kernel."))
    assert reason == "no ```python code block defining class ModelNew in the completion"


def test_only_non_python_blocks_are_named():
    reason = failed(parse_coder_completion(fenced("__global__ void k() {}\n", "cuda")))
    assert "only blocks in cuda" in reason


def test_empty_completion():
    assert failed(parse_coder_completion("  \n")) == "the completion is empty"


def test_syntax_error_names_the_line():
    broken = SOLUTION.replace("def forward(self, x):", "def forward(self, x)")
    reason = failed(parse_coder_completion(fenced(broken)))
    line = SOLUTION.splitlines().index("    def forward(self, x):") + 1
    assert reason == f"the code does not parse: expected ':' at line {line}"


def test_block_without_modelnew():
    reason = failed(parse_coder_completion(fenced(TASK)))
    assert reason == "no ```python code block defines class ModelNew (1 python blocks found)"


def test_modelnew_nested_in_a_function_does_not_count():
    nested = "from torch import nn\n\ndef make():\n    class ModelNew(nn.Module):\n        pass\n    return ModelNew\n"
    assert "defines class ModelNew" in failed(parse_coder_completion(fenced(nested)))


def test_truncated_fence_that_does_not_parse_blames_max_tokens():
    cut = SOLUTION[: SOLUTION.index("out = torch.empty_like") + 12]
    reason = failed(parse_coder_completion(f"Here it is:\n```python\n{cut}"))
    assert "does not parse" in reason and "not closed" in reason and "max tokens" in reason


def test_truncated_fence_before_modelnew_blames_max_tokens():
    cut = SOLUTION[: SOLUTION.index("class ModelNew")]
    reason = failed(parse_coder_completion(f"```python\n{cut}"))
    assert "defines class ModelNew" in reason and "last block is not closed" in reason


def test_unclosed_fence_around_complete_code_is_accepted():
    assert ok(parse_coder_completion(f"```python\n{SOLUTION}")) == SOLUTION


def test_raw_code_without_fences_is_accepted():
    completion = "Solution follows.\n" + SOLUTION
    assert ok(parse_coder_completion(completion)) == SOLUTION


def test_raw_prose_mentioning_modelnew_fails_cleanly():
    reason = failed(parse_coder_completion("class ModelNew should use a Triton kernel, and then it is fast."))
    assert reason.startswith("the code does not parse")


def test_block_indented_in_a_markdown_list_is_dedented():
    indented = "".join("   " + line + "\n" if line else "\n" for line in SOLUTION.splitlines())
    completion = "1. Write the kernel:\n   ```python\n" + indented + "   ```\n"
    assert ok(parse_coder_completion(completion)) == SOLUTION


def test_windows_line_endings():
    completion = ("Answer:\n" + fenced(SOLUTION)).replace("\n", "\r\n")
    assert ok(parse_coder_completion(completion)) == SOLUTION


def test_solution_that_keeps_the_reference_model_is_fine():
    both = TASK + "\n\n" + SOLUTION.split("from torch import nn\n", 1)[1]
    assert "class ModelNew" in ok(parse_coder_completion(fenced(both)))


def test_proposer_takes_the_last_full_task():
    snippet = "class Model(nn.Module):\n    pass\n"  # a sketch without get_inputs: not a task
    completion = f"Sketch:\n{fenced(snippet)}\nFull task:\n{fenced(TASK)}\nOr just the module:\n{fenced(snippet)}"
    assert ok(parse_proposer_completion(completion)) == TASK


def test_proposer_needs_get_init_inputs():
    no_init = TASK[: TASK.index("def get_init_inputs")]
    reason = failed(parse_proposer_completion(fenced(no_init)))
    assert reason == "the code has no top-level function get_init_inputs()"


def test_proposer_block_without_get_inputs():
    reason = failed(parse_proposer_completion(fenced(TASK.replace("def get_inputs", "def make_inputs"))))
    assert reason == "no ```python code block defines class Model and def get_inputs (1 python blocks found)"


def test_proposer_does_not_take_modelnew_for_model():
    wrong = TASK.replace("class Model(", "class ModelNew(")
    assert "defines class Model" in failed(parse_proposer_completion(fenced(wrong)))


def test_failure_reason_is_always_one_line():
    assert ParseFailure("line one\nline two").reason == "line one line two"
