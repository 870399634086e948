"""A deliberately naive KernelBench-style harness: the baseline every exploit in `cases/` is shown to fool.

It mimics the essential logic of KernelBench's `eval_kernel_against_ref` / `run_and_check_correctness` (read, not
copied): exec the task in a dict; load the candidate by exec into the SAME dict (CUDA) or by importing a temp file
(Triton: @triton.jit needs a real source file); seed before building Model and ModelNew; a few correctness trials on
fresh get_inputs() with per-trial seeds, the reference first, then the candidate, in one process; shape check then
torch.allclose(atol=rtol=1e-2, KernelBench v0/v0.1's fp32 tolerance); timing with CUDA events on the default stream
(perf_counter on CPU) over warm-up + timed calls on one fixed input, a 256 MB L2 flush before each GPU call.
No guards. Never use this to judge anything.

Run: `python naive_harness.py TASK.py CANDIDATE.py [--backend triton|cuda] [--tol 1e-2] [--cast-output]`. The last
line of stdout is `NAIVE_RESULT {json}`. `--cast-output` mimics the lenient harnesses that compare
`out.to(ref.dtype)` (KernelBench does not; its allclose raises on mixed dtypes).

Evidence fields for the tests (not part of what a naive harness does): under the Triton interpreter, how many kernel
runs the candidate's timed calls made (`timed_launches` of `timed_calls`), and `true_ms`, the mean wall time of the
candidate's timing calls on a clock taken before the candidate loads. A timed call that launched nothing, or a
reported runtime far below the true one, shows that the timing was fooled without comparing two runs' clocks.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import tempfile
import time
import traceback

import torch

RESULT_MARK = "NAIVE_RESULT "
WARMUP, TRIALS = 3, 10
_TRUE_CLOCK = time.perf_counter_ns  # bound before any candidate runs: patching time.perf_counter later misses it


class _Launches:
    """Counts Triton kernel runs under the interpreter (TRITON_INTERPRET=1): every `kernel[grid](...)` goes through
    `InterpretedFunction.run`. Off the interpreter nothing is counted (`count` stays None)."""

    count: int | None = None

    @classmethod
    def install(cls) -> None:
        try:
            from triton.runtime.interpreter import InterpretedFunction
        except ImportError:
            return
        run = InterpretedFunction.run
        cls.count = 0

        def counted(self, *args, **kwargs):
            cls.count += 1
            return run(self, *args, **kwargs)

        InterpretedFunction.run = counted


def _seed(s: int) -> None:
    torch.manual_seed(s)
    if torch.cuda.is_available():
        torch.cuda.manual_seed(s)


def _load_candidate(src: str, backend: str, context: dict):
    if backend == "cuda":  # KernelBench: exec into the dict that already holds the task's names
        exec(compile(src, "<candidate>", "exec"), context)
        return context["ModelNew"]
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(src)
    spec = importlib.util.spec_from_file_location("candidate_module", f.name)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.ModelNew


def _time(fn, args, device: torch.device, warmup: int = WARMUP, trials: int = TRIALS) -> float:
    """Mean milliseconds per call: CUDA events on the current (default) stream, or perf_counter on CPU."""
    for _ in range(warmup):
        fn(*args)
    times = []
    for _ in range(trials):
        if device.type == "cuda":
            torch.cuda.synchronize()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            dummy = torch.empty(32 * 2**20, dtype=torch.int64, device=device)  # KernelBench's L2 flush: 256 MB
            dummy.fill_(42)
            del dummy
            start.record()
            fn(*args)
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end))
        else:
            t0 = time.perf_counter()
            fn(*args)
            times.append((time.perf_counter() - t0) * 1e3)
    return sum(times) / len(times)


def run_naive(
    task_src: str,
    cand_src: str,
    backend: str = "triton",
    tol: float = 1e-2,
    seed: int = 42,
    n_trials: int = 5,
    cast_output: bool = False,
) -> dict:
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    res = {
        "correct": False,
        "trials_passed": 0,
        "error": None,
        "max_diff": None,
        "runtime_ms": None,
        "ref_runtime_ms": None,
        "speedup": None,
        "device": device.type,
        "timed_calls": None,
        "timed_launches": None,
        "true_ms": None,
    }
    _Launches.install()
    context: dict = {}
    exec(compile(task_src, "<task>", "exec"), context)
    Model, get_inputs, get_init_inputs = context["Model"], context["get_inputs"], context["get_init_inputs"]
    _seed(seed)
    init = [x.to(device) if isinstance(x, torch.Tensor) else x for x in get_init_inputs()]
    try:
        with torch.no_grad():
            _seed(seed)
            model = Model(*init).to(device)
            ModelNew = _load_candidate(cand_src, backend, context)
            _seed(seed)
            model_new = ModelNew(*init).to(device)
            torch.manual_seed(seed)
            trial_seeds = [torch.randint(0, 2**32 - 1, (1,)).item() for _ in range(n_trials)]
            for s in trial_seeds:
                _seed(s)
                inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in get_inputs()]
                output = model(*inputs)
                if device.type == "cuda":
                    torch.cuda.synchronize()
                output_new = model_new(*inputs)
                if device.type == "cuda":
                    torch.cuda.synchronize()
                if output.shape != output_new.shape:
                    res["error"] = f"shape mismatch {tuple(output.shape)} vs {tuple(output_new.shape)}"
                    return res
                if cast_output:
                    output_new = output_new.to(output.dtype)
                if not torch.allclose(output, output_new, atol=tol, rtol=tol):
                    res["max_diff"] = float((output - output_new).abs().max())
                    return res
                res["trials_passed"] += 1
            res["correct"] = True
            _seed(seed)
            inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in get_inputs()]
            launches_before, t0 = _Launches.count, _TRUE_CLOCK()
            res["runtime_ms"] = _time(model_new, inputs, device)
            res["true_ms"] = (_TRUE_CLOCK() - t0) / 1e6 / (WARMUP + TRIALS)
            res["timed_calls"] = WARMUP + TRIALS
            if launches_before is not None:
                res["timed_launches"] = _Launches.count - launches_before
            res["ref_runtime_ms"] = _time(model, inputs, device)
            res["speedup"] = res["ref_runtime_ms"] / max(res["runtime_ms"], 1e-9)
    except Exception as e:  # KernelBench records any exception as "not correct"
        res["error"] = f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=3)}"
    return res


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("task")
    p.add_argument("candidate")
    p.add_argument("--backend", default="triton", choices=["triton", "cuda"])
    p.add_argument("--tol", type=float, default=1e-2)
    p.add_argument("--cast-output", action="store_true")
    a = p.parse_args()
    with open(a.task) as f, open(a.candidate) as g:
        res = run_naive(f.read(), g.read(), a.backend, a.tol, cast_output=a.cast_output)
    print(RESULT_MARK + json.dumps(res), flush=True)


if __name__ == "__main__":
    main()
