"""The worker: the only place task and candidate code runs. One job per process, then it exits.

Started by `Sandbox` as `python -m kernelzero.judge.worker RESULT_FD`; reads one JSON job line on stdin, reports on
the signed channel (RESULT_FD). Jobs:
- `reference`: build `Model`, draw inputs per seed on the device, write outputs to `ref.pt`, optionally time the
  eager model and `torch.compile` of it. Never imports candidate code, so it cannot be slowed or patched by one.
- `candidate`: import the candidate file (this builds CUDA extensions / defines Triton kernels), build `ModelNew`
  with the same seed and weights as `Model`, run it on the same per-seed inputs, write outputs to `out.pt`, then
  on request time it.
Everything the harness needs from torch is bound before candidate code is imported (see `_Bound`): patching
`torch.cuda.Event` later does not change our clock. Guards of `kernelzero.judge.guards` hook in at `GUARD_HOOKS`.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kernelzero.judge.build import install_load_inline_shim
from kernelzero.judge.sandbox import Channel


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
        self.save = torch.save
        self.clone = torch.Tensor.clone
        self.equal = torch.equal
        self.tensor_type = torch.Tensor
        if torch.cuda.is_available():
            self.event = torch.cuda.Event
            self.synchronize = torch.cuda.synchronize
            self.elapsed = torch.cuda.Event.elapsed_time


# Extension points for the reward-hacking guards (issue 4): called with (stage, context dict) inside the worker.
GUARD_HOOKS: list[Callable[[str, dict[str, Any]], None]] = []


def run_forward_trials(torch, bound: _Bound, model, task_mod, seeds: list[int], device: str, check_inputs: bool):
    """Per seed: fresh inputs, one forward, outputs copied to CPU. Returns (structures, outputs, input checksums)."""
    structures, outputs, sums = [], [], []
    for seed in seeds:
        inputs = make_inputs(torch, task_mod, seed, device)
        sums.append(checksum(torch, inputs))
        before = [bound.clone(x) if isinstance(x, bound.tensor_type) else x for x in inputs] if check_inputs else []
        with torch.no_grad():
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
        for x, x0 in zip(inputs, before):
            if isinstance(x, bound.tensor_type) and not bound.equal(x, x0):
                raise GuardViolation("input_mutation", "forward modified its input tensor")
        structures.append(structure)
        outputs.append([t.detach().to("cpu", copy=True).contiguous() for t in items])
    return structures, outputs, sums


def _shares_storage(a, b) -> bool:
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


class GuardViolation(Exception):
    def __init__(self, guard: str, message: str):
        super().__init__(message)
        self.guard = guard


def _job_reference(job: dict, chan: Channel, torch, bound: _Bound) -> None:
    from kernelzero.judge.timing import time_model

    device = job["device"]
    task_mod = load_module(job["task_path"], "kz_task")
    init_inputs = list(task_mod.get_init_inputs())
    model = build_model(torch, task_mod.Model, init_inputs, job["init_seed"], device)
    structures, outputs, sums = run_forward_trials(torch, bound, model, task_mod, job["seeds"], device, False)
    bound.save({"outputs": outputs}, Path(job["scratch"]) / "ref.pt")
    chan.send({"event": "outputs", "file": "ref.pt", "structures": structures, "checksums": sums})
    if not job.get("timing") or json.loads(sys.stdin.readline() or "{}").get("cmd") != "time":
        return
    input_sets = [make_inputs(torch, task_mod, s, device) for s in job["timing_seeds"]]
    result = {"event": "timing", "eager": time_model(torch, bound, model, input_sets, job["timing"])}
    if job.get("compile_baseline"):
        try:
            compiled = torch.compile(model)
            result["compile"] = time_model(torch, bound, compiled, input_sets, job["timing"])
        except Exception as exc:  # torch.compile failing is a fact about the task, reported, not fatal
            result["compile_error"] = _short_tb(exc, 2)
    chan.send(result)


def _job_candidate(job: dict, chan: Channel, torch, bound: _Bound) -> None:
    from kernelzero.judge.timing import time_model

    device = job["device"]
    task_mod = load_module(job["task_path"], "kz_task")
    init_inputs = list(task_mod.get_init_inputs())
    reference = build_model(torch, task_mod.Model, init_inputs, job["init_seed"], device)
    install_load_inline_shim(job)  # issue 5: load prebuilt CUDA extensions from the build farm's cache
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
    try:
        structures, outputs, sums = run_forward_trials(torch, bound, model, task_mod, command["seeds"], device, True)
    except GuardViolation:
        raise
    except Exception as exc:
        raise StageError("compile" if _is_kernel_compile_error(exc) else "forward", exc) from exc
    bound.save({"outputs": outputs}, Path(job["scratch"]) / "out.pt")
    chan.send({"event": "outputs", "file": "out.pt", "structures": structures, "checksums": sums})
    if not job.get("timing"):
        return
    command = json.loads(sys.stdin.readline() or "{}")  # wait until the parent has the GPU to itself for us
    if command.get("cmd") != "time":
        return
    input_sets = [make_inputs(torch, task_mod, s, device) for s in job["timing_seeds"]]
    try:
        stats = time_model(torch, bound, model, input_sets, job["timing"])
    except Exception as exc:
        raise StageError("timing", exc) from exc
    chan.send({"event": "timing", "candidate": stats})


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
    chan.send({"event": "built", "calls": state["calls"]})  # what failed to build is retried in the GPU worker


JOBS = {"reference": _job_reference, "candidate": _job_candidate, "build": _job_build}


def main(argv: list[str]) -> int:
    chan_fd = int(argv[1])
    try:  # issue 5: before the job arrives, so a pre-spawned (warm) worker has this done when it does
        import torch  # noqa: F401
    except Exception:
        pass  # reported below, on the channel, once the job (and its key) is here
    job = json.loads(sys.stdin.readline())
    chan = Channel(chan_fd, bytes.fromhex(job.pop("key")))
    try:
        import torch

        bound = _Bound(torch)
        set_precision_policy(torch, bool(job.get("allow_tf32", False)))
        if job["device"] == "cuda":
            torch.cuda.init()
        chan.send({"event": "started", "pid": os.getpid()})
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
