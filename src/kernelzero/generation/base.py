"""The generation interface every policy backend implements: chats in, `n` typed completions per chat out.

A prompt is a chat (a list of `{"role", "content"}` messages); each backend applies its own chat formatting (the
tokenizer's chat template locally, the server's over HTTP). `SamplingConfig` is the one description of sampling that
all backends translate. Errors a caller can act on (bad path, bad key, unreachable server, timeout) are
`GenerationError` with a one-line message; our own bugs propagate as they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

Message = dict[str, str]  # {"role": "system" | "user" | "assistant", "content": str}
Chat = list[Message]

FINISH_REASONS = ("stop", "length")  # hit EOS or a stop string / hit max_new_tokens


class GenerationError(RuntimeError):
    """A generation request failed for a reason outside our code; the message says what and what to check."""


@dataclass(frozen=True)
class SamplingConfig:
    """How to sample completions; every backend maps these fields onto its own parameters."""

    temperature: float = 1.0
    """Softmax temperature; 0 means greedy decoding (then the n completions of a prompt are identical)."""
    top_p: float = 1.0
    """Nucleus sampling: keep the smallest set of tokens whose probability reaches top_p (1 = off)."""
    top_k: int = 0
    """Keep only the k most likely tokens (0 = off; not sent to OpenAI endpoints, which lack it)."""
    max_new_tokens: int = 1024
    """Hard cap on generated tokens per completion; a completion that reaches it has finish_reason 'length'."""
    seed: int | None = None
    """Seed for reproducible sampling where the backend supports it (None = unseeded)."""
    stop: tuple[str, ...] = ()
    """Strings that end a completion; the stop string itself is not part of the returned text."""

    def __post_init__(self) -> None:
        if self.temperature < 0:
            raise ValueError(f"SamplingConfig.temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"SamplingConfig.top_p must be in (0, 1], got {self.top_p}")
        if self.top_k < 0:
            raise ValueError(f"SamplingConfig.top_k must be >= 0 (0 = off), got {self.top_k}")
        if self.max_new_tokens < 1:
            raise ValueError(f"SamplingConfig.max_new_tokens must be >= 1, got {self.max_new_tokens}")
        object.__setattr__(self, "stop", tuple(self.stop))


@dataclass(frozen=True)
class Completion:
    """One sampled answer to one chat."""

    text: str
    finish_reason: str  # one of FINISH_REASONS, or what a remote server reported (e.g. "content_filter")
    tokens: int | None = None  # generated tokens, where the backend reports them


@runtime_checkable
class Policy(Protocol):
    """Anything that can answer chats. `generate(prompts, n, s)[i][j]` is the j-th completion of prompts[i]."""

    name: str

    def generate(self, prompts: Sequence[Chat], n: int, sampling: SamplingConfig) -> list[list[Completion]]: ...


def check_request(prompts: Sequence[Chat], n: int) -> None:
    """The argument checks every backend shares (raises ValueError naming the bad argument)."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    for i, chat in enumerate(prompts):
        if not chat or not all(isinstance(m, dict) and "role" in m and "content" in m for m in chat):
            raise ValueError(f"prompts[{i}] must be a non-empty list of {{'role', 'content'}} messages")


def cut_at_stop(text: str, stop: Sequence[str]) -> tuple[str, bool]:
    """Text up to the earliest stop string (exclusive), and whether one was found (OpenAI's stop semantics)."""
    cuts = [i for i in (text.find(s) for s in stop if s) if i >= 0]
    return (text[: min(cuts)], True) if cuts else (text, False)
