"""The Hugging Face `transformers` backend: local weights, the tokenizer's chat template, batched sampling.

Loads strictly from a local directory (nothing is downloaded). Rows (prompt x sample) are generated in batches of
`batch_size` with left padding; each row stops at the model's EOS or at a stop string, and reports `length` when it
ran into `max_new_tokens`. This is the reference backend: slow next to vLLM, but it runs anywhere torch does.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from kernelzero.generation.base import Chat, Completion, GenerationError, SamplingConfig, check_request, cut_at_stop


class HFPolicy:
    """A local causal LM served through `model.generate`."""

    def __init__(self, path: str | Path, *, device: str = "auto", dtype: str = "auto", batch_size: int = 16):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        path = Path(path)
        if not (path / "config.json").is_file():
            raise GenerationError(
                f"no model at {path}: expected a directory with config.json (local weights only; nothing is downloaded)"
            )
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.name = str(path)
        self.device = device
        self.batch_size = batch_size
        self.tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        if not self.tokenizer.chat_template:
            raise GenerationError(f"the tokenizer at {path} has no chat template, so chats cannot be formatted")
        self.tokenizer.padding_side = "left"  # generation appends on the right, so prompts must end flush
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype, local_files_only=True).to(device).eval()
        eos = self.model.generation_config.eos_token_id
        if eos is None:
            eos = self.tokenizer.eos_token_id
        self.eos_ids = set(eos if isinstance(eos, list) else [eos])

    def format(self, chat: Chat) -> str:
        """The prompt text the model sees: the chat template with the assistant turn opened."""
        return self.tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)

    def generate(self, prompts: Sequence[Chat], n: int, sampling: SamplingConfig) -> list[list[Completion]]:
        import torch

        check_request(prompts, n)
        if sampling.seed is not None:
            torch.manual_seed(sampling.seed)  # seeds the CUDA generators too
        texts = [self.format(chat) for chat in prompts]
        rows = [i for i in range(len(texts)) for _ in range(n)]  # prompt index of each generated row
        out: list[list[Completion]] = [[] for _ in texts]
        for start in range(0, len(rows), self.batch_size):
            chunk = rows[start : start + self.batch_size]
            for i, completion in zip(chunk, self._generate_batch([texts[i] for i in chunk], sampling), strict=True):
                out[i].append(completion)
        return out

    def _generate_batch(self, texts: list[str], sampling: SamplingConfig) -> list[Completion]:
        import torch

        enc = self.tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(self.device)
        kwargs = {
            "max_new_tokens": sampling.max_new_tokens,
            "do_sample": sampling.temperature > 0,
            "pad_token_id": self.tokenizer.pad_token_id,
            "eos_token_id": sorted(self.eos_ids),
        }
        if sampling.temperature > 0:
            kwargs.update(temperature=sampling.temperature, top_p=sampling.top_p, top_k=sampling.top_k)
        else:  # greedy: unset the sampling knobs a saved generation_config may carry, so transformers does not warn
            kwargs.update(temperature=None, top_p=None, top_k=None)
        if sampling.stop:
            kwargs.update(stop_strings=list(sampling.stop), tokenizer=self.tokenizer)
        with torch.inference_mode():
            generated = self.model.generate(**enc, **kwargs)[:, enc["input_ids"].shape[1] :]  # (B, new)
        return [self._completion(row.tolist(), sampling) for row in generated]

    def _completion(self, ids: list[int], sampling: SamplingConfig) -> Completion:
        end = next((k for k, t in enumerate(ids) if t in self.eos_ids), None)
        if end is not None:
            ids = ids[:end]
        while ids and ids[-1] == self.tokenizer.pad_token_id:  # rows that stopped early are padded to the batch
            ids = ids[:-1]
        text, stopped = cut_at_stop(self.tokenizer.decode(ids, skip_special_tokens=True), sampling.stop)
        reason = "stop" if end is not None or stopped else "length"
        return Completion(text=text, finish_reason=reason, tokens=len(ids))
