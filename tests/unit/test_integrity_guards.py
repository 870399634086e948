"""Guards against the 2026 list's families 1-9 that can be unit-tested in one process: the per-call roofline, the
persisting-L2 rule, the harness seal and the reflection watch (judge/sandbox/integrity.py), the timed-call launch
tally, and replays that refill an input without moving its `_version`."""

import gc
import importlib
import sys
import textwrap
import types

import pytest
import torch

from kernelzero.judge.guards import run_static, timing_violation
from kernelzero.judge.sandbox.harness import GuardViolation, LaunchCounter, run_replay
from kernelzero.judge.sandbox.integrity import HarnessSeal, IntrospectionWatch
from kernelzero.judge.sandbox.judge_jobs import LaunchTally


def _stats(median_ms: float, min_ms: float, wall_ms: float) -> dict:
    return {"events": {"median_ms": median_ms, "min_ms": min_ms}, "wall": {"median_ms": wall_ms}}


def test_roofline_checks_the_fastest_call_not_only_the_median():
    big = 512 * 2**20  # (512 - 128) MiB past L2 at 10 TB/s: 40 us per call at the least
    assert timing_violation(_stats(0.120, 0.110, 0.15), big, 10.0) is None  # every call honest
    guard, feedback = timing_violation(_stats(0.120, 0.0005, 0.15), big, 10.0)  # one call driven to ~0
    assert guard == "roofline" and "0.50 us" in feedback
    assert timing_violation(_stats(0.120, 0.0005, 0.15), 64 * 2**20, 10.0) is None  # fits in L2: no floor


L2_SNIPPETS = [
    "cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, carve);",
    "attr.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;",
    "cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &attr);",
    "cudaCtxResetPersistingL2Cache();",
    "cuCtxSetLimit(CU_LIMIT_PERSISTING_L2_CACHE_SIZE, n);",
]


@pytest.mark.parametrize("snippet", L2_SNIPPETS)
def test_persisting_l2_api_is_rejected(snippet):
    src = f'import torch\nclass ModelNew: pass\nsrc = r"""{snippet}"""\n'
    assert run_static(src, "cuda")[0] == "static:l2_persist"


def test_plain_cuda_wrapper_is_not_an_l2_hit():
    src = textwrap.dedent('''
        import torch
        class ModelNew: pass
        src = r"""
        cudaStream_t stream = at::cuda::getCurrentCUDAStream();
        cudaDeviceProp prop; cudaGetDeviceProperties(&prop, 0);
        int l2 = prop.l2CacheSize;
        """
    ''')
    assert run_static(src, "cuda") is None


@pytest.fixture
def toy_module(tmp_path):
    """A throwaway module standing in for a harness module (the real ones must not be reloaded under pytest)."""
    path = tmp_path / "kz_toy_harness.py"
    path.write_text("import time\nclock = time.perf_counter\n\ndef elapsed(t0):\n    return clock() - t0\n\n"
                    "class Timer:\n    def read(self):\n        return clock()\n")  # fmt: skip
    sys.path.insert(0, str(tmp_path))
    mod = importlib.import_module("kz_toy_harness")
    yield mod
    sys.path.remove(str(tmp_path))
    sys.modules.pop("kz_toy_harness", None)


@pytest.mark.parametrize("move", ["code", "rebind", "method", "reload", "defaults"])
def test_seal_sees_each_way_of_changing_a_harness_function(toy_module, monkeypatch, move):
    monkeypatch.setattr("kernelzero.judge.sandbox.integrity.SEALED_MODULES", ("kz_toy_harness",))
    seal = HarnessSeal()
    assert seal.broken() is None
    if move == "code":
        toy_module.elapsed.__code__ = (lambda t0: 0.0).__code__
    elif move == "rebind":
        toy_module.elapsed = lambda t0: 0.0
    elif move == "method":
        toy_module.Timer.read = lambda self: 0.0
    elif move == "reload":
        importlib.reload(toy_module)
    else:
        toy_module.elapsed.__defaults__ = (0.0,)
    assert seal.broken() is not None
    with pytest.raises(GuardViolation) as err:
        seal.check()
    assert err.value.guard == "harness_patch"


def test_seal_covers_the_launch_counters_wrappers():
    class Jit:
        def run(self):
            return 1

    seal = HarnessSeal(extra=((Jit, "run"),))
    Jit.run = lambda self: 2  # the candidate restores (or replaces) the counted `run`
    assert seal.broken().endswith("Jit.run")


def test_watch_refuses_gc_scans_and_code_swaps_from_the_candidates_file_only(tmp_path):
    cand = tmp_path / "candidate.py"
    cand.write_text("import gc\n\ndef scan():\n    return len(gc.get_objects())\n\n"
                    "def swap(f):\n    f.__code__ = (lambda: 0).__code__\n")  # fmt: skip
    code = compile(cand.read_text(), str(cand), "exec")
    ns: dict = {}
    exec(code, ns)
    watch = IntrospectionWatch(str(cand))
    watch.install()
    try:
        assert len(gc.get_objects()) > 0  # the harness's own scans (not from the candidate's file) go through
        with pytest.raises(PermissionError):
            ns["scan"]()

        def victim():
            return 1

        with pytest.raises(PermissionError):
            ns["swap"](victim)
        assert victim() == 1
        with pytest.raises(GuardViolation) as err:
            watch.check()
        assert err.value.guard == "introspection" and "gc.get_objects" in str(err.value)
    finally:
        watch.armed = False  # an audit hook stays for the life of the process: disarm it


def test_launch_tally_counts_timed_calls_that_launch_nothing():
    counter = LaunchCounter("")
    kept = {}

    def model(x):
        if x in kept:
            return kept[x]  # a lookup: no launch
        counter.count += 1  # stands for one completed launch of the candidate's kernel
        kept[x] = x * 2
        return kept[x]

    tally = LaunchTally(model, counter)
    for x in (1, 2, 3, 1, 2, 3, 1):
        tally(x)
    assert tally.idle == 4


def test_replay_refills_inputs_without_moving_their_version():
    """A cache keyed on (data_ptr, _version) must miss the replays' new contents: they arrive as a kernel's write."""
    bound = types.SimpleNamespace(tensor_type=torch.Tensor)
    x = torch.zeros(8)
    bound.last_inputs = [x]
    task = types.SimpleNamespace(get_inputs=lambda: [torch.randn(8)])
    seen = []
    bound.synchronize = lambda: None

    def fake_forward(torch_, bound_, model, inputs, device, recorder=None, keep=None):
        seen.append((inputs[0].data_ptr(), inputs[0]._version, inputs[0].clone()))
        return "tensor", [inputs[0].clone()]

    mp = pytest.MonkeyPatch()
    mp.setattr("kernelzero.judge.sandbox.harness.checked_forward", fake_forward)
    try:
        run_replay(torch, bound, None, task, [1, 2], [[0, 0], [1, 0]], "cpu")
    finally:
        mp.undo()
    (p0, v0, c0), (p1, v1, c1) = seen
    assert p0 == p1 == x.data_ptr() and v0 == v1 == 0 and not torch.equal(c0, c1)


def test_persisting_l2_reset_is_a_no_op_without_cudart():
    """On a machine without libcudart in the process (CPU torch) the reset does nothing and raises nothing."""
    from kernelzero.judge.timing import PersistingL2

    unpin = PersistingL2()
    if unpin.lib is None:
        unpin()
    else:  # a CUDA build of torch on a CPU box: the calls fail softly (no device) and leave no error behind
        unpin()
        assert unpin.lib.cudaGetLastError() == 0
