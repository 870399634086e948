"""Test-only helpers: a tiny Qwen2 model with a locally trained tokenizer, and scripted fakes of the judge.

TEST FIXTURES ONLY. `build_tiny_test_model` stands in for `kernelzero.tiny.build_tiny_model` until branch `policies`
lands; `ScriptedJudge` returns verdicts chosen by the test, so the rewards TRL sees can be asserted exactly.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from kernelzero.judge.verdict import Verdict
from kernelzero.tasks import Task

CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
_CORPUS = [
    "import torch\nimport torch.nn as nn\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return x\n",
    "```python\nimport triton\n@triton.jit\ndef kernel(x_ptr, n):\n    pass\n```",
    "Rewrite this PyTorch module with custom Triton kernels. Write a KernelBench-format task.",
    "def get_inputs():\n    return [torch.randn(8, 16)]\ndef get_init_inputs():\n    return []\n",
]


def build_tiny_test_model(out_dir: str | Path, seed: int = 0) -> Path:
    """A 2-layer Qwen2 (hidden 64) and a 300-token byte-level BPE trained here, saved with a chat template."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    out = Path(out_dir)
    specials = ["<unk>", "<pad>", "<|im_start|>", "<|im_end|>"]
    bpe = Tokenizer(models.BPE(unk_token="<unk>"))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    bpe.train_from_iterator(_CORPUS * 10, trainer)
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe, unk_token="<unk>", pad_token="<pad>", eos_token="<|im_end|>")
    tok.chat_template = CHAT_TEMPLATE
    cfg = Qwen2Config(
        vocab_size=len(tok),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=1024,
        pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id,
        bos_token_id=None,
        tie_word_embeddings=True,
    )
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(cfg)
    model.generation_config.pad_token_id = tok.pad_token_id
    model.generation_config.eos_token_id = tok.eos_token_id
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


def ok(speedup: float | None) -> Verdict:
    return Verdict(status="ok", correct=True, timed=speedup is not None, speedup_eager=speedup)


def fail(status: str) -> Verdict:
    return Verdict.fail(status, f"scripted {status}")


class ScriptedJudge:
    """A fake judge_fn: the k-th call for task `name` returns `script[name][k]`; every call is recorded.

    Within a batch the trainer starts one judge call per completion in row order, so the k-th call of a task is the
    k-th row of its group; `calls` lets a test check that instead of assuming it.
    """

    def __init__(self, script: dict[str, Sequence[Verdict]]):
        self.script = {k: list(v) for k, v in script.items()}
        self.calls: list[tuple[str, str, str]] = []  # (task name, candidate source, backend)
        self._next: dict[str, int] = defaultdict(int)

    async def __call__(self, task: Task, source: str, backend: str) -> Verdict:
        k = self._next[task.name]
        self._next[task.name] += 1
        self.calls.append((task.name, source, backend))
        return self.script[task.name][k % len(self.script[task.name])]


def accept_any_text(text: str):
    """A parser that takes the whole (random) completion as code, so tiny-model rollouts reach the fake judge."""
    from kernelzero.trainers.prompts import ParsedCode

    return ParsedCode(text)
