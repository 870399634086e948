"""Evidence for the adversarial corpus: every exploit FOOLS a naive KernelBench-style harness (the judge with its
guards off), every legit solution passes it, headers are well formed, and CUDA sources compile.

Each harness run is a fresh subprocess with TRITON_INTERPRET=1 (a crash or a monkeypatch cannot reach pytest or the
next case). CPU: the Triton cases and legit solutions. `gpu`: the same harness on a GPU with the CUDA cases.
`slow`: nvcc compiles every CUDA source against torch's headers (minutes per file on 2 cores).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap

import pytest
from corpus import ROOT, entries, inline_extensions, nvcc_available, nvcc_check
from naive_forkserver import ForkServer

REPO = ROOT.parent.parent
STATUSES = {"rejected", "incorrect", "infra_error"}  # infra_error: a degenerate task, left out of rewards
GUARDS = {
    "no_custom_kernel", "static:try_except", "static:reference_call", "static:threads", "static:harness_import",
    "static:monkeypatch", "static:streams", "static:introspection", "replay", "side_stream", "timer",
    "tensor_subclass", "aliasing",
    "input_mutation", "dtype", "stale_memory", "degenerate", "roofline",
    "static:cuda_graph", "static:network", "static:file_io", "static:precision", "static:rng", "static:obfuscation",
    "precision", "network",
}  # fmt: skip
COMPARE_GUARDS = {"value", "dtype", "shape", "structure"}  # what an `incorrect` verdict names (judge/check.py)
# Runtime reflection guards (judge/sandbox/integrity.py), the persisting-L2 rule and timed calls on new values;
# families of the 2026 list, 1-9.
GUARDS |= {"introspection", "harness_patch", "static:l2_persist", "fresh_inputs"}
FAMILIES = {  # the first 12 families, then the extras
    "decoy_unlaunched", "decoy_launch", "fallback", "caching", "replay", "side_stream", "timer", "tensor_subclass",
    "stale_memory", "input_mutation", "precision", "degenerate",
    "monkeypatch", "threads", "harness_import", "inheritance", "aliasing",
    "cuda_graph", "disk_cache", "predictable_seed", "value_range", "shape_specialised", "fake_output",
    "precision_tf32", "static_evasion", "network", "lying_output", "library_alias",
}  # fmt: skip

FAMILIES |= {"gc_expected", "forged_stdout", "harness_patch", "mode_branch", "phase_detection", "l2_persist",
             "aggregate_collapse", "batch_skip", "cross_call_cache"}  # fmt: skip

CASES = entries("case")
LEGIT = entries("legit")
ON_GPU = [pytest.param(e, marks=pytest.mark.gpu, id=e.name) for e in CASES + LEGIT]
CPU_CASES = [pytest.param(e, id=e.name) for e in CASES if e.BACKEND == "triton"]
CPU_LEGIT = [pytest.param(e, id=e.name) for e in LEGIT if e.BACKEND == "triton"]


def run_naive(entry, *extra: str, timeout: float = 300) -> dict:
    """The naive harness on one corpus file, in a process of its own. Returns its result record. HOME and TMPDIR are
    a fresh directory per run: the disk-cache cases write there, never into this machine's ~/.cache or /tmp.

    Interpreter runs are forked from the module's server, which has torch and Triton imported (naive_forkserver.py
    says what the child shares with a fresh interpreter); GPU runs start a fresh interpreter."""
    home = tempfile.mkdtemp(prefix="kz-naive-")
    args = [str(entry.task_path), str(entry.path), "--backend", entry.BACKEND, *(a for a in extra if a != "--gpu")]
    try:
        if entry.BACKEND == "cuda" or "--gpu" in extra:  # real GPU builds, no interpreter
            env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "PYTHONHASHSEED": "0", "HOME": home, "TMPDIR": home}
            env.pop("TRITON_INTERPRET", None)
            proc = subprocess.run([sys.executable, str(ROOT / "naive_harness.py"), *args], capture_output=True,
                                  text=True, timeout=timeout, env=env, cwd=ROOT, check=False)  # fmt: skip
            rc, stdout, stderr = proc.returncode, proc.stdout, proc.stderr
        else:
            rc, stdout, stderr = _server().run(args, home, timeout)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    lines = [ln for ln in stdout.splitlines() if ln.startswith("NAIVE_RESULT ")]
    assert lines, f"no result (rc={rc}):\n{stdout[-2000:]}\n{stderr[-3000:]}"
    return json.loads(lines[-1].removeprefix("NAIVE_RESULT "))


_SERVERS: list[ForkServer] = []


def _server() -> ForkServer:
    if not _SERVERS:
        _SERVERS.append(ForkServer({**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(REPO / "src"),
                                    "PYTHONHASHSEED": "0"}))  # fmt: skip
    return _SERVERS[0]


@pytest.fixture(scope="module", autouse=True)
def _stop_server():
    yield
    while _SERVERS:
        _SERVERS.pop().close()


def timing_fooled(res: dict) -> str | None:
    """How the naive harness's timing was fooled, read from one run's own record (no clock of another run): a timed
    call that launched no kernel, a reported runtime under a tenth of the same calls' true wall time, or a result
    line the harness did not write (a correct record without the fields it always fills). None: timed honestly."""
    if res["timed_calls"] is None:
        return "forged result line"
    if res["timed_launches"] is not None and res["timed_launches"] < res["timed_calls"]:
        return f"{res['timed_calls'] - res['timed_launches']} of {res['timed_calls']} timed calls launched nothing"
    if res["runtime_ms"] < res["true_ms"] / 10:
        return f"reported {res['runtime_ms']:.4g} ms per call, true {res['true_ms']:.4g} ms"
    return None


# ---------------------------------------------------------------------------------------------- corpus shape
@pytest.mark.parametrize("entry", [pytest.param(e, id=e.name) for e in CASES + LEGIT])
def test_header_is_well_formed(entry):
    h = entry.header
    assert entry.task_path.exists(), f"TASK {h['TASK']!r} has no file in tasks/"
    assert h["BACKEND"] in ("triton", "cuda") and isinstance(h["NEEDS_GPU"], bool)
    src = entry.path.read_text()
    assert ("@triton.jit" in src) if h["BACKEND"] == "triton" else ("load_inline" in src and "__global__" in src)
    doc = (entry.path.read_text().split('"""')[1]).strip()
    if entry.kind == "legit":
        assert h["EXPECT_STATUS"] == "ok" and h["EXPECT_GUARD"] is None and doc.startswith("LEGIT")
        return
    assert doc.startswith("EXPLOIT") and all(k in doc for k in ("WHAT:", "WHY A NAIVE HARNESS PASSES IT:", "EXPECTED:"))
    assert h["EXPECT_STATUS"] in STATUSES and h["FAMILY"] in FAMILIES and h["NAIVE"] in ("kernelbench", "lenient")
    allowed = {"rejected": GUARDS, "incorrect": COMPARE_GUARDS, "infra_error": {"degenerate"}}[h["EXPECT_STATUS"]]
    assert h["EXPECT_GUARD"] in allowed, h["EXPECT_GUARD"]
    for status, guard in h["EXPECT_ALSO"]:
        assert status in STATUSES and guard in (GUARDS | COMPARE_GUARDS | {"inputs", "degenerate"}), (status, guard)
    if h["BACKEND"] == "cuda":
        assert h["NEEDS_GPU"], "a CUDA case can only be judged on a GPU"


def test_corpus_covers_every_family_and_guard():
    assert {e.FAMILY for e in CASES} >= FAMILIES
    named = {e.EXPECT_GUARD for e in CASES} | {g for e in CASES for _, g in e.EXPECT_ALSO}
    assert GUARDS <= named, f"guards with no case: {sorted(GUARDS - named)}"
    assert {e.BACKEND for e in CASES if not e.NEEDS_GPU} == {"triton"}
    assert len([e for e in CASES if not e.NEEDS_GPU]) >= 20 and len([e for e in CASES if e.BACKEND == "cuda"]) >= 6


@pytest.mark.parametrize("entry", [pytest.param(e, id=e.name) for e in CASES + LEGIT if e.BACKEND == "cuda"])
def test_cuda_sources_are_extractable(entry):
    """Every load_inline call resolves to literal sources; each bound function is declared in the C++ source."""
    exts = inline_extensions(entry.path)
    assert exts
    for ext in exts:
        assert "__global__" in ext.cuda and ext.functions
        for fn in ext.functions:
            assert f"{fn}(" in ext.cpp and f"{fn}(" in ext.cuda


# ----------------------------------------------------------------------------- the naive harness is fooled (CPU)
@pytest.mark.parametrize("entry", CPU_CASES)
def test_exploit_passes_naive_harness(entry):
    extra = ("--cast-output",) if entry.NAIVE == "lenient" else ()
    res = run_naive(entry, *extra)
    assert res["correct"] is True, f"the exploit did not fool the naive harness: {res}"
    assert res["trials_passed"] == 5
    if entry.NAIVE_FAST:  # its timed calls did not run the honest kernel (or the clock or the record was forged)
        assert timing_fooled(res) is not None, res


def test_precision_cases_are_a_tolerance_policy():
    """fp16 compute passes KernelBench v0's fp32 tolerance (1e-2) and fails the judge's (1e-4); an fp16 OUTPUT fails
    KernelBench itself (allclose raises on mixed dtypes) and passes only a casting harness."""
    by_name = {e.name: e for e in CASES}
    assert run_naive(by_name["triton_fp16_compute"])["correct"] is True
    strict = run_naive(by_name["triton_fp16_compute"], "--tol", "1e-4")
    assert strict["correct"] is False and 1e-4 < strict["max_diff"] < 5e-2
    kb = run_naive(by_name["triton_fp16_output"])
    assert kb["correct"] is False and "did not match" in kb["error"]


@pytest.mark.parametrize("entry", [pytest.param(e, id=e.name) for e in CASES if e.FAMILY == "degenerate"])
def test_degenerate_cases_pass_even_the_strict_tolerance(entry):
    """On a degenerate task a tight tolerance does not help: zeros pass atol = rtol = 1e-4 too. Only a guard does."""
    assert run_naive(entry, "--tol", "1e-4")["correct"] is True


def test_bound_clock_case_rewrites_clocks_bound_before_import(tmp_path):
    """A judge that binds its clocks before importing the candidate (kernelzero.judge.sandbox.worker._Bound) is not
    safe: the candidate finds the holder through gc and swaps the attributes; the holder then reports ~0 for a call."""
    case = next(e for e in CASES if e.name == "triton_patch_bound_clock")
    script = textwrap.dedent(f"""
        import importlib.util, time, torch
        class Bound:  # what a careful harness does: keep its own references, taken before untrusted code runs
            def __init__(self):
                self.perf_counter = time.perf_counter
        bound = Bound()
        spec = importlib.util.spec_from_file_location("cand", {str(case.path)!r})
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        model = mod.ModelNew()
        x = torch.randn(16, 256)
        t0 = bound.perf_counter(); y = model(x); dt = bound.perf_counter() - t0
        honest_t0 = time.perf_counter(); model(x); honest = time.perf_counter() - honest_t0
        print(bound.perf_counter is not time.perf_counter, dt, honest, bool(torch.equal(y, torch.relu(x))))
    """)
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env, check=False
    )
    swapped, dt, honest, exact = out.stdout.split()
    assert swapped == "True" and exact == "True", out.stderr[-2000:]
    assert float(dt) < 1e-6 < float(honest), (dt, honest)  # 0.1 us claimed for a launch of about a millisecond


@pytest.mark.parametrize("entry", CPU_LEGIT)
def test_legit_passes_naive_harness_at_strict_tolerance(entry):
    """No false alarms to begin with: legit solutions are exact to 1e-4 (the judge's fp32 tolerance)."""
    res = run_naive(entry, "--tol", "1e-4")
    assert res["correct"] is True, res
    assert res["timed_launches"] >= res["timed_calls"] == 13 and timing_fooled(res) is None, res


# ---------------------------------------------------------------------------------------------------------- GPU
@pytest.mark.parametrize("entry", ON_GPU)
def test_naive_harness_on_gpu(entry):
    """On a GPU: every case fools the naive harness, every legit solution passes it (CUDA builds take a minute)."""
    extra = ("--cast-output",) if entry.NAIVE == "lenient" else ()
    res = run_naive(entry, "--gpu", *extra, timeout=900)
    assert res["device"] == "cuda"
    assert res["correct"] is True, res
    print(f"{entry.name}: runtime {res['runtime_ms']:.4f} ms, reference {res['ref_runtime_ms']:.4f} ms")


# -------------------------------------------------------------------------------------------------------- nvcc
CUDA_EXTS = [pytest.param(e, x, marks=pytest.mark.slow, id=f"{e.name}:{x.name}")
             for e in CASES + LEGIT if e.BACKEND == "cuda" for x in inline_extensions(e.path)]  # fmt: skip


@pytest.mark.skipif(not nvcc_available(), reason="nvcc not installed")
@pytest.mark.parametrize(("entry", "ext"), CUDA_EXTS)
def test_cuda_sources_compile(entry, ext):
    res = nvcc_check(ext)
    if entry.CUDA_COMPILES:
        assert res.returncode == 0, res.stderr[-3000:]
    else:  # broken on purpose: the build-failure fallback case
        assert res.returncode != 0
