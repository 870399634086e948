"""The study's from-scratch models: a byte-level BPE tokenizer trained on the study's own text, and two small Qwen2
decoders (Coder and Proposer) initialised from a config. Nothing is downloaded and no weights are committed.

Why from scratch: no pretrained code model can be had here, and a model that already writes kernels would hide
whether the loop teaches anything. The tokenizer is trained on what the models will read and write (family tasks,
writer solutions, and the two roles' prompts with their rules and worked examples), so a prompt of about 4,000
characters is a few hundred tokens and a small model's context holds prompt and answer. The builder is the tiny
model's (`generation.tiny.build_local_model`), with the study's sizes: one recipe, two shapes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kernelzero.generation.tiny import ModelShape, build_local_model, build_once, train_tokenizer
from kernelzero.roles.coder import coder_messages
from kernelzero.roles.proposer import proposer_messages
from kernelzero.study.family import FamilyTask
from kernelzero.study.writer import write_solution

ROLES = ("coder", "proposer")


@dataclass(frozen=True)
class StudyModelConfig:
    """Sizes of the study's tokenizer and of both roles' decoders (the two roles share the shape and tokenizer)."""

    vocab_size: int = 2048
    """BPE vocabulary, special tokens included: the study's text is narrow, so a small vocabulary suffices."""
    shape: ModelShape = field(default_factory=lambda: ModelShape(hidden_size=512, intermediate_size=1536,
                                                                 num_hidden_layers=8, num_attention_heads=8,
                                                                 num_key_value_heads=4,
                                                                 max_position_embeddings=4096))  # fmt: skip
    """The decoder: about 25M parameters by default, which fine-tunes on the corpus in minutes on one H200."""


def smoke_models() -> StudyModelConfig:
    """The smoke test's sizes: the tiny model's shape and a 512-entry vocabulary (seconds on a CPU)."""
    return StudyModelConfig(vocab_size=512, shape=ModelShape(max_position_embeddings=4096))


def tokenizer_texts(tasks: Sequence[FamilyTask], solutions: Sequence[str] = (), brief: bool = False) -> list[str]:
    """What the tokenizer is trained on: every task source, every solution, and the prompts both roles read (in
    full, their rules and worked examples are most of each prompt's characters; `brief` prompts are short)."""
    texts = [t.source for t in tasks] + list(solutions)
    texts += [m["content"] for t in tasks[:4] for m in coder_messages(t.source, "triton", brief=brief)]
    texts += [m["content"] for t in tasks[:4] for m in proposer_messages(t.apis, brief=brief)]
    texts += [write_solution(t) for t in tasks[:4]]
    return texts


def build_models(out: str | Path, texts: Sequence[str], config: StudyModelConfig, seed: int = 0) -> dict[str, Path]:
    """Train the tokenizer on `texts` and initialise one decoder per role (different init seeds), each saved with
    its tokenizer under `out/<role>-init`; built once (a finished folder is reused). Returns role -> folder."""
    out = Path(out)
    tokenizer = None
    paths = {}
    for i, role in enumerate(ROLES):
        def build(tmp: Path, i: int = i, role: str = role) -> None:
            nonlocal tokenizer
            if tokenizer is None:
                tokenizer = train_tokenizer(list(texts), config.vocab_size, config.shape.max_position_embeddings)
            build_local_model(tmp, [], config.shape, seed=seed * 2 + i, tokenizer=tokenizer,
                              info={"study_role": role})  # fmt: skip

        paths[role] = build_once(out / f"{role}-init", build)
    return paths


__all__ = ["ROLES", "StudyModelConfig", "build_models", "smoke_models", "tokenizer_texts"]
