"""Policy backends behind one interface, and `load_policy`, which turns a model spec into a backend.

Specs (the `--model` of the CLI):
- `None`: the tiny local model (`kernelzero.generation.tiny`), built on first use;
- a local directory: Hugging Face `transformers` weights (`hf.HFPolicy`);
- `vllm:PATH`: vLLM's offline engine (`vllm.VLLMPolicy`, extra `vllm`);
- `openai:MODEL@URL`: an OpenAI-compatible endpoint (`openai.OpenAIPolicy`), key from `$OPENAI_API_KEY`.
Backends import their heavy dependencies when constructed, so importing this package is cheap.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from kernelzero.generation.base import (
    FINISH_REASONS,
    Chat,
    Completion,
    GenerationError,
    Message,
    Policy,
    SamplingConfig,
)
from kernelzero.generation.hf import HFPolicy
from kernelzero.generation.openai import OpenAIPolicy
from kernelzero.generation.tiny import tiny_model_path
from kernelzero.generation.vllm import VLLMPolicy

__all__ = [
    "FINISH_REASONS",
    "Chat",
    "Completion",
    "GenerationError",
    "Message",
    "Policy",
    "SamplingConfig",
    "load_policy",
    "parse_model_spec",
]

_OPENAI_SPEC = re.compile(r"^openai:(?P<model>[^@]+)@(?P<url>https?://\S+)$")


def parse_model_spec(spec: str | None) -> tuple[str, dict[str, str]]:
    """(`tiny` | `hf` | `vllm` | `openai`, its arguments) for a model spec; ValueError with the accepted forms."""
    if spec is None or spec == "tiny":
        return "tiny", {}
    if spec.startswith("vllm:"):
        if not spec[5:]:
            raise ValueError("model spec 'vllm:' needs a path: vllm:PATH")
        return "vllm", {"path": spec[5:]}
    if spec.startswith("openai:"):
        m = _OPENAI_SPEC.match(spec)
        if not m:
            raise ValueError(f"model spec {spec!r} must look like openai:MODEL@http://host:port/v1")
        return "openai", {"model": m["model"], "base_url": m["url"]}
    return "hf", {"path": spec}


def load_policy(spec: str | None = None, *, device: str = "auto", **options: Any) -> Policy:
    """The backend a model spec names. `options` go to the backend's constructor (e.g. batch_size, timeout_s)."""
    kind, args = parse_model_spec(spec)
    if kind in ("tiny", "hf"):
        if kind == "tiny":
            return HFPolicy(tiny_model_path(), device=device, **options)
        if not Path(args["path"]).exists():
            raise GenerationError(
                f"no model directory at {args['path']} (local weights only; for other backends use vllm:PATH or "
                "openai:MODEL@URL)"
            )
        return HFPolicy(args["path"], device=device, **options)
    if kind == "vllm":
        return VLLMPolicy(args["path"], **options)
    options.setdefault("api_key", os.environ.get("OPENAI_API_KEY"))
    return OpenAIPolicy(args["model"], args["base_url"], **options)
