"""The tiny local model: what it is made of, that it loads like any checkpoint, and that the cached build is safe."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kernelzero.generation import tiny


def test_tiny_model_is_a_qwen2_with_its_own_tokens(tiny_model_dir: Path):
    from transformers import AutoConfig, AutoTokenizer

    config = AutoConfig.from_pretrained(tiny_model_dir)
    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    assert config.model_type == "qwen2" and config.num_hidden_layers == 2 and config.hidden_size == 64
    assert config.vocab_size == len(tok) == tiny.VOCAB_SIZE
    assert tok.eos_token == "<|im_end|>" and tok.pad_token == "<|pad|>" and tok.pad_token_id != tok.eos_token_id
    assert config.eos_token_id == tok.eos_token_id and config.pad_token_id == tok.pad_token_id
    info = json.loads((tiny_model_dir / "build_info.json").read_text())
    assert info["tiny_version"] == tiny.TINY_VERSION and info["seed"] == 0


def test_chat_template_is_chatml_with_assistant_mask(tiny_model_dir: Path):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    chat = [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]
    text = tok.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
    assert text == "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n"
    full = chat + [{"role": "assistant", "content": "def f(): pass"}]
    enc = tok.apply_chat_template(full, tokenize=True, return_dict=True, return_assistant_tokens_mask=True)
    answer = [t for t, m in zip(enc["input_ids"], enc["assistant_masks"], strict=True) if m]
    assert tok.decode(answer) == "def f(): pass<|im_end|>"


def test_tokenizer_as_loaded_matches_tokenizer_as_trained(tiny_model_dir: Path):
    """transformers rebuilds a Qwen2 tokenizer's pipeline at load time; ours was trained with the same one."""
    from tokenizers import Tokenizer
    from transformers import AutoTokenizer

    loaded = AutoTokenizer.from_pretrained(tiny_model_dir)
    trained = Tokenizer.from_file(str(tiny_model_dir / "tokenizer.json"))
    text = "import torch\n\n@triton.jit\ndef k(x_ptr, BLOCK: tl.constexpr):  # café ≥ 2\n    pass\n<|im_end|>"
    ids = loaded(text, add_special_tokens=False).input_ids
    assert ids == trained.encode(text).ids
    assert loaded.decode(ids) == text
    assert len(ids) < len(text) / 2  # merges learned from code actually compress code


def test_built_model_is_reused_not_rebuilt(tiny_model_dir: Path, monkeypatch):
    def boom(out):
        raise AssertionError("rebuilt an existing tiny model")

    monkeypatch.setattr(tiny, "build_tiny_model", boom)
    assert tiny.tiny_model_path(tiny_model_dir.parent) == tiny_model_dir
    monkeypatch.setenv("KERNELZERO_CACHE", str(tiny_model_dir.parent))
    assert tiny.tiny_model_path() == tiny_model_dir


def test_cache_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv("KERNELZERO_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert tiny.default_cache_dir() == tmp_path / "kernelzero"
    monkeypatch.setenv("KERNELZERO_CACHE", str(tmp_path / "kz"))
    assert tiny.default_cache_dir() == tmp_path / "kz"


# Two processes race to build the same target with a slow builder that logs each run.
RACE = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from kernelzero.generation.tiny import build_once
    target, log = Path(sys.argv[1]), Path(sys.argv[2])
    def build(out):
        with open(log, "a") as f:
            f.write("built\\n")
        time.sleep(1.0)
        (out / "weights").write_text("w")
    print(build_once(target, build))
    """
)


def test_concurrent_builds_run_once(tmp_path: Path):
    target, log = tmp_path / "cache" / "model", tmp_path / "log"
    src = str(Path(tiny.__file__).parents[1])
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", RACE, str(target), str(log)],
            stdout=subprocess.PIPE,
            text=True,
            env={"PYTHONPATH": src, "PATH": ""},
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=60)[0].strip() for p in procs]
    assert [p.returncode for p in procs] == [0, 0]
    assert outs == [str(target), str(target)]
    assert log.read_text() == "built\n"
    assert (target / "weights").read_text() == "w" and (target / ".complete").exists()
    assert sorted(p.name for p in target.parent.iterdir()) == [".model.lock", "model"]  # no temp dirs left


def test_incomplete_leftover_is_replaced_and_failed_build_leaves_nothing(tmp_path: Path):
    target = tmp_path / "model"
    target.mkdir()
    (target / "half-written").write_text("")

    def failing(out):
        (out / "partial").write_text("")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        tiny.build_once(target, failing)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".model.lock", "model"]  # the temp dir is gone

    tiny.build_once(target, lambda out: (out / "weights").write_text("w"))
    assert sorted(p.name for p in target.iterdir()) == [".complete", "weights"]
