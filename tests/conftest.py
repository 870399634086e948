"""Shared fixtures. GPU tests are marked `gpu` and skipped by default (see pyproject's addopts)."""

import pytest

from support import build_tiny_test_model


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    """A tiny Qwen2 + locally trained tokenizer (tests/support.py), built once per session. Replace with
    `kernelzero.tiny.build_tiny_model` when branch `policies` lands."""
    return build_tiny_test_model(tmp_path_factory.mktemp("tiny-model"))
