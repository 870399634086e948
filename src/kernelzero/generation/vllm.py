"""The vLLM offline-engine backend (extra `vllm`): the fast path for sampling many completions on GPUs.

Thin on purpose: vLLM's `LLM.chat` already applies the chat template and batches everything; this file maps
`SamplingConfig` onto `vllm.SamplingParams` and vLLM's outputs onto `Completion`. vLLM is imported when a policy is
constructed, and a missing install is a `GenerationError` that names the extra.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kernelzero.generation.base import Chat, Completion, GenerationError, SamplingConfig, check_request

INSTALL_HINT = "the vllm backend needs the `vllm` extra on a CUDA machine: pip install 'kernelzero[vllm]'"


class VLLMPolicy:
    """A local model in vLLM's offline engine. `engine_options` go to `vllm.LLM` (tensor_parallel_size, ...)."""

    def __init__(self, path: str | Path, **engine_options: Any):
        try:
            import vllm
        except ImportError as e:
            raise GenerationError(f"{INSTALL_HINT} ({e})") from None
        if not Path(path).exists():
            raise GenerationError(f"no model directory at {path} (local weights only; nothing is downloaded)")
        self.name = str(path)
        self._vllm = vllm
        self._llm = vllm.LLM(model=str(path), **engine_options)

    def generate(self, prompts: Sequence[Chat], n: int, sampling: SamplingConfig) -> list[list[Completion]]:
        check_request(prompts, n)
        params = self._vllm.SamplingParams(**vllm_sampling_options(n, sampling))
        outputs = self._llm.chat(list(prompts), params, use_tqdm=False)
        return [
            [
                Completion(text=o.text, finish_reason=o.finish_reason or "length", tokens=len(o.token_ids))
                for o in request.outputs
            ]
            for request in outputs
        ]


def vllm_sampling_options(n: int, sampling: SamplingConfig) -> dict[str, Any]:
    """`vllm.SamplingParams` keyword arguments for a `SamplingConfig` (vLLM's top_k uses -1 for off)."""
    options: dict[str, Any] = {
        "n": n,
        "temperature": sampling.temperature,
        "top_p": sampling.top_p,
        "top_k": sampling.top_k or -1,
        "max_tokens": sampling.max_new_tokens,
        "seed": sampling.seed,
    }
    if sampling.stop:
        options["stop"] = list(sampling.stop)
    return options
