"""Shared fixtures. GPU tests are marked `gpu` and skipped by default (see pyproject's addopts)."""

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny local model (`kernelzero.tiny`), built once per test session into a private cache directory.

    `tiny_model_dir.parent` is that cache: point `$KERNELZERO_CACHE` at it to make `tiny_model_path()` reuse it.
    """
    from kernelzero.tiny import tiny_model_path

    return tiny_model_path(tmp_path_factory.mktemp("kernelzero-cache"))
