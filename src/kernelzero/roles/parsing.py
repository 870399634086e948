"""Pulling Python code out of model completions: fenced blocks, thinking text, raw-code fallback, typed results.

Both roles use `extract_code`; `coder.parse_coder_completion` and `proposer.parse_proposer_completion` say which
definitions pick the block. A failure's `reason` is one line fit to show the model (it becomes the judge's
`format_error` feedback), so it says what was wrong and, where it can tell, why (cut off at max tokens, still
thinking). Code is only parsed with `ast` here, never executed.
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass

from kernelzero.syntax import parse

PYTHON_FENCE_LANGS = frozenset({"", "python", "py", "python3", "py3"})
_TRUNCATED = "the completion was probably cut off at max tokens"


@dataclass(frozen=True)
class ParsedCode:
    """The Python source chosen from a completion; it parses with `ast` and has the required definitions."""

    code: str


@dataclass(frozen=True)
class ParseFailure:
    """Why no usable code came out of a completion: one line, shown to the model as `format_error` feedback."""

    reason: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "reason", " ".join(self.reason.split()))  # always exactly one line


ParseResult = ParsedCode | ParseFailure


@dataclass(frozen=True)
class _Block:
    lang: str
    code: str
    closed: bool


def extract_code(completion: str, select: Sequence[str], require: Sequence[str] = ()) -> ParseResult:
    """The last Python block that textually defines every entry of `select`, checked with `ast`.

    Entries are `"class Name"` or `"def name"` (top-level). `require` lists further top-level definitions the chosen
    code must have. Fenced blocks (```python, ```py, ```) win; a completion without any is tried as raw code.
    """
    if not completion.strip():
        return ParseFailure("the completion is empty")
    text, thinking_unclosed = _strip_thinking(completion)
    wanted = " and ".join(select)
    blocks = _fenced_blocks(text)
    python_blocks = [b for b in blocks if b.lang in PYTHON_FENCE_LANGS]
    chosen = next((b for b in reversed(python_blocks) if all(_defines_text(b.code, e) for e in select)), None)
    if chosen is None and python_blocks:
        hint = f"; the last block is not closed ({_TRUNCATED})" if not python_blocks[-1].closed else ""
        return ParseFailure(
            f"no ```python code block defines {wanted} ({len(python_blocks)} python blocks found{hint})"
        )
    if chosen is None:
        if thinking_unclosed and not text.strip():
            return ParseFailure(f"the completion ended inside <think> with no answer after it ({_TRUNCATED})")
        raw = _raw_code(text, select)
        if raw is None:
            others = sorted({b.lang for b in blocks})
            found = f" (only blocks in {', '.join(others)})" if others else ""
            return ParseFailure(f"no ```python code block defining {wanted} in the completion{found}")
        chosen = _Block(lang="", code=raw, closed=True)
    hint = f" (the code block is not closed: {_TRUNCATED})" if not chosen.closed else ""
    checked = check_definitions(chosen.code, (*select, *require))
    if isinstance(checked, ParseFailure) and checked.reason.startswith("the code does not parse"):
        return ParseFailure(checked.reason + hint)
    return checked


def check_definitions(code: str, entries: Sequence[str]) -> ParseResult:
    """`code` if it parses with `ast` and defines every entry (`"class Name"`, `"def name"`) at top level."""
    try:
        tree = parse(code)
    except SyntaxError as e:
        return ParseFailure(f"the code does not parse: {e.msg} at line {e.lineno}")
    missing = [e for e in entries if not _defines_ast(tree, e)]
    if missing:
        return ParseFailure(f"the code has no top-level {', '.join(_display(e) for e in missing)}")
    return ParsedCode(code.strip("\n") + "\n")


def _strip_thinking(text: str) -> tuple[str, bool]:
    """Drop reasoning: closed <think>...</think> spans, everything before a lone `</think>` (the opening tag was in
    the prompt, as Qwen3/R1 templates do), and an unclosed `<think>` tail. Returns the rest and whether a tail was cut.
    """
    text = re.sub(r"<think>.*?</think>", "", text, flags=re.DOTALL)
    if "</think>" in text:
        text = text.rsplit("</think>", 1)[1]
    if "<think>" in text:
        return text.split("<think>", 1)[0], True
    return text, False


def _fenced_blocks(text: str) -> list[_Block]:
    """Markdown code fences in order; a block still open at the end comes back with `closed=False`."""
    blocks: list[_Block] = []
    lang: str | None = None
    body: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if lang is None:
            if stripped.startswith("```"):
                info = stripped[3:].split()
                lang = info[0].lower() if info else ""
                body = []
        elif stripped.startswith("```") and not stripped[3:].strip():
            blocks.append(_Block(lang, _dedent_block(body), closed=True))
            lang = None
        else:
            body.append(line)
    if lang is not None:
        blocks.append(_Block(lang, _dedent_block(body), closed=False))
    return blocks


def _dedent_block(lines: list[str]) -> str:
    """Blocks nested in a markdown list come indented; Python needs them flush left."""
    return textwrap.dedent("\n".join(lines))


def _raw_code(text: str, select: Sequence[str]) -> str | None:
    """Unfenced fallback: the text from its first top-level import/class/def line, if it defines `select`."""
    if not all(_defines_text(text, e) for e in select):
        return None
    match = re.search(r"^(import |from \S+ import |class |def |@)", text, flags=re.MULTILINE)
    return text[match.start() :] if match else None


def _defines_text(code: str, entry: str) -> bool:
    kind, name = entry.split()
    return re.search(rf"^{kind}\s+{re.escape(name)}\b", code, flags=re.MULTILINE) is not None


def _defines_ast(tree: ast.Module, entry: str) -> bool:
    kind, name = entry.split()
    types = (ast.ClassDef,) if kind == "class" else (ast.FunctionDef, ast.AsyncFunctionDef)
    return any(isinstance(node, types) and node.name == name for node in tree.body)


def _display(entry: str) -> str:
    kind, name = entry.split()
    return f"class {name}" if kind == "class" else f"function {name}()"
