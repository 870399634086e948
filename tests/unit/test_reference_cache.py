"""The judge's reference cache is bounded: least recently used tasks are dropped past `reference_cache_gb`."""

import gc

import torch

from kernelzero.judge.core import Judge, Reference
from kernelzero.judge.footprint import MemoryGate
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


def test_one_reference_on_the_gpu_is_kept_whatever_its_size_but_not_one_in_host_memory():
    """Idle references never hold more host memory than the budget: a 30 GB one in host memory lives only while its
    candidates are judged; the newest on the GPU (a budget of its own there) stays."""
    judge = Judge(JudgeOptions(device="cpu", reference_cache_gb=1e-9))
    judge._refs["big"] = _ref(1 << 16)
    judge._evict()
    assert list(judge._refs) == []
    judge._refs["big"] = ref = _ref(1 << 16)
    ref.on_device = True
    judge._evict()
    assert list(judge._refs) == ["big"]


def test_references_live_on_the_compare_device_while_they_fit_its_budget():
    """`_keep` moves a reference's tensors to the compare device up to `reference_device_gb` (the meta device
    stands in for a GPU here) and holds their bytes in the admission gate; the rest stay in host memory, held there.
    A reference gives its bytes back when it is gone (evicted and no longer used by any candidate)."""
    size = 2 * 1024 * 4  # _ref(1024): outputs and replays, 8 KiB
    judge = Judge(JudgeOptions(device="cpu", reference_cache_gb=3 * size / 2**30))
    judge.compare_device = "meta"
    gate = MemoryGate({"gpu": 1 << 30, "refs:gpu": 2 * size, "host": 1 << 30})
    judge.set_gate(gate, "gpu")
    refs = {key: _ref(1024) for key in "abc"}
    refs["a"].timed_outputs = [("tensor", [])]
    for key, ref in refs.items():
        judge._keep(ref)
        judge._refs[key] = ref
    assert [r.on_device for r in refs.values()] == [True, True, False]
    assert refs["a"].outputs[0][0].device.type == "meta" and refs["a"].replay_outputs[0][0].device.type == "meta"
    assert refs["c"].outputs[0][0].device.type == "cpu"
    assert gate.held == {"gpu": 0, "refs:gpu": 2 * size, "host": 0}  # host: bounded by the cache, not the gate
    judge._refs["d"] = d = _ref(1024)
    judge._keep(d)  # the GPU budget is full: the references there leave the cache, oldest first, to make room
    assert list(judge._refs) == ["c", "d"]
    assert not d.on_device  # candidates may still be judged against `a` and `b`: their bytes stay held meanwhile
    del refs
    gc.collect()
    assert gate.held["refs:gpu"] == 0  # `a` and `b` are gone: their device bytes are back
    judge._keep(d)
    assert d.on_device and gate.held["refs:gpu"] == size


def test_no_reference_moves_when_outputs_are_compared_on_the_cpu():
    judge = Judge(JudgeOptions(device="cpu"))
    ref = _ref(16)
    judge._keep(ref)
    assert not ref.on_device and ref.outputs[0][0].device.type == "cpu"
    assert judge.gate().held["host"] == 0
