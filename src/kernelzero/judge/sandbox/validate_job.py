"""The worker's `validate` job: run a proposed task module so the caller can decide whether it is a usable task.

Runs inside the sandboxed worker (registered in `worker.JOBS`); it decides nothing. It reports sizes, seals the
outputs of three forwards into its `out` memfd and reports the forward time (`messages.Sized`,
`messages.ValidateOutputs`); `kernelzero.curriculum.validate` reads them in the caller's process and names the
reason a task is rejected. The three forwards:
  a: inputs drawn with `input_seed`, global RNG reseeded to 1 just before forward;
  b: a second call of the same model on the same inputs, RNG reseeded to 2  -> a != b: nondeterministic (random
     sampling or dropout in forward, state kept between calls);
  c: inputs drawn with `other_seed`                                        -> a == c: the output ignores its input.
Forward c also records what it ran (`call_recorder`: torch functions and aten ops, off the timed forwards a and b),
so the caller sees an API built in __init__ that forward never calls.
Sizes are measured on the `meta` device first where the task allows it, so an over-budget task is reported without
allocating its tensors; then on the real device. The sizes and times are the worker's word (task code runs in this
process and could forge them); the caller's wall-clock timeout and the worker's memory limit do not depend on it.
"""

from __future__ import annotations

import contextlib
import signal

from kernelzero.judge.sandbox.harness import (
    Bound,
    StageError,
    build_model,
    flatten_outputs,
    load_module,
    make_inputs,
    make_op_recorder,
)
from kernelzero.judge.sandbox.messages import Sized, ValidateOutputs, wire
from kernelzero.judge.sandbox.process import Channel


def _numel(torch, tensors) -> int:
    return sum(int(t.numel()) for t in tensors if isinstance(t, torch.Tensor))


def _sizes(torch, task_mod, init_inputs: list, device: str) -> dict:
    model = build_model(torch, task_mod.Model, init_inputs, 0, device)
    inputs = make_inputs(torch, task_mod, 0, device)
    params = _numel(torch, model.parameters()) + _numel(torch, model.buffers())
    return {"input_elements": _numel(torch, inputs), "param_elements": params}


def _over(sizes: dict, job: dict) -> bool:
    return sizes["input_elements"] > job["max_input_elements"] or sizes["param_elements"] > job["max_param_elements"]


class OverBudget(Exception):
    """A forward still running at the job's `forward_limit_s`: stopped there (the caller's `too_slow`), not run to
    its end (a 30 s forward took the worker 25-29 s per task before it was rejected)."""


def _over_budget(signum, frame) -> None:
    raise OverBudget("forward still running at its time limit; stopped")


def call_recorder(torch):
    """What a forward runs, by name: torch functions and Tensor methods as Python called them (a TorchFunctionMode:
    `layer_norm`, `linear`, `tanh`) and the aten ops they dispatched (`native_layer_norm`, `addmm`). The caller's
    `missing_api` check reads it: an API built in __init__ but never run in forward is not used by the task."""
    from torch.overrides import TorchFunctionMode

    dispatch = make_op_recorder(torch)

    class Calls(TorchFunctionMode):
        def __init__(self):
            super().__init__()
            self.names: set[str] = set()

        def __torch_function__(self, func, types, args=(), kwargs=None):
            self.names.add(str(getattr(func, "__name__", func)))
            return func(*args, **(kwargs or {}))

        def __enter__(self):
            dispatch.__enter__()
            return super().__enter__()

        def __exit__(self, *exc):
            super().__exit__(*exc)
            dispatch.__exit__(*exc)

        def clear(self) -> None:
            self.names.clear()
            dispatch.ops.clear()

        def ran(self) -> list[str]:
            return sorted(self.names | set(dispatch.ops))

    return Calls()


def _forward(torch, bound: Bound, model, inputs: list, rng_seed: int, device: str,
             calls=None) -> tuple[list, str, float]:  # fmt: skip
    torch.manual_seed(rng_seed)  # forward must not depend on the global RNG: a different stream per call shows it
    t0 = bound.perf_counter()
    with torch.no_grad(), calls if calls is not None else contextlib.nullcontext():
        out = model(*inputs)
    if device == "cuda":
        bound.synchronize()
    ms = (bound.perf_counter() - t0) * 1e3
    structure, items = flatten_outputs(torch, out)
    tensors = [t.detach().to("cpu", copy=True).contiguous() if type(t) is bound.tensor_type else None for t in items]
    return tensors, structure, ms


def job_validate(job: dict, chan: Channel, torch, bound: Bound) -> None:
    device = job["device"]
    try:
        task_mod = load_module(job["task_path"], "kz_task")
    except Exception as exc:
        raise StageError("import", exc) from exc
    try:
        init_inputs = list(task_mod.get_init_inputs())
    except Exception as exc:
        raise StageError("init", exc) from exc
    try:
        meta = _sizes(torch, task_mod, init_inputs, "meta")
    except Exception:  # data-dependent code (.item(), numpy) cannot run on meta; measure the real tensors below
        meta = None
    if meta is not None and _over(meta, job):
        chan.send(wire(Sized(meta=True, **meta)))
        return
    try:
        model = build_model(torch, task_mod.Model, init_inputs, job["init_seed"], device)
    except Exception as exc:
        raise StageError("init", exc) from exc
    try:
        inputs = make_inputs(torch, task_mod, job["input_seed"], device)
        other = make_inputs(torch, task_mod, job["other_seed"], device)
    except Exception as exc:
        raise StageError("inputs", exc) from exc
    params = _numel(torch, model.parameters()) + _numel(torch, model.buffers())
    sizes = {"input_elements": _numel(torch, inputs), "param_elements": params}
    chan.send(wire(Sized(meta=False, **sizes)))
    if _over(sizes, job):
        return
    runs, structures, times = [], [], []
    calls = call_recorder(torch)
    with calls:  # its first use imports torch._dynamo (over a second on a loaded CPU): not the task's time
        torch.zeros(1).add_(1)
    calls.clear()
    limit = float(job.get("forward_limit_s") or 0)
    if limit:
        signal.signal(signal.SIGALRM, _over_budget)
    try:
        for k, (xs, rng_seed) in enumerate(((inputs, 1), (inputs, 2), (other, 1))):
            signal.setitimer(signal.ITIMER_REAL, limit * (2 if k == 0 else 1))  # 0: none; the first call warms up
            try:
                tensors, structure, ms = _forward(torch, bound, model, xs, rng_seed, device, calls if k == 2 else None)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            runs.append(tensors)
            structures.append(structure)
            times.append(ms)
    except OverBudget as exc:
        raise StageError("budget", exc) from exc
    except Exception as exc:
        raise StageError("forward", exc) from exc
    bad = [i for i, t in enumerate(runs[0]) if t is None]
    bound.save({"runs": [[t for t in r if t is not None] for r in runs]}, "out")
    chan.send(wire(ValidateOutputs(structures=structures, non_tensor=bad, forward_ms=min(times), ran=calls.ran())))
