"""The judge's reference cache is bounded: least recently used tasks are dropped past `reference_cache_gb`."""

import torch

from kernelzero.judge.core import Judge, Reference
from kernelzero.judge.options import JudgeOptions


def _ref(n_floats: int) -> Reference:
    ref = Reference(init_seed=0, seeds=[1], timing_seeds=[])
    ref.outputs = [[torch.zeros(n_floats)]]
    ref.replay_outputs = [[torch.zeros(n_floats)]]
    return ref


def test_nbytes_counts_outputs_replays_and_timed_outputs():
    ref = _ref(256)
    ref.timed_outputs = [("tensor", [torch.zeros(128)]), ("tensor", [None])]
    assert ref.nbytes == (256 + 256 + 128) * 4


def test_least_recently_used_references_are_dropped_past_the_budget():
    judge = Judge(JudgeOptions(device="cpu", reference_cache_gb=3 * 2048 * 4 / 2**30))  # room for three of _ref(1024)
    for key in "abcd":
        judge._refs[key] = _ref(1024)  # 8 KiB each
    judge._refs.move_to_end("a")  # `a` was just used: `b` is now the oldest
    judge._evict()
    assert list(judge._refs) == ["c", "d", "a"]


def test_one_reference_is_kept_whatever_its_size():
    judge = Judge(JudgeOptions(device="cpu", reference_cache_gb=1e-9))
    judge._refs["big"] = _ref(1 << 16)
    judge._evict()
    assert list(judge._refs) == ["big"]
