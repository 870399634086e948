"""The transformers backend on the tiny model, and turning model specs into backends."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelzero.generation import GenerationError, SamplingConfig, load_policy, parse_model_spec
from kernelzero.generation.vllm import vllm_sampling_options

CHATS = [
    [{"role": "system", "content": "You write kernels."}, {"role": "user", "content": "Fuse add and relu."}],
    [{"role": "user", "content": "Hello"}],
]


@pytest.fixture(scope="module")
def tiny_policy(tiny_model_dir: Path):
    from kernelzero.generation.hf import HFPolicy

    return HFPolicy(tiny_model_dir, device="cpu", batch_size=4)


def test_n_completions_per_prompt_capped_in_length(tiny_policy):
    out = tiny_policy.generate(CHATS, n=3, sampling=SamplingConfig(max_new_tokens=24, seed=0))
    assert [len(row) for row in out] == [3, 3]
    for c in (c for row in out for c in row):
        assert 0 <= c.tokens <= 24 and isinstance(c.text, str)
        assert c.finish_reason == ("length" if c.tokens == 24 else "stop")


def test_seeded_sampling_is_reproducible_and_seeds_differ(tiny_policy):
    s0 = SamplingConfig(max_new_tokens=16, seed=0)
    first = tiny_policy.generate(CHATS, n=2, sampling=s0)
    assert tiny_policy.generate(CHATS, n=2, sampling=s0) == first
    assert tiny_policy.generate(CHATS, n=2, sampling=SamplingConfig(max_new_tokens=16, seed=1)) != first


def test_eos_is_reachable_so_completions_stop_at_varied_lengths(tiny_policy):
    out = tiny_policy.generate(CHATS[:1], n=16, sampling=SamplingConfig(max_new_tokens=200, seed=0))[0]
    lengths = [c.tokens for c in out if c.finish_reason == "stop"]
    assert len(lengths) >= 12  # EOS has probability ~1/48 per step: P(no EOS in 200 steps) is ~1.5%
    assert len(set(lengths)) >= 6


def test_greedy_is_deterministic_and_not_empty(tiny_policy):
    out = tiny_policy.generate(CHATS[:1], n=2, sampling=SamplingConfig(max_new_tokens=12, temperature=0))[0]
    assert out[0] == out[1] and out[0].text and out[0].tokens == 12


def test_stop_strings_end_the_completion_and_are_cut(tiny_policy):
    free = tiny_policy.generate(CHATS[:1], n=8, sampling=SamplingConfig(max_new_tokens=40, seed=3))[0]
    text = next(c.text for c in free if len(c.text) > 6)
    stop = text[3:5]  # a string the unconstrained sample produced
    out = tiny_policy.generate(CHATS[:1], n=8, sampling=SamplingConfig(max_new_tokens=40, seed=3, stop=(stop,)))[0]
    assert all(stop not in c.text for c in out)
    assert any(c.finish_reason == "stop" and c.tokens < 40 for c in out)


def test_batches_are_filled_in_prompt_order(tiny_model_dir, tiny_policy):
    from kernelzero.generation.hf import HFPolicy

    one_by_one = HFPolicy(tiny_model_dir, device="cpu", batch_size=1)
    greedy = SamplingConfig(max_new_tokens=8, temperature=0)
    assert one_by_one.generate(CHATS, n=2, sampling=greedy) == tiny_policy.generate(CHATS, n=2, sampling=greedy)


def test_bad_requests_are_clear(tiny_policy, tmp_path):
    with pytest.raises(ValueError, match="n must be >= 1"):
        tiny_policy.generate(CHATS, n=0, sampling=SamplingConfig())
    with pytest.raises(ValueError, match=r"prompts\[1\] must be a non-empty list"):
        tiny_policy.generate([CHATS[0], []], n=1, sampling=SamplingConfig())
    with pytest.raises(GenerationError, match="no model at .*config.json"):
        load_policy(str(tmp_path), device="cpu")
    with pytest.raises(GenerationError, match="no model directory at /nowhere"):
        load_policy("/nowhere")


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"temperature": -1}, "temperature must be >= 0"),
        ({"top_p": 0}, r"top_p must be in \(0, 1\]"),
        ({"top_k": -2}, "top_k must be >= 0"),
        ({"max_new_tokens": 0}, "max_new_tokens must be >= 1"),
    ],
)
def test_sampling_config_names_the_bad_field(kwargs, message):
    with pytest.raises(ValueError, match=message):
        SamplingConfig(**kwargs)


def test_model_specs():
    assert parse_model_spec(None) == ("tiny", {})
    assert parse_model_spec("/models/qwen") == ("hf", {"path": "/models/qwen"})
    assert parse_model_spec("vllm:/models/qwen") == ("vllm", {"path": "/models/qwen"})
    assert parse_model_spec("openai:gpt-4o@https://api.openai.com/v1") == (
        "openai",
        {"model": "gpt-4o", "base_url": "https://api.openai.com/v1"},
    )
    with pytest.raises(ValueError, match="must look like openai:MODEL@http"):
        parse_model_spec("openai:gpt-4o")
    with pytest.raises(ValueError, match="needs a path"):
        parse_model_spec("vllm:")


def test_openai_spec_reads_the_key_from_the_environment(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    policy = load_policy("openai:m@http://127.0.0.1:9/v1")
    assert policy.api_key == "sk-test" and policy.url == "http://127.0.0.1:9/v1/chat/completions"


def test_vllm_backend_without_vllm_names_the_extra():
    try:
        import vllm  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("vllm is installed here")
    with pytest.raises(GenerationError, match=r"needs the `vllm` extra.*pip install 'kernelzero\[vllm\]'"):
        load_policy("vllm:/models/qwen")


def test_vllm_sampling_options():
    s = SamplingConfig(temperature=0.7, top_p=0.9, max_new_tokens=99, seed=5, stop=("```\n",))
    assert vllm_sampling_options(4, s) == {
        "n": 4,
        "temperature": 0.7,
        "top_p": 0.9,
        "top_k": -1,
        "max_tokens": 99,
        "seed": 5,
        "stop": ["```\n"],
    }
