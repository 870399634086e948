"""The worker: the only place task and candidate code runs. One job per process, then it exits.

Started by `Sandbox` as `python -m kernelzero.judge.sandbox.worker RESULT_FD`; reads one JSON job line on stdin,
reports on the signed channel (RESULT_FD). Jobs:
- `reference`: build `Model`, draw inputs per seed on the device, write outputs to its `out` memfd, optionally time the
  eager model and `torch.compile` of it. Never imports candidate code, so it cannot be slowed or patched by one.
- `candidate`: import the candidate file (this builds CUDA extensions / defines Triton kernels), build `ModelNew`
  with the same seed and weights as `Model`, run it on the same per-seed inputs, write outputs to its `out` memfd,
  then on request time it (outputs kept from timed calls go to `timed`).
Everything the harness needs from torch is bound before candidate code is imported (see `_Bound`): patching
`torch.cuda.Event` later does not change our clock. Guards of `kernelzero.judge.guards` hook in at `GUARD_HOOKS`.
"""

from __future__ import annotations

import fcntl
import gc
import hashlib
import importlib
import json
import os
import secrets
import signal
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kernelzero.judge.build.farm import install_load_inline_shim
from kernelzero.judge.build.headers import probe_headers
from kernelzero.judge.sandbox.process import SEALS, Channel
from kernelzero.judge.timing import time_model


class StageError(Exception):
    """A failure of the code under test at a named stage; becomes a verdict status in the parent."""

    def __init__(self, stage: str, exc: BaseException):
        super().__init__(f"{stage}: {exc}")
        self.stage = stage
        self.exc = exc


def _short_tb(exc: BaseException, limit: int = 4) -> str:
    """The exception line first (what a model needs most), then the innermost frames."""
    head = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    frames = "".join(traceback.format_tb(exc.__traceback__, limit=-limit))
    return f"{head}\n{frames}"[-6000:]


def _is_kernel_compile_error(exc: BaseException) -> bool:
    """Triton compiles at first launch, so its compile errors surface in forward. Name them as compile errors."""
    if "Compil" in type(exc).__name__ and type(exc).__module__.startswith("triton"):
        return True
    if type(exc).__name__ == "InterpreterError":  # TRITON_INTERPRET=1 wraps what a GPU build would reject
        return isinstance(exc.__cause__, (AttributeError, NameError, TypeError, SyntaxError))
    return False


def load_module(path: str, name: str):
    """Import a source file as a module (Triton needs a real file to read kernel sources from)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def set_precision_policy(torch, allow_tf32: bool) -> None:
    """TF32 off by default: TF32 alone has produced ~10x fake 'speedups' on fp32 matmul/conv tasks."""
    torch.backends.cuda.matmul.allow_tf32 = allow_tf32
    torch.backends.cudnn.allow_tf32 = allow_tf32
    torch.set_float32_matmul_precision("high" if allow_tf32 else "highest")


def make_inputs(torch, task_mod, seed: int, device: str) -> list:
    """The task's own `get_inputs`, drawn directly on the device (no multi-GB CPU draws), under `seed`."""
    torch.manual_seed(seed)
    with torch.device(device):
        inputs = task_mod.get_inputs()
    return [x.to(device) if isinstance(x, torch.Tensor) else x for x in inputs]


def build_model(torch, cls, init_inputs: list, seed: int, device: str):
    torch.manual_seed(seed)
    with torch.device(device):
        model = cls(*init_inputs)
    return model.to(device).eval()


def flatten_outputs(torch, out) -> tuple[str, list]:
    """A forward's result as (structure, list of tensors). Exact `torch.Tensor` only: subclasses are a known hack."""
    items = list(out) if isinstance(out, (tuple, list)) else [out]
    structure = f"{type(out).__name__}[{len(items)}]" if isinstance(out, (tuple, list)) else "tensor"
    return structure, items


def checksum(torch, tensors: list) -> list[str]:
    """A cheap fingerprint of the inputs so the parent can see both sides drew the same ones."""
    out = []
    for t in tensors:
        if isinstance(t, torch.Tensor):
            flat = t.detach().reshape(-1)
            probe = flat[:: max(1, flat.numel() // 4096)].to("cpu", torch.float64)
            out.append(hashlib.sha1(probe.numpy().tobytes() + str((tuple(t.shape), t.dtype)).encode()).hexdigest())
        else:
            out.append(repr(t))
    return out


class _Bound:
    """Harness functions captured before untrusted code runs, so later monkeypatching does not reach them."""

    def __init__(self, torch):
        self.perf_counter = time.perf_counter
        self.randbelow = secrets.randbelow  # which timed calls' outputs are checked (timing.time_model)
        self._torch_save, self._open, self._gc, self._signal = torch.save, open, gc, signal
        self._sigmask, self._ftruncate, self._lseek = signal.pthread_sigmask, os.ftruncate, os.lseek
        self._fcntl, self._F_ADD_SEALS, self._F_SEAL_SEAL = fcntl.fcntl, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SEAL
        self.output_fds: dict[str, int] = {}  # set from the job: the sandbox's memfds
        self.clone = torch.Tensor.clone
        self.equal = torch.equal
        self.tensor_type = torch.Tensor
        if torch.cuda.is_available():
            self.event = torch.cuda.Event
            self.synchronize = torch.cuda.synchronize
            self.elapsed = torch.cuda.Event.elapsed_time
        else:  # host clocks, for the timing protocol on CPU (JudgeOptions.timing_on_cpu)
            self.event = _host_event(time.perf_counter)
            self.synchronize = lambda: None
            self.elapsed = lambda start, end: (end.t - start.t) * 1e3

    def save(self, obj, name: str) -> None:
        """Write `obj` into the sandbox's `name` memfd (`sandbox.OUTPUTS`) and seal it: from then on nobody, candidate
        code included, can change what the judge reads. Signals are blocked and the garbage collector paused for the
        write and the seal, so no candidate code (a signal handler, a finalizer) runs between the two."""
        fd = self.output_fds[name]
        mask = self._sigmask(self._signal.SIG_BLOCK, self._signal.valid_signals())
        collecting = self._gc.isenabled()
        self._gc.disable()
        try:
            self._ftruncate(fd, 0)
            self._lseek(fd, 0, os.SEEK_SET)
            with self._open(fd, "wb", closefd=False) as f:
                self._torch_save(obj, f)
            self._fcntl(fd, self._F_ADD_SEALS, SEALS | self._F_SEAL_SEAL)
        finally:
            if collecting:
                self._gc.enable()
            self._sigmask(self._signal.SIG_SETMASK, mask)


def _host_event(clock):
    """A stand-in for torch.cuda.Event on CPU: `record()` reads `clock` (bound here, before candidate import)."""

    class HostEvent:
        def __init__(self, enable_timing: bool = True):
            self.t = 0.0

        def record(self) -> None:
            self.t = clock()

    return HostEvent


# Extension points for the reward-hacking guards (issue 4): called with (stage, context dict) inside the worker.
GUARD_HOOKS: list[Callable[[str, dict[str, Any]], None]] = []


def run_forward_trials(torch, bound: _Bound, model, task_mod, seeds: list[int], device: str, check_inputs: bool,
                       recorder=None):  # fmt: skip
    """Per seed: fresh inputs, one forward, outputs copied to CPU. Returns (structures, outputs, input checksums).

    `recorder` (an `OpRecorder`) is entered around each forward to log the aten ops it dispatches.
    The last trial's input tensors stay in `bound.last_inputs` for the replay trials (same objects, new contents).
    """
    structures, outputs, sums = [], [], []
    for seed in seeds:
        t0 = bound.perf_counter()
        inputs = make_inputs(torch, task_mod, seed, device)
        sums.append(checksum(torch, inputs))
        before = [bound.clone(x) if isinstance(x, bound.tensor_type) else x for x in inputs] if check_inputs else []
        structure, items = _forward(torch, bound, model, inputs, device, recorder)
        for x, x0 in zip(inputs, before):
            if isinstance(x, bound.tensor_type) and not bound.equal(x, x0):
                raise GuardViolation("input_mutation", "forward modified its input tensor")
        structures.append(structure)
        outputs.append(items)
        bound.last_inputs = inputs
        if not hasattr(bound, "first_call_s"):  # the first call holds Triton's JIT compile (bench figures)
            bound.first_call_s = bound.perf_counter() - t0
    return structures, outputs, sums


def _forward(torch, bound: _Bound, model, inputs: list, device: str, recorder=None) -> tuple[str, list]:
    """One checked forward: (structure, outputs copied to CPU). Raises the tensor_subclass / aliasing guards."""
    with torch.no_grad():
        if recorder is not None:
            with recorder:
                out = model(*inputs)
        else:
            out = model(*inputs)
    if device == "cuda":
        bound.synchronize()
    structure, items = flatten_outputs(torch, out)
    for t in items:
        if type(t) is not bound.tensor_type:
            raise GuardViolation("tensor_subclass", f"forward returned {type(t).__name__}, not torch.Tensor")
        for x in inputs:
            if isinstance(x, bound.tensor_type) and t.numel() and x.numel() and _shares_storage(t, x):
                raise GuardViolation("aliasing", "an output shares memory with an input")
    bound.storage_bytes = sum(t.untyped_storage().nbytes() for t in items)  # memory the outputs really span
    return structure, [t.detach().to("cpu", copy=True).contiguous() for t in items]


def perturb(torch, inputs: list, pseed: int, device: str) -> None:
    """Flip the sign (magnitude >= 1) of 2 elements of each floating input, deterministically from `pseed` (0: none).

    The replay guard's probe: same buffer, almost the same contents, so a cache keyed on the pointer, the shape or a
    sampled checksum returns a stale output. Reference and candidate workers apply the same perturbation.
    """
    if not pseed:
        return
    gen = torch.Generator(device=device)
    gen.manual_seed(pseed)
    for x in inputs:
        if isinstance(x, torch.Tensor) and x.is_floating_point() and x.is_contiguous() and x.numel():
            flat = x.view(-1)
            idx = torch.randint(flat.numel(), (2,), generator=gen, device=device)
            mag = torch.rand(2, generator=gen, device=device).to(x.dtype) + 1
            flat[idx] = torch.where(flat[idx] >= 0, -mag, mag)


def replay_inputs(torch, task_mod, seeds: list[int], entry: list[int], device: str) -> list:
    i, pseed = entry
    inputs = make_inputs(torch, task_mod, seeds[i], device)
    perturb(torch, inputs, pseed, device)
    return inputs


def run_replay(torch, bound: _Bound, model, task_mod, seeds: list[int], plan: list, device: str) -> list:
    """Replay trials: the last trial's input tensors are reused (`copy_` of new contents) in the parent's order.

    Stops outputs cached by data_ptr / shape / sampled contents and first-N-calls-honest candidates: each replay's
    output is compared with the reference's on the same contents (guard `replay`).
    """
    buf = bound.last_inputs
    outputs = []
    for entry in plan:
        fresh = replay_inputs(torch, task_mod, seeds, entry, device)
        for b, f in zip(buf, fresh):
            if isinstance(b, bound.tensor_type):
                b.copy_(f)
        outputs.append(_forward(torch, bound, model, buf, device)[1])
    return outputs


def _shares_storage(a, b) -> bool:
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


def make_op_recorder(torch):
    """A TorchDispatchMode that logs aten op name -> elements touched (largest tensor per call, summed).

    Triton launches and CUDA extension calls do not dispatch aten compute ops, so what it sees in a candidate's forward
    is what torch itself computed for it (`guards.library_op_violation` decides from that).
    """
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_leaves

    tensor = torch.Tensor

    class OpRecorder(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops: dict[str, int] = {}

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            sizes = [t.numel() for t in tree_leaves((args, kwargs, out)) if isinstance(t, tensor)]
            name = func.overloadpacket.__name__
            self.ops[name] = self.ops.get(name, 0) + max(sizes, default=0)
            return out

    return OpRecorder()


class LaunchCounter:
    """Counts completed launches of kernels defined in the candidate module (`guards.CANDIDATE_MODULE`).

    Triton: wraps `JITFunction.run` (GPU) and the interpreter's `InterpretedFunction.run` (CPU) before the candidate
    is imported; a launch counts once `run` returns (an attempt that raises, e.g. inside a suppressed error, does
    not). CUDA (GPU only): kernels in a torch.profiler trace whose names are `__global__` functions of the source.
    """

    def __init__(self, source: str):
        import re

        from kernelzero.judge.guards import CANDIDATE_MODULE

        self.module = CANDIDATE_MODULE
        self.count = 0
        self.active = False
        self.cuda_names = set(re.findall(r"__global__\s+(?:__launch_bounds__\([^)]*\)\s+)?void\s+(\w+)", source))

    def install_triton(self) -> None:
        try:
            from triton.runtime import interpreter, jit
        except ImportError:  # no Triton here: CUDA candidates are counted by the profiler
            return
        for cls in (jit.JITFunction, interpreter.InterpretedFunction):
            self._wrap(cls)

    def _wrap(self, cls) -> None:
        orig, counter = cls.run, self

        def run(fn_self, *args, **kwargs):
            result = orig(fn_self, *args, **kwargs)
            fn = getattr(fn_self, "fn", None)
            if counter.active and not kwargs.get("warmup") and getattr(fn, "__module__", None) == counter.module:
                counter.count += 1
            return result

        cls.run = run

    def count_cuda(self, prof) -> None:
        """Add the launches of the candidate's `__global__` kernels found in a finished torch.profiler trace.

        Kernel events carry demangled names (`void ns::relu_kernel<float>(float const*, ...)`): a `__global__` name
        counts where it appears as a whole identifier.
        """
        import re

        pattern = re.compile(r"(?<![\w])(" + "|".join(map(re.escape, sorted(self.cuda_names))) + r")(?![\w])")
        for event in prof.events():
            if str(getattr(event, "device_type", "")).endswith("CUDA") and pattern.search(event.name):
                self.count += 1


class GuardViolation(Exception):
    def __init__(self, guard: str, message: str):
        super().__init__(message)
        self.guard = guard


def _job_reference(job: dict, chan: Channel, torch, bound: _Bound) -> None:
    device = job["device"]
    task_mod = load_module(job["task_path"], "kz_task")
    init_inputs = list(task_mod.get_init_inputs())
    model = build_model(torch, task_mod.Model, init_inputs, job["init_seed"], device)
    recorder = make_op_recorder(torch)
    structures, outputs, sums = run_forward_trials(torch, bound, model, task_mod, job["seeds"], device, False,
                                                   recorder)  # fmt: skip
    replay = []
    for entry in job.get("replay", []):
        inputs = replay_inputs(torch, task_mod, job["seeds"], entry, device)
        replay.append(_forward(torch, bound, model, inputs, device)[1])
    # Degenerate-task canary "a copy of the input": per trial and output, an input of the same shape and dtype.
    identity = []
    for seed, outs in zip(job["seeds"], outputs):
        inputs = [x for x in make_inputs(torch, task_mod, seed, device) if isinstance(x, torch.Tensor)]
        match = [next((x for x in inputs if x.shape == o.shape and x.dtype == o.dtype), None) for o in outs]
        identity.append([None if x is None else x.detach().to("cpu", copy=True).contiguous() for x in match])
    bound.save({"outputs": outputs, "replay": replay, "identity": identity}, "out")
    chan.send({"event": "outputs", "structures": structures, "checksums": sums,
               "ops": recorder.ops})  # fmt: skip
    if not job.get("timing"):
        return
    # Everything slow happens before the parent takes the GPU's timing lock: inputs, and torch.compile's
    # compilation (tens of seconds of CPU work, which must not hold up other candidates' timing).
    input_sets = [make_inputs(torch, task_mod, s, device) for s in job["timing_seeds"]]
    compiled, compile_error = None, None
    if job.get("compile_baseline"):
        try:
            compiled = torch.compile(model)
            with torch.no_grad():
                compiled(*input_sets[0])
            bound.synchronize()
        except Exception as exc:  # torch.compile failing is a fact about the task, reported, not fatal
            compiled, compile_error = None, _short_tb(exc, 2)
    chan.send({"event": "timing_ready"})
    if json.loads(sys.stdin.readline() or "{}").get("cmd") != "time":
        return
    eager = time_and_keep(torch, bound, model, input_sets, job["timing"])
    result = {"event": "timing", "eager": eager}
    if compiled is not None:
        try:
            result["compile"] = time_model(torch, bound, compiled, input_sets, job["timing"])
        except Exception as exc:
            result["compile_error"] = _short_tb(exc, 2)
    elif compile_error is not None:
        result["compile_error"] = compile_error
    chan.send(result)


def time_and_keep(torch, bound: _Bound, model, input_sets: list, cfg: dict) -> dict:
    """`time_model` keeping one timed call's output per input set, saved to the `timed` memfd for the parent's
    check. Returns the timing summaries."""
    stats = time_model(torch, bound, model, input_sets, cfg, capture=capture_output(torch, bound))
    save_captured(torch, bound, stats.pop("captured"))
    return stats


def capture_output(torch, bound: _Bound):
    """For `time_model`: one timed call's output, flattened and copied on the device (the module may reuse its
    buffers in later calls). A tensor subclass is kept as None, which the parent rejects."""

    def capture(out):
        structure, items = flatten_outputs(torch, out)
        return structure, [bound.clone(t) if type(t) is bound.tensor_type else None for t in items]

    return capture


def save_captured(torch, bound: _Bound, captured: list) -> None:
    """The captured outputs of timed calls, on the CPU, as [(structure, [tensor | None])] per input set."""
    bound.save([(s, [None if t is None else t.detach().to("cpu").contiguous() for t in ts])
                for s, ts in captured], "timed")  # fmt: skip


def _job_candidate(job: dict, chan: Channel, torch, bound: _Bound) -> None:
    device = job["device"]
    task_mod = load_module(job["task_path"], "kz_task")
    init_inputs = list(task_mod.get_init_inputs())
    reference = build_model(torch, task_mod.Model, init_inputs, job["init_seed"], device)
    install_load_inline_shim(job)  # issue 5: load prebuilt CUDA extensions from the build farm's cache
    counter = LaunchCounter(Path(job["candidate_path"]).read_text())
    counter.install_triton()  # before the candidate's import binds anything from Triton
    for hook in GUARD_HOOKS:
        hook("before_import", {"job": job})
    t0 = bound.perf_counter()
    try:
        cand_mod = load_module(job["candidate_path"], "kz_candidate")
    except Exception as exc:
        raise StageError("import", exc) from exc
    try:
        model = build_model(torch, cand_mod.ModelNew, init_inputs, job["init_seed"], device)
        # Same weights as the reference where names and shapes match (DESIGN.md section 2).
        ref_state = reference.state_dict()
        own = model.state_dict()
        shared = {k: v for k, v in ref_state.items() if k in own and own[k].shape == v.shape}
        model.load_state_dict(shared, strict=False)
    except Exception as exc:
        raise StageError("init", exc) from exc
    del reference
    chan.send({"event": "built", "seconds": bound.perf_counter() - t0})
    command = json.loads(sys.stdin.readline() or "{}")  # seeds arrive only now: unseen at import and init
    if command.get("cmd") != "run":
        return
    recorder = make_op_recorder(torch)
    t_run = bound.perf_counter()
    try:
        counter.active = True
        profile = _cuda_profiler(torch) if device == "cuda" and counter.cuda_names else None
        if profile is not None:
            with profile as prof:
                structures, outputs, sums = run_forward_trials(torch, bound, model, task_mod, command["seeds"],
                                                               device, True, recorder)  # fmt: skip
            counter.count_cuda(prof)
        else:
            structures, outputs, sums = run_forward_trials(torch, bound, model, task_mod, command["seeds"], device,
                                                           True, recorder)  # fmt: skip
        counter.active = False
        t_replay = bound.perf_counter()
        replay = run_replay(torch, bound, model, task_mod, command["seeds"], command.get("replay", []), device)
    except GuardViolation:
        raise
    except Exception as exc:
        raise StageError("compile" if _is_kernel_compile_error(exc) else "forward", exc) from exc
    # launches is None where nothing could count them (a CUDA candidate on a machine without the profiler trace)
    countable = job.get("backend") == "triton" or device == "cuda"
    t_save = bound.perf_counter()
    bound.save({"outputs": outputs, "replay": replay}, "out")
    seconds = {"first_call": getattr(bound, "first_call_s", 0.0), "trials": t_replay - t_run,
               "replay": t_save - t_replay, "save": bound.perf_counter() - t_save}  # fmt: skip
    chan.send({"event": "outputs", "structures": structures, "checksums": sums, "ops": recorder.ops,
               "launches": counter.count if countable else None, "seconds": seconds})  # fmt: skip
    if not job.get("timing"):
        return
    command = json.loads(sys.stdin.readline() or "{}")  # wait until the parent has the GPU to itself for us
    if command.get("cmd") != "time":
        return
    # Timing seeds arrive with the command, never in the job: a candidate that read them at import could
    # precompute the timed inputs' outputs and answer timed calls from a table.
    t0 = bound.perf_counter()
    input_sets = [make_inputs(torch, task_mod, s, device) for s in command["timing_seeds"]]
    t1 = bound.perf_counter()
    try:
        stats = time_model(torch, bound, model, input_sets, job["timing"], capture=capture_output(torch, bound))
    except Exception as exc:
        raise StageError("timing", exc) from exc
    captured = stats.pop("captured")
    chan.send({"event": "timing", "candidate": stats, "storage_bytes": getattr(bound, "storage_bytes", 0),
               "seconds": {"timing_inputs": t1 - t0, "timing": bound.perf_counter() - t1}})  # fmt: skip
    # Issue 5: the timed outputs leave the GPU once the parent has let the GPU go, and only when it says so: never
    # while another module is timed (on the H200 the copy and the save were most of the GPU's time alone with each
    # candidate: `time` went from 0.36 s to 0.056 s when they left it).
    if json.loads(sys.stdin.readline() or "{}").get("cmd") != "save_timed":
        return
    t2 = bound.perf_counter()
    save_captured(torch, bound, captured)
    chan.send({"event": "timed_saved", "seconds": {"save": bound.perf_counter() - t2}})


def _job_build(job: dict, chan: Channel, torch, bound: _Bound) -> None:
    """Issue 5: import the candidate on CPU so its load_inline calls build into `build_dir` (see judge/build.py).
    Only a failed load_inline build is the candidate's compile error; any other failure here (e.g. CUDA touched
    at import) says only that this candidate must be built where it runs: `unbuilt`, and the GPU worker builds."""
    state = install_load_inline_shim(job)
    try:
        load_module(job["candidate_path"], "kz_candidate")
    except Exception as exc:  # the import failed: a compile error if a build failed, else "build it on the GPU"
        if state["compile_error"] is not None:
            raise StageError("compile", RuntimeError(state["compile_error"])) from exc
        if not state["calls"]:
            chan.send({"event": "unbuilt", "message": _short_tb(exc)})
            return
    # what failed to build is retried in the GPU worker
    chan.send({"event": "built", "calls": state["calls"], "modes": state["modes"]})


def _job_probe_headers(job: dict, chan: Channel, torch, bound: _Bound) -> None:
    """Issue 5: does this sandbox's host compiler take the farm's precompiled headers? No candidate code runs here."""
    chan.send({"event": "probed", "headers": probe_headers(job["headers"], job["with_cuda"], Path(job["scratch"]))})


def _cuda_profiler(torch):
    """A torch.profiler recording CUDA kernels, for counting the candidate's `__global__` launches (GPU only)."""
    from torch.profiler import ProfilerActivity, profile

    return profile(activities=[ProfilerActivity.CUDA])


JOBS = {"reference": _job_reference, "candidate": _job_candidate, "build": _job_build,
        "probe_headers": _job_probe_headers}
JOBS["validate"] = importlib.import_module("kernelzero.judge.sandbox.validate_job").bind(sys.modules[__name__])


def prewarm(torch, device: str) -> None:
    """Lazy first-use costs paid before the job arrives (no candidate code has run yet), so a warm worker's first
    trial pays none of them: the CUDA context, the op recorder's dispatch mode (its first op imports torch._dynamo:
    1.2 s on a dev CPU; on the H200 a cold worker's first call took 6-9 s against 0.8 s for Triton's own compile and
    launch in a plain process), the profiler that counts CUDA launches, and Triton's import."""
    if device == "cuda":
        torch.cuda.init()
    with make_op_recorder(torch):
        torch.zeros(1).add_(1)
    if device == "cuda":
        with _cuda_profiler(torch):
            torch.zeros(1, device="cuda").add_(1)
        torch.cuda.synchronize()
    import triton  # noqa: F401


def apply_limits(spec: str) -> None:
    """Set the limits the sandbox asked for (`core=0,fsize=N,as=N`, bytes), soft and hard, before torch or the job."""
    import resource

    names = {"core": resource.RLIMIT_CORE, "fsize": resource.RLIMIT_FSIZE, "as": resource.RLIMIT_AS}
    for item in filter(None, spec.split(",")):
        name, value = item.split("=")
        resource.setrlimit(names[name], (int(value), int(value)))


def main(argv: list[str]) -> int:
    chan_fd = int(argv[1])
    import faulthandler
    import signal

    faulthandler.register(signal.SIGUSR1, all_threads=True)  # `kill -USR1` prints a stuck worker's stacks to its log
    apply_limits(os.environ.get("KZ_RLIMITS", ""))
    try:  # issue 5: before the job arrives, so a pre-spawned (warm) worker has this done when it does
        import torch

        if os.environ.get("KZ_PREWARM"):  # a pre-spawned worker: time spent here is off the critical path
            prewarm(torch, os.environ.get("KZ_DEVICE", "cpu"))
    except Exception:
        pass  # reported below, on the channel, once the job (and its key) is here
    job = json.loads(sys.stdin.readline())
    chan = Channel(chan_fd, bytes.fromhex(job.pop("key")))
    try:
        import torch

        bound = _Bound(torch)
        bound.output_fds = {k: int(v) for k, v in (job.get("output_fds") or {}).items()}
        set_precision_policy(torch, bool(job.get("allow_tf32", False)))
        if job["device"] == "cuda":
            torch.cuda.init()
        veil = os.environ.get("KZ_SCRATCH_VEIL")  # set by the namespace prelude: were sibling scratches hidden?
        chan.send({"event": "started", "pid": os.getpid(), **({"veil": veil} if veil else {})})
        JOBS[job["kind"]](job, chan, torch, bound)
        chan.send({"event": "done"})
    except StageError as err:
        chan.send({"event": "error", "stage": err.stage, "type": type(err.exc).__name__, "message": _short_tb(err.exc)})
    except GuardViolation as err:
        chan.send({"event": "guard", "guard": err.guard, "message": str(err)})
    except BaseException as exc:  # the sandbox boundary: everything becomes a message
        chan.send({"event": "error", "stage": "harness", "type": type(exc).__name__, "message": _short_tb(exc)})
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # skip interpreter teardown: a candidate's atexit or __del__ must not run after our report


if __name__ == "__main__":
    sys.exit(main(sys.argv))
