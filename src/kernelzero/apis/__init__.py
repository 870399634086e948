"""API vocabulary, usage extraction, co-occurrence mining and API-set sampling (the Proposer's prompts).

Read in this order: `vocab` (the kernel-worthy ops and their spellings), `extract` (which APIs a module uses,
with `names` resolving imports and scalars for it), `mine` (co-occurrence counts over real model code),
`sample` (pairs and triples drawn from those counts). All of it is pure Python over `ast`: nothing is imported
or executed from the code it reads, and importing this package does not import torch.
"""

from __future__ import annotations

from collections.abc import Iterable

from kernelzero.apis.extract import extract_apis, extract_classes
from kernelzero.apis.mine import CoOccurrence, load_cooccurrence, mine, save_cooccurrence
from kernelzero.apis.sample import SamplerConfig, SampleSummary, sample_api_sets, summarize
from kernelzero.apis.vocab import ALIASES, CATEGORIES, VOCABULARY, category, to_vocab, vocab_apis

__all__ = [
    "ALIASES", "CATEGORIES", "VOCABULARY", "CoOccurrence", "SampleSummary", "SamplerConfig", "category",
    "extract_apis", "extract_classes", "load_cooccurrence", "mine", "missing_apis", "sample_api_sets",
    "save_cooccurrence", "summarize", "to_vocab", "vocab_apis",
]  # fmt: skip


def missing_apis(source: str, required: Iterable[str], class_name: str = "Model") -> tuple[str, ...]:
    """The APIs of `required` that class `class_name` does not use, in any spelling (the Proposer's usage check).

    `required` holds vocabulary entries or any of their spellings; a name outside the vocabulary must appear
    verbatim among the extracted names. `F.relu` is satisfied by `nn.ReLU()`, `torch.relu(x)` or `x.relu()`.
    """
    used = extract_apis(source, class_name)
    used_entries = set(vocab_apis(used)) | set(used)
    return tuple(name for name in required if (to_vocab(name) or name) not in used_entries)
