"""Stand-in prompts and completion parsers for both roles, until `kernelzero.coder` and `kernelzero.proposer` land.

TODO(policies): switch to `kernelzero.coder.parse_coder_completion(text) -> ParsedCode | ParseFailure` and the Coder
prompt builder from `kernelzero.coder`, and to the Proposer's prompt and parser from `kernelzero.proposer`, when
branch `policies` is merged. The trainers take all four as injected callables, so the switch changes defaults only:
`DEFAULT_CODER_PARSER`, `DEFAULT_PROPOSER_PARSER`, `coder_messages`, `proposer_messages`.

Parser contract used by the trainers (duck-typed so that the `policies` records fit as they are): success is any
object with a string attribute `code`; anything else is a failure, whose `reason` (or `message`) attribute, if any,
becomes the verdict's feedback.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kernelzero.tasks import Task

_FENCE = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.DOTALL)


@dataclass(frozen=True)
class ParsedCode:
    """A completion's code block."""

    code: str


@dataclass(frozen=True)
class ParseFailure:
    """Why a completion holds no usable code (shown to the model as format_error feedback)."""

    reason: str


def extract_last_python_block(text: str) -> ParsedCode | ParseFailure:
    """The last fenced ```python block of a completion (the model's final answer when it drafts several)."""
    blocks = _FENCE.findall(text)
    if not blocks:
        return ParseFailure("no ```python code block in the completion")
    code = blocks[-1].strip()
    if not code:
        return ParseFailure("the last ```python code block is empty")
    return ParsedCode(code)


def parse_coder_completion(text: str) -> ParsedCode | ParseFailure:
    """Minimal Coder parser: the last python block, which must define ModelNew."""
    parsed = extract_last_python_block(text)
    if isinstance(parsed, ParsedCode) and "class ModelNew" not in parsed.code:
        return ParseFailure("the code block does not define class ModelNew")
    return parsed


def parse_proposer_completion(text: str) -> ParsedCode | ParseFailure:
    """Minimal Proposer parser: the last python block, which must define Model, get_inputs and get_init_inputs."""
    parsed = extract_last_python_block(text)
    if isinstance(parsed, ParsedCode):
        missing = [n for n in ("class Model", "def get_inputs", "def get_init_inputs") if n not in parsed.code]
        if missing:
            return ParseFailure(f"the task does not define {', '.join(missing)}")
    return parsed


def parsed_code(parsed: Any) -> str | None:
    """The code of a parser's result, or None when it is a failure (see the contract above)."""
    code = getattr(parsed, "code", None)
    return code if isinstance(code, str) else None


def failure_reason(parsed: Any) -> str:
    return str(getattr(parsed, "reason", None) or getattr(parsed, "message", None) or parsed)


def coder_messages(task: Task, backend: str) -> list[dict[str, str]]:
    """Minimal Coder prompt: the task source and the output contract."""
    lang = "CUDA kernels via torch.utils.cpp_extension.load_inline" if backend == "cuda" else "Triton kernels"
    return [
        {
            "role": "user",
            "content": (
                f"Rewrite this PyTorch module as `class ModelNew(nn.Module)` with the same constructor and forward "
                f"signatures, using custom {lang}, as fast as possible. Answer with one ```python block.\n\n"
                f"```python\n{task.source.strip()}\n```"
            ),
        }
    ]


def coder_answer(solution: str) -> str:
    """The assistant turn that `parse_coder_completion` reads back (used to format SFT targets)."""
    return f"```python\n{solution.strip()}\n```"


def proposer_messages(api_set: Sequence[str]) -> list[dict[str, str]]:
    """Minimal Proposer prompt: the API set and the task format."""
    apis = ", ".join(api_set)
    return [
        {
            "role": "user",
            "content": (
                f"Write a KernelBench-format PyTorch task (class Model(nn.Module), get_inputs(), get_init_inputs()) "
                f"whose forward uses all of: {apis}. Answer with one ```python block."
            ),
        }
    ]


CodeParser = Callable[[str], Any]
DEFAULT_CODER_PARSER: CodeParser = parse_coder_completion
DEFAULT_PROPOSER_PARSER: CodeParser = parse_proposer_completion
