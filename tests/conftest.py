"""Shared fixtures. GPU tests are marked `gpu` and skipped by default (see pyproject's addopts)."""

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny local model (`kernelzero.generation.tiny`), built once per test session into a private cache directory.

    `tiny_model_dir.parent` is that cache: point `$KERNELZERO_CACHE` at it to make `tiny_model_path()` reuse it.
    """
    from kernelzero.generation.tiny import tiny_model_path

    return tiny_model_path(tmp_path_factory.mktemp("kernelzero-cache"))


@pytest.fixture(scope="module")
def torch_one_thread():
    """Run a module's tiny-model work on one CPU thread (restored afterwards).

    On a shared 2-core box, torch's two intra-op threads contend with other processes: one tiny-model generation
    measured 1.5 s on one thread and 49 s on two under a load average of 8.
    """
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
