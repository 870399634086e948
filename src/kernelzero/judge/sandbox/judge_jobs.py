"""The judging jobs of the worker: `reference` and `candidate`, each one process, driven by the parent's commands.

- `reference`: size the task on the `meta` device and wait for the parent's plan (seeds, replays, wide trials), then
  build `Model`, draw inputs per seed on the device, write outputs into its `out` memfd as they come, check the
  degenerate-task canaries on the device, seal, and optionally time the eager model and `torch.compile` of it.
  Never imports candidate code, so it cannot be slowed or patched by one.
- `candidate`: import the candidate file (this builds CUDA extensions / defines Triton kernels), build `ModelNew`
  with the same seed and weights as `Model`, run it on the same per-seed inputs once the parent sends the seeds,
  seal outputs into its `out` memfd, then on request time it (outputs kept from timed calls go to `timed`).
The messages each sends are `messages.PROTOCOL["reference"]` and `["candidate"]`; the parent's side is `judge.core`.
"""

from __future__ import annotations

import json
import resource
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kernelzero.judge.build.farm import install_load_inline_shim
from kernelzero.judge.check import REDUCTION_FAMILIES, degenerate_canary
from kernelzero.judge.guards import main_compute
from kernelzero.judge.sandbox.harness import (
    Bound,
    ForwardWatch,
    GuardViolation,
    LaunchCounter,
    NetworkBlock,
    StageError,
    build_model,
    check_precision_flags,
    checked_forward,
    cuda_profiler,
    flatten_outputs,
    input_reductions,
    load_module,
    make_inputs,
    make_op_recorder,
    meta_footprint,
    precision_flags,
    replay_inputs,
    run_forward_trials,
    run_replay,
    short_tb,
)
from kernelzero.judge.sandbox.integrity import Integrity
from kernelzero.judge.sandbox.messages import (
    CandidateBuilt,
    CandidateOutputs,
    CandidateTiming,
    Hung,
    ReferenceOutputs,
    ReferenceSized,
    ReferenceTiming,
    TimedSaved,
    TimingReady,
    wire,
)
from kernelzero.judge.sandbox.process import Channel
from kernelzero.judge.timing import time_model
from kernelzero.judge.wide import usable as wide_usable
from kernelzero.judge.wide import wide_inputs

# Extension points for the reward-hacking guards: called with (stage, context dict) inside the candidate's worker.
GUARD_HOOKS: list[Callable[[str, dict[str, Any]], None]] = []


def _is_kernel_compile_error(exc: BaseException) -> bool:
    """Triton compiles at first launch, so its compile errors surface in forward. Name them as compile errors."""
    if "Compil" in type(exc).__name__ and type(exc).__module__.startswith("triton"):
        return True
    if type(exc).__name__ == "InterpreterError":  # TRITON_INTERPRET=1 wraps what a GPU build would reject
        return isinstance(exc.__cause__, (AttributeError, NameError, TypeError, SyntaxError))
    return False


def job_reference(job: dict, chan: Channel, torch, bound: Bound) -> None:
    """Sizes first (the `meta` device: nothing allocated), then, once the parent has admitted the task's memory and
    sent its plan, the trials, replays and wide trials into the `out` memfd, the degenerate canaries, and timing."""
    device = job["device"]
    clock = [bound.perf_counter()]

    def lap() -> float:  # seconds since the last lap: the worker's split of a stage (`stage_s` figures only)
        now = bound.perf_counter()
        took, clock[0] = now - clock[0], now
        return took

    task_mod = load_module(job["task_path"], "kz_task")
    init_inputs = list(task_mod.get_init_inputs())
    sized = {"import": lap()}
    footprint = meta_footprint(torch, task_mod, init_inputs)
    chan.send(wire(ReferenceSized(footprint=footprint, seconds={**sized, "meta": lap()})))
    command = json.loads(sys.stdin.readline() or "{}")  # the plan, once the parent has admitted our memory
    if command.get("cmd") != "run":
        return
    lap()
    model = build_model(torch, task_mod.Model, init_inputs, job["init_seed"], device)
    seconds = {"model": lap()}
    recorder = make_op_recorder(torch)
    out = bound.writer("out")
    kept: list[list] = []  # the trials' outputs on the device, for the canaries

    def keep(t):
        kept[-1].append(bound.clone(t))
        return out.add(t)

    structures, outputs, sums = [], [], []
    for seed in command["seeds"]:
        kept.append([])
        s, o, c = run_forward_trials(torch, bound, model, task_mod, [seed], device, False, recorder, keep)
        structures += s
        outputs += o
        sums += c
    seconds["trials"] = lap()
    # within the trials, the first on its own: its inputs, then inputs and forward (the worker's first kernels took up
    # to 24 s of a 0.5 MB task's trials on a busy H100)
    seconds["trials.first_inputs"] = getattr(bound, "first_inputs_s", 0.0)
    seconds["trials.first_call"] = getattr(bound, "first_call_s", 0.0)
    replay = []  # only the perturbed entries come here: an unperturbed one is its trial's output (the parent's)
    for entry in command.get("replay", []):
        inputs = replay_inputs(torch, task_mod, command["seeds"], entry, device)
        replay.append(checked_forward(torch, bound, model, inputs, device, keep=out.add)[1])
    seconds["replay"] = lap()
    # Degenerate-task canaries, here on the device (a copy of a 6 GB input per trial would cross to the parent).
    identity, reductions = [], []
    for seed, outs in zip(command["seeds"], kept):
        inputs = [x for x in make_inputs(torch, task_mod, seed, device) if isinstance(x, torch.Tensor)]
        identity.append([next((x for x in inputs if x.shape == o.shape and x.dtype == o.dtype), None) for o in outs])
        reductions.append(input_reductions(torch, inputs, outs))  # canary "reduction"
    reduces = set(main_compute(recorder.ops)) <= REDUCTION_FAMILIES  # a task that IS a reduction matches one
    degenerate = degenerate_canary(kept, identity, job["atol"], job["rtol"], None if reduces else reductions)
    del identity, reductions
    seconds["canaries"] = lap()
    wide = []  # judge/wide.py: a trial the task itself cannot run is None, dropped by the parent
    for entry in command.get("wide", []):
        try:
            outs = checked_forward(torch, bound, model, wide_inputs(torch, task_mod, entry, device, make_inputs),
                                   device, keep=bound.clone)[1]  # fmt: skip
            wide.append([out.add(t) for t in outs] if wide_usable(torch, outs, kept[0]) else None)
        except Exception:
            wide.append(None)
    kept.clear()  # the device copies go before timing
    seconds["wide"] = lap()
    bound.seal("out", out, {"outputs": outputs, "replay": replay, "wide": wide})
    seconds["seal"] = lap()
    chan.send(wire(ReferenceOutputs(structures=structures, checksums=sums, ops=recorder.ops, degenerate=degenerate,
                                    gpu_peak=gpu_peak(torch), rss_peak=rss_peak(), seconds=seconds)))  # fmt: skip
    if not job.get("timing"):
        return
    # Everything slow happens before the parent takes the GPU's timing lock: inputs, and torch.compile's
    # compilation (tens of seconds of CPU work, which must not hold up other candidates' timing).
    input_sets = [make_inputs(torch, task_mod, s, device) for s in command["timing_seeds"]]
    compiled, compile_error = None, None
    if job.get("compile_baseline"):
        try:
            compiled = torch.compile(model)
            with torch.no_grad():
                compiled(*input_sets[0])
            bound.synchronize()
        except Exception as exc:  # torch.compile failing is a fact about the task, reported, not fatal
            compiled, compile_error = None, short_tb(exc, 2)
    chan.send(wire(TimingReady()))
    if json.loads(sys.stdin.readline() or "{}").get("cmd") != "time":
        return
    bound.release_exports()  # the parent has copied the outputs (it answers only after)
    eager = time_and_keep(torch, bound, model, input_sets, job["timing"], fresh_maker(torch, task_mod, command, device))
    compiled_stats = None
    if compiled is not None:
        try:
            compiled_stats = time_model(torch, bound, compiled, input_sets, job["timing"])
        except Exception as exc:
            compile_error = short_tb(exc, 2)
    chan.send(wire(ReferenceTiming(eager=eager, compile=compiled_stats, compile_error=compile_error,
                                   gpu_peak=gpu_peak(torch))))  # fmt: skip


def gpu_peak(torch) -> int | None:
    """Device memory this worker's allocator reserved at its peak (None off the GPU)."""
    return int(torch.cuda.max_memory_reserved()) if torch.cuda.is_available() else None


def rss_peak() -> int:
    """This worker's peak resident set, in bytes."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def fresh_maker(torch, task_mod, command: dict, device: str):
    """What makes the timing's fresh input sets (`fresh_seeds`, the same for the candidate and its reference), called
    by `time_model` only after the timed loop; None where the parent sent none."""
    seeds = command.get("fresh_seeds") or []
    return (lambda: [make_inputs(torch, task_mod, s, device) for s in seeds]) if seeds else None


def time_and_keep(torch, bound: Bound, model, input_sets: list, cfg: dict, fresh=None) -> dict:
    """`time_model` keeping one timed call's output per input set (then one per fresh set), saved to the `timed`
    memfd for the parent's check. Returns the timing summaries."""
    stats = time_model(torch, bound, model, input_sets, cfg, capture=capture_output(torch, bound), fresh=fresh)
    save_captured(torch, bound, stats.pop("captured"))
    return stats


class LaunchTally:
    """The candidate's model as the timing stage calls it, counting calls that completed none of its own kernels.

    Guard `no_custom_kernel`, timed calls: a module that is honest while checked and answers timed calls from a table
    (warm-up or phase detection, batch-and-skip, a cache keyed by data_ptr) returns right outputs, so no check of
    values sees it; it launches nothing on those calls. Every timed call must do its work.
    """

    def __init__(self, model, counter: LaunchCounter):
        self.model, self.counter, self.idle = model, counter, 0

    def __call__(self, *args):
        before = self.counter.count
        out = self.model(*args)
        self.idle += self.counter.count == before
        return out


def audit_cuda_launches(torch, bound: Bound, counter: LaunchCounter, model, input_sets: list) -> int | None:
    """Guard `no_custom_kernel`, timed calls, for CUDA candidates (whose launches the timing loop cannot count without
    the profiler skewing it): one more call per timing input set, after the timed loop and outside the timing lock,
    each under the profiler. Each is a repeat of an input the module has seen, as every timed call after the first
    is, so a module that answers repeats from a table launches nothing here. Returns the calls that launched none of
    the candidate's `__global__` kernels (None off the GPU)."""
    if not torch.cuda.is_available():
        return None
    idle = 0
    with torch.no_grad():
        for inputs in input_sets:
            before = counter.count
            with cuda_profiler(torch) as prof:
                model(*inputs)
                bound.synchronize()
            counter.count_cuda(prof)
            idle += counter.count == before
    return idle


def capture_output(torch, bound: Bound):
    """For `time_model`: one timed call's output, flattened and copied on the device (the module may reuse its
    buffers in later calls). A tensor subclass is kept as None, which the parent rejects."""

    def capture(out):
        structure, items = flatten_outputs(torch, out)
        return structure, [bound.clone(t) if type(t) is bound.tensor_type else None for t in items]

    return capture


def save_captured(torch, bound: Bound, captured: list) -> None:
    """The captured outputs of timed calls, as [(structure, [tensor | None])] per input set, into the `timed` memfd."""
    bound.save([(s, [None if t is None else t.detach() for t in ts]) for s, ts in captured], "timed")


def job_candidate(job: dict, chan: Channel, torch, bound: Bound) -> None:
    device = job["device"]
    task_mod = load_module(job["task_path"], "kz_task")
    init_inputs = list(task_mod.get_init_inputs())
    reference = build_model(torch, task_mod.Model, init_inputs, job["init_seed"], device)
    install_load_inline_shim(job)  # load prebuilt CUDA extensions from the build farm's cache
    counter = LaunchCounter(Path(job["candidate_path"]).read_text())
    counter.install_triton()  # before the candidate's import binds anything from Triton
    policy = precision_flags(torch)  # as the worker set it (TF32 off): guard `precision` compares against it
    network = NetworkBlock(getattr(bound, "_device_socket", None))
    network.install()  # guard `network`, from the candidate's import on
    integrity = Integrity(job["candidate_path"], counter.wrapped)  # guards `introspection`, `harness_patch`
    for hook in GUARD_HOOKS:
        hook("before_import", {"job": job})
    t0 = bound.perf_counter()
    try:
        cand_mod = load_module(job["candidate_path"], "kz_candidate")
    except Exception as exc:
        network.check()  # a refused install or connect that broke the import is named as such
        integrity.check()
        raise StageError("import", exc) from exc
    try:
        model = build_model(torch, cand_mod.ModelNew, init_inputs, job["init_seed"], device)
        # Same weights as the reference where names and shapes match (a candidate is judged on the same model).
        ref_state = reference.state_dict()
        own = model.state_dict()
        shared = {k: v for k, v in ref_state.items() if k in own and own[k].shape == v.shape}
        model.load_state_dict(shared, strict=False)
    except Exception as exc:
        integrity.check()
        raise StageError("init", exc) from exc
    del reference
    network.check()
    integrity.check()
    check_precision_flags(torch, policy)
    chan.send(wire(CandidateBuilt(seconds=bound.perf_counter() - t0)))
    command = json.loads(sys.stdin.readline() or "{}")  # seeds arrive only now: unseen at import and init
    if command.get("cmd") != "run":
        return
    recorder = make_op_recorder(torch)
    out = bound.writer("out")  # each output goes into the memfd as soon as its forward returns
    if command.get("hang_s"):  # the judge's hang watch (on a GPU), over every forward of the run
        bound.watch = ForwardWatch(float(command["hang_s"]), lambda: counter.jit_s,
                                   lambda s: chan.send(wire(Hung(seconds=s))))  # fmt: skip
    t_run = bound.perf_counter()
    try:
        counter.active = True
        profile = cuda_profiler(torch) if device == "cuda" and counter.cuda_names else None
        if profile is not None:
            with profile as prof:
                structures, outputs, sums = run_forward_trials(torch, bound, model, task_mod, command["seeds"],
                                                               device, True, recorder, out.add)  # fmt: skip
            counter.count_cuda(prof)
        else:
            structures, outputs, sums = run_forward_trials(torch, bound, model, task_mod, command["seeds"], device,
                                                           True, recorder, out.add)  # fmt: skip
        counter.active = False
        t_replay = bound.perf_counter()
        replay = run_replay(torch, bound, model, task_mod, command["seeds"], command.get("replay", []), device,
                            out.add)  # fmt: skip
        wide = [checked_forward(torch, bound, model, wide_inputs(torch, task_mod, e, device, make_inputs), device,
                                keep=out.add)[1]
                for e in command.get("wide", [])]  # judge/wide.py: other value ranges and sizes  # fmt: skip
    except GuardViolation:
        raise
    except Exception as exc:
        network.check()
        integrity.check()
        raise StageError("compile" if _is_kernel_compile_error(exc) else "forward", exc) from exc
    finally:
        if bound.watch is not None:
            bound.watch.stop()
            bound.watch = None
    network.check()
    integrity.check()  # before the outputs are sealed: the writer is one of the sealed functions
    check_precision_flags(torch, policy)
    # launches is None where nothing could count them (a CUDA candidate on a machine without the profiler trace)
    countable = job.get("backend") == "triton" or device == "cuda"
    t_save = bound.perf_counter()
    bound.seal("out", out, {"outputs": outputs, "replay": replay, "wide": wide})
    seconds = {"first_call": getattr(bound, "first_call_s", 0.0), "trials": t_replay - t_run,
               "replay": t_save - t_replay, "save": bound.perf_counter() - t_save}  # fmt: skip
    chan.send(wire(CandidateOutputs(structures=structures, checksums=sums, ops=recorder.ops,
                                    launches=counter.count if countable else None, seconds=seconds,
                                    gpu_peak=gpu_peak(torch), rss_peak=rss_peak())))  # fmt: skip
    if not job.get("timing"):
        return
    command = json.loads(sys.stdin.readline() or "{}")  # wait until the parent has the GPU to itself for us
    if command.get("cmd") != "time":
        return
    bound.release_exports()  # the parent has copied the outputs (it answers only after)
    # Timing seeds arrive with the command, never in the job: a candidate that read them at import could
    # precompute the timed inputs' outputs and answer timed calls from a table.
    t0 = bound.perf_counter()
    input_sets = [make_inputs(torch, task_mod, s, device) for s in command["timing_seeds"]]
    t1 = bound.perf_counter()
    integrity.check()
    tally = LaunchTally(model, counter) if job.get("backend") == "triton" else None  # CUDA: the profiler would skew
    try:
        counter.active = True
        fresh = fresh_maker(torch, task_mod, command, device)
        stats = time_model(torch, bound, tally or model, input_sets, job["timing"],
                           capture=capture_output(torch, bound), fresh=fresh)  # fmt: skip
    except Exception as exc:
        integrity.check()
        raise StageError("timing", exc) from exc
    finally:
        counter.active = False
    integrity.check()  # the clock and the summary that produced these figures were the judge's own
    captured = stats.pop("captured")
    seconds = {"timing_inputs": t1 - t0, "timing": bound.perf_counter() - t1}
    chan.send(wire(CandidateTiming(candidate=stats, storage_bytes=getattr(bound, "storage_bytes", 0), seconds=seconds,
                                   idle_calls=None if tally is None else tally.idle)))  # fmt: skip
    # Throughput: the timed outputs leave the GPU once the parent has let the GPU go, and only when it says so: never
    # while another module is timed (on the H200 the copy and the save were most of the GPU's time alone with each
    # candidate: `time` went from 0.36 s to 0.056 s when they left it).
    if json.loads(sys.stdin.readline() or "{}").get("cmd") != "save_timed":
        return
    t2 = bound.perf_counter()
    audited = tally is None and counter.cuda_names  # a CUDA candidate: its timed calls were not counted
    idle = audit_cuda_launches(torch, bound, counter, model, input_sets) if audited else None
    integrity.check()
    # Saved last, after the audit's calls: no candidate code runs between the save and the parent's copy of the
    # device outputs (devmem: the parent copies them as soon as it reads this report).
    save_captured(torch, bound, captured)
    chan.send(wire(TimedSaved(seconds={"save": bound.perf_counter() - t2}, idle_calls=idle, gpu_peak=gpu_peak(torch))))
