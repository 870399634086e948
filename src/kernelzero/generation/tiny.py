"""The tiny local model: a randomly initialised Qwen2 causal LM with a locally trained byte-level BPE tokenizer.

It stands in for a real policy wherever no weights can be downloaded (CI, unit tests, the CPU quick start): every
backend and trainer loads it by path exactly as it would load Qwen2.5-Coder. Nothing here touches the network.

Recipe (bump `TINY_VERSION` when any of it changes, so cached copies are rebuilt):
- tokenizer: byte-level BPE (`tokenizers`), 4,096 entries, trained on a bounded, seeded sample of the `.py` sources
  of the installed `torch` and `transformers` packages; ChatML special tokens; its own pad token; a ChatML chat
  template whose assistant turns are wrapped in `{% generation %}` so SFT can mask everything but the answer.
- model: Qwen2, 2 layers, hidden size 64, untied embeddings, fp32: a forward pass over a few thousand tokens takes
  milliseconds on one CPU core.
- EOS is reachable: a random model's next-token distribution is nearly uniform, so it would emit `<|im_end|>` about
  once in 4,096 tokens and every completion would run to `max_new_tokens`. We add a constant channel to the token
  embeddings and read it only in the `<|im_end|>` row of the LM head, which gives EOS a constant logit, bisected so
  that plain sampling (top_k off, as saved in `generation_config.json`) picks it about once per `EOS_MEAN_TOKENS`
  steps. The other logits are spread (`LOGIT_SPREAD`) so that EOS is likely without being the argmax: greedy decoding
  still produces text (and runs to the cap). Completions therefore stop at varied lengths, which is what trainers'
  masking and the parsers' "truncated" paths need to see; generation must still cap `max_new_tokens`.

The tokenizer (and so the model) depends on the installed torch/transformers sources; `build_info.json` records them.
"""

from __future__ import annotations

import fcntl
import json
import os
import random
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

TINY_VERSION = 1
VOCAB_SIZE = 4096
CORPUS_BYTES = 3_000_000  # enough for stable merges; trains in about a second on 2 cores
EOS_MEAN_TOKENS = 48  # mean completion length the EOS calibration aims at
LOGIT_SPREAD = 80.0  # scales the LM head's init (std 0.02) so logits spread by about 2 nats across the vocabulary
MAX_POSITIONS = 16384  # coder prompts with a worked example run to a few thousand tokens

EOS, IM_START, ENDOFTEXT, PAD = "<|im_end|>", "<|im_start|>", "<|endoftext|>", "<|pad|>"
SPECIAL_TOKENS = [ENDOFTEXT, IM_START, EOS, PAD]
QWEN2_PRETOKENIZE_REGEX = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""  # noqa: E501

# ChatML, as Qwen2 uses it. `{% generation %}` marks what the assistant wrote (return_assistant_tokens_mask).
CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{%- if message['role'] == 'assistant' %}"
    "{{- '<|im_start|>assistant\\n' }}{% generation %}{{- message['content'] + '<|im_end|>' }}{% endgeneration %}"
    "{{- '\\n' }}"
    "{%- else %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)


def default_cache_dir() -> Path:
    """`$KERNELZERO_CACHE`, else `$XDG_CACHE_HOME/kernelzero`, else `~/.cache/kernelzero`."""
    if os.environ.get("KERNELZERO_CACHE"):
        return Path(os.environ["KERNELZERO_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "kernelzero"


def tiny_model_path(cache_dir: str | Path | None = None) -> Path:
    """The tiny model's directory, built on first use into the cache and reused afterwards (safe across processes)."""
    root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    return build_once(root / f"tiny-v{TINY_VERSION}", lambda out: build_tiny_model(out))


def build_once(target: Path, build: Callable[[Path], object]) -> Path:
    """Run `build(tmp_dir)` once and move the result to `target` atomically; later callers reuse `target`.

    A file lock keeps concurrent processes from doing the work twice; the build goes to a temporary sibling and is
    renamed into place, so a process killed mid-build never leaves a half-written `target` that looks complete.
    """
    if (target / ".complete").exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if this process dies
        if (target / ".complete").exists():
            return target
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
        try:
            build(tmp)
            (tmp / ".complete").write_text("")
            if target.exists():  # an incomplete leftover from a build that died before its rename
                shutil.rmtree(target)
            os.rename(tmp, target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return target


@dataclass(frozen=True)
class ModelShape:
    """The Qwen2 decoder's sizes; the defaults are the tiny model's. The learning study builds larger ones."""

    hidden_size: int = 64
    intermediate_size: int = 128
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    max_position_embeddings: int = MAX_POSITIONS


def build_tiny_model(out_dir: str | Path, seed: int = 0) -> Path:
    """Train the tokenizer, initialise the model, and `save_pretrained` both into `out_dir`. About 5 s on 2 cores."""
    texts = _code_corpus(seed)
    return build_local_model(out_dir, texts, ModelShape(), seed=seed, vocab_size=VOCAB_SIZE, eos_reachable=True,
                             info={"tiny_version": TINY_VERSION, "eos_mean_tokens": EOS_MEAN_TOKENS})  # fmt: skip


def build_local_model(out_dir: str | Path, texts: list[str], shape: ModelShape, *, seed: int = 0,
                      vocab_size: int = VOCAB_SIZE, eos_reachable: bool = False, info: dict | None = None,
                      tokenizer=None) -> Path:  # fmt: skip
    """A randomly initialised Qwen2 causal LM of `shape` with a byte-level BPE tokenizer trained on `texts` (or the
    given `PreTrainedTokenizerFast`), saved with `save_pretrained` into `out_dir`. Nothing is downloaded.

    `eos_reachable` calibrates EOS for a model that is sampled untrained (the tiny model); a model that is fine-tuned
    before it is sampled learns EOS from its data and is left as initialised."""
    import torch
    import transformers
    from transformers import GenerationConfig, Qwen2Config, Qwen2ForCausalLM

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if tokenizer is None:
        tokenizer = train_tokenizer(texts, vocab_size, shape.max_position_embeddings)
    eos_id, pad_id = tokenizer.convert_tokens_to_ids(EOS), tokenizer.convert_tokens_to_ids(PAD)

    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=shape.hidden_size,
        intermediate_size=shape.intermediate_size,
        num_hidden_layers=shape.num_hidden_layers,
        num_attention_heads=shape.num_attention_heads,
        num_key_value_heads=shape.num_key_value_heads,
        max_position_embeddings=shape.max_position_embeddings,
        tie_word_embeddings=False,  # the EOS bias below needs an LM head of its own
        bos_token_id=None,
        eos_token_id=eos_id,
        pad_token_id=pad_id,
        dtype="float32",
    )
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(config).eval()
    if eos_reachable:
        _make_eos_reachable(model, tokenizer, texts[0][:2000], eos_id)
    model.generation_config = GenerationConfig(
        eos_token_id=[eos_id, tokenizer.convert_tokens_to_ids(ENDOFTEXT)],
        pad_token_id=pad_id,
        do_sample=True,
        top_k=0,  # transformers' default top_k=50 would turn the calibrated 1/48 EOS rate into about 1/2
        top_p=1.0,
        max_new_tokens=256,
    )
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    record = {**(info or {}), "seed": seed, "vocab_size": len(tokenizer), "shape": asdict(shape),
              "torch": torch.__version__, "transformers": transformers.__version__}  # fmt: skip
    (out / "build_info.json").write_text(json.dumps(record, indent=2) + "\n")
    return out


def train_tokenizer(texts: list[str], vocab_size: int = VOCAB_SIZE, max_length: int = MAX_POSITIONS):
    """A `PreTrainedTokenizerFast`: byte-level BPE trained on `texts`, ChatML special tokens, its own pad token, the
    ChatML chat template with `{% generation %}` around assistant turns."""
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(
        tokenizer_object=_train_bpe(texts, vocab_size),
        eos_token=EOS,
        pad_token=PAD,
        additional_special_tokens=[IM_START, ENDOFTEXT],
        model_max_length=max_length,
        chat_template=CHAT_TEMPLATE,
    )


def _code_corpus(seed: int) -> list[str]:
    """A seeded sample of installed library sources, at most `CORPUS_BYTES` characters in all."""
    import torch
    import transformers

    files: list[Path] = []
    for pkg in (torch, transformers):
        files += sorted(Path(pkg.__file__).parent.rglob("*.py"))
    random.Random(seed).shuffle(files)
    texts: list[str] = []
    total = 0
    for f in files:
        text = f.read_text(encoding="utf-8", errors="ignore")
        if not text.strip() or total + len(text) > CORPUS_BYTES:
            continue
        texts.append(text)
        total += len(text)
        if total > 0.95 * CORPUS_BYTES:
            break
    if total < 100_000:
        raise RuntimeError(f"found only {total} characters of .py sources under torch/transformers to train on")
    return texts


def _train_bpe(texts: list[str], vocab_size: int = VOCAB_SIZE):
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    # Qwen2's exact pipeline: transformers rebuilds it from `config.json` (model_type qwen2) when it loads the
    # tokenizer, so training with anything else would tokenize differently at load time than at training time.
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(QWEN2_PRETOKENIZE_REGEX), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer)
    return tok


def _make_eos_reachable(model, tokenizer, sample: str, eos_id: int) -> None:
    """Give EOS a constant logit, calibrated so it is sampled about once per `EOS_MEAN_TOKENS` steps."""
    import torch

    emb, head = model.get_input_embeddings().weight, model.get_output_embeddings().weight
    with torch.no_grad():
        emb[:, 0] = 1.0  # a constant channel (init std is 0.02, so it dominates the final RMSNorm output)
        head[:, 0] = 0.0
        head[:, 1:] *= LOGIT_SPREAD  # spread the other logits, so EOS is likely without being every argmax
        head[eos_id] = 0.0
        ids = tokenizer(sample, return_tensors="pt").input_ids[:, :512]
        final = model(ids, output_hidden_states=True).hidden_states[-1][0]  # (T, H), after the final norm
        rest = torch.logsumexp(final @ head.T, dim=-1)  # (T,): log of the non-EOS mass (EOS row is 0 here)
        target = 1.0 / EOS_MEAN_TOKENS
        lo, hi = -50.0, 50.0
        for _ in range(60):  # bisect the EOS logit m: mean_t sigmoid(m - rest_t) == target
            m = (lo + hi) / 2
            lo, hi = (m, hi) if torch.sigmoid(m - rest).mean().item() < target else (lo, m)
        head[eos_id, 0] = m / final[:, 0].mean().item()
