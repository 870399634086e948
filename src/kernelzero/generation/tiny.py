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


def build_tiny_model(out_dir: str | Path, seed: int = 0) -> Path:
    """Train the tokenizer, initialise the model, and `save_pretrained` both into `out_dir`. About 5 s on 2 cores."""
    import torch
    import transformers
    from transformers import GenerationConfig, PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    texts = _code_corpus(seed)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=_train_bpe(texts),
        eos_token=EOS,
        pad_token=PAD,
        additional_special_tokens=[IM_START, ENDOFTEXT],
        model_max_length=MAX_POSITIONS,
        chat_template=CHAT_TEMPLATE,
    )
    eos_id, pad_id = tokenizer.convert_tokens_to_ids(EOS), tokenizer.convert_tokens_to_ids(PAD)

    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=MAX_POSITIONS,
        tie_word_embeddings=False,  # the EOS bias below needs an LM head of its own
        bos_token_id=None,
        eos_token_id=eos_id,
        pad_token_id=pad_id,
        dtype="float32",
    )
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(config).eval()
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
    info = {
        "tiny_version": TINY_VERSION,
        "seed": seed,
        "vocab_size": len(tokenizer),
        "eos_mean_tokens": EOS_MEAN_TOKENS,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
    }
    (out / "build_info.json").write_text(json.dumps(info, indent=2) + "\n")
    return out


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


def _train_bpe(texts: list[str]):
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
        vocab_size=VOCAB_SIZE,
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
