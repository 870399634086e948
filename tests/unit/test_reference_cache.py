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


def test_a_big_reference_keeps_its_device_outputs_on_the_gpu_under_its_own_hold_when_the_budget_is_full():
    """A big task's outputs that came over on the GPU stay there, held by the worker's share that `_settle` passes to
    them, when the references' budget cannot take them. Moved to host memory instead, where the gate did not count
    them, KernelBench's 6.4 GB activations filled the H200 machine's 125 GB of host memory in a minute."""
    n = 2 * 1024 * 4  # `_ref(1024)`'s outputs and replays
    judge = Judge(JudgeOptions(device="cpu"))
    judge.device, judge.compare_device = "cuda", "meta"  # the meta device stands in for the GPU
    gate = MemoryGate({"gpu": 100 * n, "refs:gpu": 2 * n, "host": 100 * n})
    judge.set_gate(gate, "gpu")
    others = gate.acquire({"refs:gpu": 3 * n // 2})  # the references already there
    ref = _ref(1024)
    ref.outputs, ref.replay_outputs = [[ref.outputs[0][0].to("meta")]], [[ref.replay_outputs[0][0].to("meta")]]
    ref.lease = {"gpu": 10 * n, "host": 3 * n}
    held = gate.acquire({"gpu": 30 * n, "host": 5 * n})  # the worker (one copy of its outputs) and the lease
    judge._settle(ref, held)
    assert ref.holds == {"gpu": 10 * n + n, "host": 3 * n}  # the lease, and the outputs where they are
    judge._keep(ref)
    assert not ref.on_device and ref.outputs[0][0].device.type == "meta"  # not moved to host memory
    assert gate.held == {"gpu": 11 * n, "refs:gpu": 3 * n // 2, "host": 3 * n}
    gate.release(others)
    del ref, held
    gc.collect()
    gate._drain()
    assert gate.held == {"gpu": 0, "refs:gpu": 0, "host": 0}


def test_a_big_reference_moved_into_the_budget_gives_back_what_held_its_outputs_and_keeps_its_lease():
    n = 2 * 1024 * 4
    judge = Judge(JudgeOptions(device="cpu"))
    judge.device, judge.compare_device = "cuda", "meta"
    gate = MemoryGate({"gpu": 100 * n, "refs:gpu": 4 * n, "host": 100 * n, "big:gpu": 1})
    judge.set_gate(gate, "gpu")
    ref = _ref(1024)  # outputs in host memory (a memfd): the worker's host share passes to them
    ref.lease = {"gpu": 10 * n, "host": 3 * n}
    judge._settle(ref, gate.acquire({"gpu": 30 * n, "host": 5 * n, "big:gpu": 1}))
    assert ref.holds == {"gpu": 10 * n, "host": 3 * n + n, "big:gpu": 1}
    judge._keep(ref)
    assert ref.on_device and ref.holds == {"gpu": 10 * n, "host": 3 * n, "big:gpu": 1}  # the lease and the token
    assert gate.held == {"gpu": 10 * n, "refs:gpu": n, "host": 3 * n, "big:gpu": 1}


def test_a_reference_whose_holds_are_all_returned_counts_against_the_host_budget():
    judge = Judge(JudgeOptions(device="cpu", reference_cache_gb=1e-9))
    judge._refs["given_up"] = ref = _ref(1 << 10)
    ref.holds = {"gpu": 0, "host": 0}  # a big task's lease given back: nothing of it is held in the gate any more
    judge._evict()
    assert list(judge._refs) == []


def test_a_big_references_device_outputs_are_counted_before_its_lease_when_the_need_was_clamped():
    """A need past the GPU's capacity is admitted clamped to it: what the worker held then covers the outputs the
    judge keeps (they exist) before the lease (a reservation its candidate tops up), and `_keep` leaves them where
    they are only when its own hold covers them, not the lease's."""
    n = 2 * 1024 * 4
    judge = Judge(JudgeOptions(device="cpu"))
    judge.device, judge.compare_device = "cuda", "meta"
    gate = MemoryGate({"gpu": 12 * n, "refs:gpu": n // 2, "host": 100 * n})
    judge.set_gate(gate, "gpu")
    others = gate.acquire({"refs:gpu": n // 2})
    ref = _ref(1024)
    ref.outputs, ref.replay_outputs = [[ref.outputs[0][0].to("meta")]], [[ref.replay_outputs[0][0].to("meta")]]
    ref.lease = {"gpu": 12 * n, "host": 3 * n}  # as large as the GPU: with the worker's need, clamped to it
    judge._settle(ref, gate.acquire({"gpu": 30 * n, "host": 5 * n}))
    assert ref.holds == {"gpu": 12 * n, "host": 3 * n} and ref.lease == {"gpu": 11 * n, "host": 3 * n}
    assert judge._own_gpu(ref) == n
    judge._keep(ref)
    assert not ref.on_device and ref.outputs[0][0].device.type == "meta"
    gate.release(others)


def test_a_reference_larger_than_the_device_budget_is_never_held_there_clamped():
    """The gate clamps an amount past a resource's capacity to it: a 38 GB reference taken into the 32 GB budget
    hid 6 GB from admission. One larger than the budget stays under its task's own hold, where its candidates'
    admission counts it, and the references already in the budget are not evicted for it."""
    n = 2 * 1024 * 4
    judge = Judge(JudgeOptions(device="cpu"))
    judge.device, judge.compare_device = "cuda", "meta"
    gate = MemoryGate({"gpu": 100 * n, "refs:gpu": n // 2, "host": 100 * n, "big:gpu": 1})
    judge.set_gate(gate, "gpu")
    judge._refs["small"] = small = _ref(64)
    small.on_device = True
    ref = _ref(1024)
    ref.outputs, ref.replay_outputs = [[ref.outputs[0][0].to("meta")]], [[ref.replay_outputs[0][0].to("meta")]]
    ref.lease = {"gpu": 10 * n, "host": 3 * n}
    judge._settle(ref, gate.acquire({"gpu": 30 * n, "host": 5 * n, "big:gpu": 1}))
    judge._keep(ref)
    assert not ref.on_device and gate.held["refs:gpu"] == 0 and list(judge._refs) == ["small"]
    assert judge._own_gpu(ref) == n  # its outputs, counted in the GPU's share
    assert gate.held["gpu"] == 11 * n


def test_a_candidate_given_all_the_gpu_its_reference_leaves_clears_the_gpu_first():
    """`_whole_gpu`: a candidate whose need was clamped to what its reference's own outputs leave may use more than
    it holds, so the idle references kept in their own budget leave the GPU before it runs."""
    n = 2 * 1024 * 4
    judge = Judge(JudgeOptions(device="cpu"))
    judge.device, judge.compare_device = "cuda", "meta"
    gate = MemoryGate({"gpu": 12 * n, "refs:gpu": n, "host": 100 * n})
    judge.set_gate(gate, "gpu")
    ref = _ref(1024)
    ref.holds = {"gpu": 3 * n}  # its outputs on the GPU, no lease
    assert judge._whole_gpu({"gpu": 9 * n}, ref)
    assert not judge._whole_gpu({"gpu": 8 * n}, ref)
    assert not judge._whole_gpu({"host": n}, ref)  # no GPU in the gate's view: nothing to clear
