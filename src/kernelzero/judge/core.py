"""The judge's decision: run the reference and the candidate in separate sandboxes, compare here, emit a Verdict.

Order of events for one candidate (each arrow a message on the signed channel, each stage under its own timeout):
  static checks (here, on the source)          -> format_error / rejected
  candidate worker: import (build)  -> built   -> compile_error / timeout / crashed
  parent draws fresh seeds, sends them          (the candidate could not have seen its inputs at import time)
  candidate worker: trials          -> outputs -> runtime_error / rejected (worker-side guards)
  parent compares with the reference outputs   -> incorrect
  parent compares the replay trials            -> rejected (replay: same input buffer, new contents, other order)
  parent checks launches and library ops       -> rejected (no_custom_kernel, see guards.library_op_violation)
  task is degenerate (a canary passes)         -> infra_error (degenerate; env["degenerate_task"]; not scored)
  GPU only: parent takes the device's timing lock, then -> timing (reference timed the same way, in its own worker)
  parent compares one timed call's output per timing input set -> rejected (replay: honest only when not timed)
  parent counts timed calls that launched none of the candidate's kernels -> rejected (no_custom_kernel; Triton)
  parent checks the timed calls' speed (physics, new inputs) -> rejected (roofline, fresh_inputs, side_stream)
The reference runs in a worker that never imports candidate code; its outputs are computed once per task and seed
set and kept in this process. A failure of the reference is the task's fault, never the candidate's: infra_error.
Before either worker allocates anything, the task is sized on the `meta` device: a task no GPU slot or host budget
can hold is infra_error `too_large` at once; a big one runs fewer trials (`footprint.choose_plan`); every worker is
admitted by its memory (`admission`). Outputs of any size cross in a sealed memfd (`sandbox/pack.py`) and are
compared in pieces (`check.compare`).
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, CancelledError, Future, wait
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

import torch

from kernelzero.judge.admission import MemoryPlanning, _memory_figures, _nbytes, _put, _replay_plan, _seeds
from kernelzero.judge.build.farm import BuildFarm
from kernelzero.judge.check import degenerate_canary  # noqa: F401 (re-exported)
from kernelzero.judge.comparing import Comparing, _lists_of_lists, out_of_memory
from kernelzero.judge.env import fingerprint
from kernelzero.judge.footprint import Footprint, MemoryGate, Plan
from kernelzero.judge.guards import STATIC, library_op_violation, timing_violation
from kernelzero.judge.options import BACKENDS, JudgeOptions
from kernelzero.judge.sandbox.devmem import DeviceMemoryError
from kernelzero.judge.sandbox.messages import (
    CandidateBuilt,
    CandidateOutputs,
    CandidateTiming,
    Done,
    Failed,
    GuardHit,
    Hung,
    Message,
    ProtocolError,
    ReferenceOutputs,
    ReferenceSized,
    ReferenceTiming,
    Started,
    TimedSaved,
    TimingReady,
    parse,
)
from kernelzero.judge.sandbox.process import ChannelError, Sandbox, WarmSandboxes, describe_exit, isolation_mode
from kernelzero.judge.stages import add_split, marks, stopwatch, waited
from kernelzero.judge.timing import comparable
from kernelzero.judge.triton_front import front_verdict
from kernelzero.judge.verdict import Timing, Verdict
from kernelzero.judge.wide import wide_plan
from kernelzero.syntax import parse as parse_source
from kernelzero.tasks import Task

# Static checks on candidate source (the anti-hacking rules of guards.STATIC): (tree, source, backend) -> (guard, msg).
StaticCheck = Callable[[ast.Module, str, str], "tuple[str, str] | None"]
STATIC_CHECKS: list[StaticCheck] = list(STATIC)  # kernelzero.judge.guards; the first hit decides
M = TypeVar("M", bound=Message)  # the worker message a stage waits for


def source_hash(*parts: str) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


def _timing(stats: dict | None) -> Timing | None:
    return Timing(**stats["events"]) if stats else None


class StageFailure(Exception):
    """Internal: a candidate stage ended in a non-ok verdict."""

    def __init__(self, verdict: Verdict):
        self.verdict = verdict


@dataclass
class Reference:
    """Reference outputs for one task and one seed set, plus its runtimes. Lives in the judge's process."""

    init_seed: int
    seeds: list[int]
    timing_seeds: list[int]
    fresh_seeds: list[int] = field(default_factory=list)  # the timing's never-seen sets (`fresh_inputs`): `_plan`
    outputs: list[list[torch.Tensor]] = field(default_factory=list)
    structures: list[str] = field(default_factory=list)
    checksums: list[list[str]] = field(default_factory=list)
    eager: dict | None = None
    compiled: dict | None = None
    error: str | None = None  # the task itself failed: candidates on it get infra_error
    ops: dict[str, int] = field(default_factory=dict)  # aten op -> elements, for `guards.library_op_violation`
    replay: list[list[int]] = field(default_factory=list)  # [trial index, perturbation seed] per replay trial
    replay_outputs: list[list[torch.Tensor]] = field(default_factory=list)
    wide: list[dict] = field(default_factory=list)  # the wide trials the reference could run (judge/wide.py)
    wide_outputs: list[list[torch.Tensor]] = field(default_factory=list)
    degenerate: str | None = None  # the canary that passes the check on this task (zeros, mean, input), if any
    timed_outputs: list = field(default_factory=list)  # [(structure, tensors)] per timing input set (guard replay)
    seconds: float = 0.0  # wall time to compute it (worker start to timing), for throughput figures
    on_device: bool = False  # its tensors live on the judge's compare GPU (`Judge._keep`)
    footprint: Footprint | None = None  # one forward's bytes (the meta device's measure, else the real outputs')
    plan: Plan | None = None  # how many trials, replays, wide trials and timed sets its output size allows
    lease: dict[str, int] | None = None  # a big task's share for one candidate, reserved with its reference
    lease_lock: threading.Lock = field(default_factory=threading.Lock)  # taken by the candidate using the lease
    holds: dict[str, int] = field(default_factory=dict)  # what it still holds in the gate (released when it dies)
    too_large: str | None = None  # why the task cannot be judged here at all (guard `too_large`)
    out_of_memory: bool = False  # the reference ran out of device memory (retried alone once)
    free_gb: float | None = None  # the device's free memory when the run alone started
    gpu_peak: int | None = None  # device bytes the reference's worker reserved at its peak
    rss_peak: int | None = None
    stage_s: dict[str, float] = field(default_factory=dict)  # where its wall time went (copied into verdicts)

    def tensors(self) -> list[torch.Tensor]:
        """Every tensor this reference keeps (outputs, replay, wide and timed outputs), a tensor shared once."""
        groups = [*self.outputs, *self.replay_outputs, *self.wide_outputs, *(ts for _, ts in self.timed_outputs)]
        return list({id(t): t for g in groups for t in g if isinstance(t, torch.Tensor)}.values())

    @property
    def nbytes(self) -> int:
        """Bytes of tensors this reference keeps."""
        return _nbytes(self.tensors())


class Judge(MemoryPlanning, Comparing):
    """Judges candidates against tasks. Thread-safe: a pool calls `judge` from many threads."""

    def __init__(self, options: JudgeOptions | None = None):
        self.options = options or JudgeOptions()
        self.device = self.options.resolved_device()
        self.isolation = isolation_mode()
        self.env = fingerprint(self.device, self.options.allow_tf32, self.isolation)
        self._refs: OrderedDict[str, Reference] = OrderedDict()  # least recently used first
        self._ref_locks: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()
        self.timing_lock = threading.Lock()  # one timed module at a time on the GPU
        # Throughput, set by the pools: a CPU build farm, env for every worker (CUDA_VISIBLE_DEVICES of
        # this judge's GPU), and a bound on live candidate workers. Unset: builds happen in the candidate worker.
        self.farm: BuildFarm | None = None
        self.sandbox_env: dict[str, str] = {}
        self.gpu_slots: threading.Semaphore | None = None
        self.warm: WarmSandboxes | None = None
        # Where outputs are compared: this judge's GPU when it has one (pools set the device index per judge).
        self.compare_device: str | None = "cuda" if self.device == "cuda" else None
        self._gate: MemoryGate | None = None  # admission by memory (`gate`); a pool sets one shared by its judges
        self.gpu_key = "gpu"  # this judge's GPU in the gate

    @property
    def timed(self) -> bool:
        return self.options.timing and (self.device == "cuda" or self.options.timing_on_cpu)

    # ------------------------------------------------------------------ public
    def judge(self, task: Task, source: str, backend: str) -> Verdict:
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
        base = self._base(task, source, backend)
        static = self.static_check(source, backend)
        if static is not None:
            return Verdict.fail(static[0], static[2], guard=static[1], **base)
        if backend == "cuda" and self.device != "cuda":
            return Verdict.fail("infra_error", "CUDA candidates need a GPU; this judge runs on CPU", **base)
        # the CPU farm builds while the reference runs (a cold task's reference takes 10-20 s on a GPU)
        build = self.farm.submit(source, self.options.front_check) if self.farm is not None else None
        early = self._compile_error_first(task, build, base)
        if early is not None:
            return early
        t_ref = time.monotonic()
        ref = self.reference(task)
        base["stage_s"] = {"reference": round(time.monotonic() - t_ref, 3), **ref.stage_s}
        if ref.too_large is not None:
            return Verdict.fail("infra_error", f"too large to judge here: {ref.too_large}", guard="too_large", **base)
        if ref.error is not None:
            return Verdict.fail("infra_error", f"the reference Model failed: {ref.error}", guard="reference", **base)
        try:
            verdict = self._attempt(task, source, ref, base, build, alone=False)
            if self.device == "cuda" and verdict.status == "runtime_error" and out_of_memory(verdict.feedback):
                # beside other workers, maybe (a wrong estimate is the judge's fault): once more with the GPU to
                # itself, where running out of memory again is the candidate's own
                verdict = self._attempt(task, source, ref, base, build, alone=True)
                if verdict.guard in ("load", "compare") and out_of_memory(verdict.feedback):  # alone, still short:
                    verdict = replace(verdict, status="infra_error")  # the judge's memory, not the kernel
            return verdict
        finally:
            if self._on_device(ref.footprint):  # its outputs' copies here, freed: give the blocks back to the GPU
                torch.cuda.empty_cache()  # (cached, they starved the next big task's workers: 'out of memory')

    def _base(self, task: Task, source: str, backend: str) -> dict:
        return {"backend": backend, "device": self.device, "env": self.env, "task": task.name,
                "candidate_hash": source_hash(source, backend)}  # fmt: skip

    def answer_from_build(self, task: Task, source: str, backend: str, built) -> Verdict | None:
        """The verdict a finished farm build decides on its own (a compile error: `judge` gives the same), else None."""
        return _farm_verdict(built, {}, self._base(task, source, backend))

    def _compile_error_first(self, task: Task, build: Future | None, base: dict) -> Verdict | None:
        """A compile error the farm finds (its front check: ~1 s) before the task's reference is ready (10-20 s cold
        on a GPU) is answered at once, the reference computed on for the task's other candidates; else None."""
        if build is None:
            return None
        with self._lock:
            cached = source_hash(task.source, self.device) in self._refs
        if not cached and not build.done():
            ref: Future = Future()

            def compute() -> None:
                try:
                    ref.set_result(self.reference(task))
                except BaseException as exc:  # raised again where `judge` asks for it
                    ref.set_exception(exc)

            threading.Thread(target=compute, name="kz-reference", daemon=True).start()
            wait([build, ref], return_when=FIRST_COMPLETED)
        if not build.done() or build.cancelled():
            return None
        return _farm_verdict(build.result(), {}, base)

    def reference(self, task: Task) -> Reference:
        """Reference outputs (and runtimes on GPU) for `task`, computed once in a candidate-free worker."""
        key = source_hash(task.source, self.device)
        with self._lock:
            lock = self._ref_locks.setdefault(key, threading.Lock())
        with lock:
            with self._lock:
                ref = self._refs.get(key)
                if ref is not None:
                    self._refs.move_to_end(key)
                    return ref
            ref = self._run_reference(task)
            if ref.out_of_memory:  # beside other workers, maybe: once more with the GPU to itself
                ref = self._run_reference(task, alone=True)
                if ref.out_of_memory:
                    why = next((line.strip() for line in ref.error.splitlines() if "out of memory" in line.lower()),
                               ref.error[-300:])  # the allocator's own line: how much it asked for, what was free
                    ref.too_large = (f"the reference ran out of GPU memory with the GPU to itself ({ref.free_gb} GB "
                                     f"free when it started): {why[:400]}")  # fmt: skip
            self._keep(ref)
            if self._on_device(ref.footprint):
                torch.cuda.empty_cache()  # copies not kept (a failed reference's, or moved to the host) go back
            with self._lock:
                self._refs[key] = ref
                self._evict()
            return ref

    def _hang_after(self, ref: Reference, source: str) -> float:
        """Seconds a candidate's forward may run, its Triton compiles not counted (`JudgeOptions.hang_after_s`): the
        floor, or 1,000 times the reference's timed call where that is longer. 0 (no watch) on CPU, where the floor is
        0, or for a candidate that may use torch.compile, whose first forward's compile is not a Triton launch's."""
        floor = self.options.hang_after_s
        if self.device != "cuda" or floor <= 0 or any(w in source for w in ("torch.compile", "_dynamo", "inductor")):
            return 0.0
        ref_ms = ((ref.eager or {}).get("events") or {}).get("median_ms") or 0.0
        return max(floor, ref_ms)  # 1,000 x ms is ms in seconds

    def _trials_guard(self):
        shared = getattr(self.timing_lock, "shared", None)  # a SharedExclusiveLock when a pool set one
        return shared() if shared is not None else contextlib.nullcontext()

    def static_check(self, source: str, backend: str) -> tuple[str, str, str] | None:
        """(status, guard, feedback) the source alone decides, in milliseconds with nothing run; else None."""
        try:
            tree = parse_source(source)
        except SyntaxError as exc:
            return "format_error", "syntax", f"SyntaxError: {exc.msg} (line {exc.lineno})"
        if not any(isinstance(n, ast.ClassDef) and n.name == "ModelNew" for n in ast.walk(tree)):
            return "format_error", "no_modelnew", "the solution defines no `class ModelNew`"
        for check in STATIC_CHECKS:
            hit = check(tree, source, backend)
            if hit is not None:
                return "rejected", hit[0], hit[1]
        return front_verdict(tree, backend) if self.options.front_check else None  # in ms: nothing runs

    def _sandbox(self, job: dict[str, Any]) -> Sandbox:
        device_min = int(self.options.device_outputs_mb * 2**20) if self.device == "cuda" else 0
        job = {**job, "device": self.device, "allow_tf32": self.options.allow_tf32, "device_min_bytes": device_min}
        if self.warm is not None:  # a pre-spawned worker (same env), see WarmSandboxes
            return self.warm.take(job)
        return Sandbox(
            job=job, device=self.device, memory_limit_gb=self.options.memory_limit_gb, extra_env=dict(self.sandbox_env)
        )

    def _run_reference(self, task: Task, alone: bool = False) -> Reference:
        """Run the task's reference in its own worker: its footprint first (the `meta` device), then, once its memory
        is admitted (`alone`: the whole GPU), the plan's trials. A task that cannot fit is `too_large` at once."""
        o = self.options
        ref = Reference(init_seed=_seeds(1)[0], seeds=_seeds(o.trials), timing_seeds=_seeds(o.timing_sets))
        ref.replay = _replay_plan(o.trials)
        ref.wide = wide_plan(task.source, _seeds(2))
        t_start = time.monotonic()
        job = {"kind": "reference", "init_seed": ref.init_seed, "atol": o.atol, "rtol": o.rtol}
        if self.timed:
            job.update(timing=o.timing_config(), compile_baseline=o.compile_baseline)
        sb = self._sandbox(job)
        (sb.scratch / "task.py").write_text(task.source)
        sb.job["task_path"] = str(sb.scratch / "task.py")
        held: dict[str, int] = {}
        mark = marks(ref.stage_s, "ref.")
        try:
            sb.start()
            deadline = time.monotonic() + o.build_timeout_s + o.run_timeout_s
            while True:
                msg = _receive(sb, deadline, "reference")  # task code runs there: a malformed message is its fault
                if msg is None:
                    exit_ = sb.finish()
                    ref.error = f"reference worker {describe_exit(exit_.returncode)}: {exit_.log_tail[-800:]}"
                    break
                if isinstance(msg, Started):  # the worker is up (forked, or a warm one taken), its CUDA started
                    mark("start")
                    add_split(ref.stage_s, "ref.start", msg.seconds)
                elif isinstance(msg, ReferenceSized):
                    ref.footprint = Footprint(**msg.footprint) if msg.footprint is not None else None
                    ref.too_large = self._too_large(ref.footprint)
                    if ref.too_large is not None:
                        ref.error = ref.too_large
                        break
                    self._plan(ref)
                    mark("sized")
                    add_split(ref.stage_s, "ref.sized", msg.seconds)
                    held = self._admit_reference(ref, alone)
                    mark("wait_memory")
                    if alone and self.device == "cuda":
                        ref.free_gb = round(self._await_free_gpu(), 1)
                        mark("wait_free")
                    sb.send({"cmd": "run", "seeds": ref.seeds, "replay": [e for e in ref.replay if e[1]],
                             "wide": ref.wide, "timing_seeds": ref.timing_seeds, "fresh_seeds": ref.fresh_seeds})
                    deadline = time.monotonic() + o.build_timeout_s + o.run_timeout_s
                elif isinstance(msg, ReferenceOutputs):
                    mark("run")
                    add_split(ref.stage_s, "ref.run", msg.seconds)
                    if not self._take_outputs(ref, sb.load_output("out", self.compare_device), msg):
                        break
                    mark("load")
                    if self.timed:
                        # torch.compile compiles before `timing_ready`, outside the lock (other GPUs' work goes on)
                        ready = _receive(sb, time.monotonic() + 4 * o.run_timeout_s, "reference")
                        if not isinstance(ready, TimingReady):
                            ref.error = f"reference timing failed: {ready or sb.log_tail()[-800:]}"
                            break
                        mark("timing_inputs")
                        with self.timing_lock:
                            mark("wait_timing")
                            sb.send({"cmd": "time"})
                            timing = _receive(sb, time.monotonic() + 2 * o.run_timeout_s, "reference")  # eager+compile
                            mark("time")
                        if not isinstance(timing, ReferenceTiming):
                            ref.error = f"reference timing failed: {timing or sb.log_tail()[-800:]}"
                            break
                        ref.eager, ref.compiled = timing.eager, timing.compile
                        ref.gpu_peak = max(ref.gpu_peak or 0, timing.gpu_peak or 0) or None
                        ref.timed_outputs = sb.load_output("timed", self.compare_device)
                        mark("timed_load")
                elif isinstance(msg, Failed):
                    text = msg.message  # the exception line, then the innermost frames: keep both ends (the tail
                    if len(text) > 800:  # alone lost the exception of a long traceback)
                        text = text[:300] + "\n" + text[-500:]
                    ref.error = f"{msg.stage}: {text}"
                    ref.out_of_memory = msg.type == "OutOfMemoryError"
                    break
                elif isinstance(msg, Done):
                    break
        except (TimeoutError, ChannelError) as exc:
            ref.error = f"reference worker {type(exc).__name__}: {exc}"
        except (torch.OutOfMemoryError, DeviceMemoryError) as exc:  # the judge's own copy of the outputs
            ref.error = f"the judge could not copy the reference's outputs: {type(exc).__name__}: {exc}"
        finally:
            sb.finish()
            sb.cleanup()
            self._settle(ref, held)
        if ref.error is not None and ref.too_large is None:  # a trial, the timing or a device export
            ref.out_of_memory = ref.out_of_memory or out_of_memory(ref.error)
        ref.seconds = round(time.monotonic() - t_start, 3)
        return ref

    def _take_outputs(self, ref: Reference, data: Any, msg: ReferenceOutputs) -> bool:
        """Fill `ref` from the reference's sealed outputs; False (with `ref.error`) when they are not what was asked."""
        perturbed = [e for e in ref.replay if e[1]]
        if not (isinstance(data, dict) and _lists_of_lists(data.get("outputs")) and _lists_of_lists(data.get("replay"))
                and len(data["outputs"]) == len(ref.seeds) and len(data["replay"]) == len(perturbed)):  # fmt: skip
            ref.error = "the reference's outputs file does not hold the trials and replays asked for"
            return False
        ref.outputs, ref.structures, ref.checksums, ref.ops = data["outputs"], msg.structures, msg.checksums, msg.ops
        replays = iter(data["replay"])  # an unperturbed replay is its trial's own output: not run twice
        ref.replay_outputs = [next(replays) if pseed else ref.outputs[i] for i, pseed in ref.replay]
        kept = [(e, w) for e, w in zip(ref.wide, data.get("wide") or []) if w is not None]
        ref.wide, ref.wide_outputs = [e for e, _ in kept], [w for _, w in kept]
        ref.degenerate = msg.degenerate
        ref.gpu_peak, ref.rss_peak = msg.gpu_peak, msg.rss_peak
        if ref.footprint is None:  # the meta device could not size it: the real outputs do
            ref.footprint = Footprint(0, _nbytes(ref.outputs[0]) if ref.outputs else 0, 0)
        return True

    def _attempt(self, task: Task, source: str, ref: Reference, base: dict, build: Future | None,
                 alone: bool) -> Verdict:  # fmt: skip
        """One judging of the candidate (its own copy of `base`: a retry starts from the reference's stages)."""
        base = {**base, "stage_s": dict(base["stage_s"])}
        if alone:
            base["env"] = {**base["env"], "rerun": "alone after running out of GPU memory beside other workers"}
        try:
            return self._candidate(task, source, ref, base, build, alone)
        except StageFailure as failure:
            return failure.verdict

    def _candidate(self, task: Task, source: str, ref: Reference, base: dict, build: Future | None,
                   alone: bool = False) -> Verdict:  # fmt: skip
        o = self.options
        stage_s: dict[str, float] = base.pop("stage_s", {})  # the reference's wait and its stages, then ours
        hang_s = self._hang_after(ref, source)
        job = {"kind": "candidate", "init_seed": ref.init_seed, "backend": base["backend"]}
        if self.timed:
            job.update(timing=o.timing_config())
        try:
            built = build.result() if build is not None else None  # built on the CPU farm
        except CancelledError:  # the pool closed without waiting
            return Verdict.fail("infra_error", "the build farm shut down before this candidate was built", **base)
        if built is not None:
            failed = _farm_verdict(built, stage_s, base)
            if failed is not None:
                return failed
            if built.path:
                job.update(build_mode="load", build_dir=built.path)
        sb = self._sandbox(job)
        (sb.scratch / "task.py").write_text(task.source)
        (sb.scratch / "candidate.py").write_text(source)
        sb.job.update(task_path=str(sb.scratch / "task.py"), candidate_path=str(sb.scratch / "candidate.py"))

        def fail(status: str, feedback: str, guard: str | None = None) -> StageFailure:
            return StageFailure(Verdict.fail(status, feedback, guard=guard, stage_s=stage_s, **base))

        def expect(kind: type[M], timeout_s: float, stage: str) -> M:
            t0 = time.monotonic()
            try:
                while True:
                    msg = _receive(sb, t0 + timeout_s, "candidate")
                    if isinstance(msg, Hung):  # the worker's hang watch (harness.ForwardWatch)
                        sb.finish(timed_out=True)
                        raise fail("timeout", f"{stage}: a forward ran {msg.seconds:.1f} s (Triton's compiles not "
                                   f"counted), past the hang watch's {hang_s:.1f} s; the worker was killed", stage)
                    if msg is None:
                        exit_ = sb.finish()
                        how = describe_exit(exit_.returncode)
                        raise fail("crashed", f"worker died during {stage} ({how}) without a result\n{exit_.log_tail}")
                    if isinstance(msg, kind):
                        stage_s[stage] = round(time.monotonic() - t0, 3)
                        add_split(stage_s, stage, getattr(msg, "seconds", None))
                        return msg
                    if isinstance(msg, Failed):
                        status = "compile_error" if msg.stage in ("import", "compile") else "runtime_error"
                        raise fail(status, f"{msg.stage} failed: {msg.message}", msg.stage)
                    if isinstance(msg, GuardHit):
                        raise fail("rejected", msg.message, msg.guard)
            except TimeoutError:
                sb.finish(timed_out=True)
                raise fail("timeout", f"{stage} exceeded {timeout_s:.0f} s; the worker was killed", stage) from None
            except ProtocolError as exc:  # the key is in the worker's memory: a candidate can forge messages
                raise fail("rejected", f"the worker sent {exc}", "channel") from None
            except ChannelError as exc:
                raise fail("rejected", f"the worker's result channel was tampered with: {exc}", "channel") from None

        admitted = contextlib.ExitStack()
        memory = base["memory"] = _memory_figures(ref, self._on_device(ref.footprint))
        try:
            with stopwatch(stage_s, "wait_memory"):  # admitted by its task's memory, beside the other workers
                need = self._admit_candidate(ref, admitted, alone)
            if alone or self._whole_gpu(need, ref):
                with stopwatch(stage_s, "wait_free"):
                    self._await_free_gpu(less=self._own_gpu(ref))
            # The GPU slot after the memory, never before: a slot holder waiting in the gate behind a reference that
            # needs a big task's lease, while that task's candidate waits for a slot, deadlocks the pool.
            slots = self.gpu_slots  # released to the semaphore it came from, even across a resize
            if slots is not None:
                with stopwatch(stage_s, "wait_slot"):
                    slots.acquire()
                admitted.callback(slots.release)
            _put(memory, admitted_gpu=need.get(self.gpu_key), admitted_host=need.get("host"))
            sb.start()
            veil = expect(Started, o.build_timeout_s, "start").veil  # sent before candidate code runs
            veiled = {} if veil is None else {"scratch_veil": veil}  # a mount point, or `none` where it could not be
            base["env"] = {**base["env"], **veiled, "worker": "forked" if sb.forked else "fresh"}  # template or not
            expect(CandidateBuilt, o.build_timeout_s, "build")
            with waited(stage_s, "wait_trials", self._trials_guard()):  # none while a module is timed
                sb.send({"cmd": "run", "seeds": ref.seeds, "replay": ref.replay, "wide": ref.wide, "hang_s": hang_s})
                msg = expect(CandidateOutputs, o.run_timeout_s, "run")
            _put(memory, gpu=msg.gpu_peak, host=(msg.rss_peak or 0) + sb.output_bytes())
            if msg.checksums != ref.checksums:
                raise fail("rejected", "the candidate's inputs differ from the reference's (torch patched?)", "inputs")
            try:
                with stopwatch(stage_s, "load"):
                    data = sb.load_output("out", self.compare_device)
            except ChannelError as exc:
                raise fail("rejected", str(exc), "channel") from None
            except Exception as exc:  # a tensor subclass or a forged file does not load under weights_only
                if out_of_memory(f"{type(exc).__name__}: {exc}"):  # the judge's copy: rerun alone (`judge`)
                    raise fail("runtime_error", f"the judge ran out of GPU memory loading the outputs: {exc}",
                               "load") from None  # fmt: skip
                raise fail("rejected", f"outputs did not load as plain tensors: {exc}", "tensor_subclass") from None
            data = data if isinstance(data, dict) else {}
            outputs, replay = data.get("outputs"), data.get("replay")
            expected = (len(ref.outputs), len(ref.replay_outputs))
            if not (_lists_of_lists(outputs) and _lists_of_lists(replay)) or (len(outputs), len(replay)) != expected:
                # the comparison zips trials: a short (forged) file must not skip any
                raise fail("rejected", f"the outputs file does not hold {expected[0]} trials and {expected[1]} replays",
                           "channel")  # fmt: skip
            if msg.structures != ref.structures:
                got = msg.structures[0] if msg.structures else "none"
                raise fail("incorrect", f"output structure {got} != {ref.structures[0]}", "structure")
            with waited(stage_s, "wait_compare", self._trials_guard()):  # GPU work: never while a module is timed
                with stopwatch(stage_s, "compare"):
                    try:
                        worst = self._compare_trials(ref, outputs, replay, fail)
                        self._compare_wide(ref, data.get("wide"), fail)
                    except torch.OutOfMemoryError as exc:  # the judge's own shortage: rerun alone (`judge`)
                        raise fail("runtime_error", f"judge out of GPU memory comparing: {exc}", "compare") from None
            violation = library_op_violation(ref.ops, msg.ops, msg.launches, o.library_ops)
            if violation is not None:
                raise fail("rejected", violation, "no_custom_kernel")
            if ref.degenerate is not None:  # the task cannot tell right from wrong: not the candidate's fault
                raise StageFailure(Verdict.fail(
                    "infra_error", f"the task is degenerate: the `{ref.degenerate}` canary passes its check, so no "
                    "candidate can be judged on it (left out of rewards)", guard="degenerate", stage_s=stage_s,
                    **{**base, "env": {**base["env"], "degenerate_task": ref.degenerate}}))  # fmt: skip
            verdict = Verdict(status="ok", correct=True, trials=len(outputs), max_abs_err=worst, stage_s=stage_s,
                              **base)  # fmt: skip
            if self.timed:
                with waited(stage_s, "wait_timing", self.timing_lock):
                    sb.send({"cmd": "time", "timing_seeds": ref.timing_seeds, "fresh_seeds": ref.fresh_seeds})
                    timing = expect(CandidateTiming, o.run_timeout_s, "time")
                # the timed outputs' copy off the GPU and their check: shared GPU work, so outside the timing lock
                with waited(stage_s, "wait_timed_check", self._trials_guard()):
                    sb.send({"cmd": "save_timed"})
                    saved = expect(TimedSaved, o.run_timeout_s, "timed_save")
                    _put(memory, gpu=max(saved.gpu_peak or 0, msg.gpu_peak or 0) or None)
                    with stopwatch(stage_s, "timed_check"):
                        bad = self._check_timed_outputs(sb, ref)
                if bad is not None:  # honest only while not timed
                    raise fail("runtime_error" if bad[0] == "out_of_memory" else "rejected", bad[1], bad[0])
                # Timed calls answered from a table (phase detection, batch-and-skip) are right and launch nothing.
                idle = (timing.idle_calls or 0) + (saved.idle_calls or 0)  # Triton: counted; CUDA: audited
                if idle:
                    raise fail("rejected", f"{idle} calls of the timing stage completed none of your "
                               "kernels: every call must do its own work (no results kept from earlier calls)",
                               "no_custom_kernel")  # fmt: skip
                written = min(_nbytes(ref.outputs[0]), timing.storage_bytes)
                bad = timing_violation(timing.candidate, written, o.roofline_tbs)
                if bad is not None:
                    raise fail("rejected", bad[1], bad[0])
                self._attach_timing(verdict, timing.candidate, ref)
            expect(Done, 30, "finish")
            return verdict
        finally:
            sb.finish()
            sb.cleanup()
            admitted.close()

    @staticmethod
    def _attach_timing(verdict: Verdict, cand: dict, ref: Reference) -> None:
        verdict.timed, fresh, median = True, (cand.get("fresh") or {}).get("min_ms"), cand["events"]["median_ms"]
        verdict.fresh_ratio = round(fresh / median, 3) if fresh and median else None  # `timing_violation`'s figures
        verdict.timed_by, cand, eager, compiled = comparable(cand, ref.eager, ref.compiled)
        verdict.runtime, verdict.ref_runtime, verdict.compile_runtime = map(_timing, (cand, eager, compiled))
        if verdict.runtime and verdict.runtime.median_ms > 0:
            if verdict.ref_runtime and verdict.ref_runtime.median_ms > 0:
                verdict.speedup_eager = verdict.ref_runtime.median_ms / verdict.runtime.median_ms
                c, r = verdict.runtime, verdict.ref_runtime
                verdict.speed_noise = round(c.iqr_ms / c.median_ms + r.iqr_ms / r.median_ms, 4)
            if verdict.compile_runtime:
                verdict.speedup_compile = verdict.compile_runtime.median_ms / verdict.runtime.median_ms


def _receive(sb: Sandbox, deadline: float, job: str) -> Message | None:
    """The worker's next message, read as its job's protocol (`messages.parse`); None when it exited. Raises
    ProtocolError for a message the judge cannot read (a forged one: the key lives in the worker)."""
    raw = sb.recv(deadline)
    return None if raw is None else parse(raw, job)


def _farm_verdict(built, stage_s: dict[str, float], base: dict) -> Verdict | None:
    """The farm's stages into `stage_s`; for a compile error, the verdict a failed build in the worker gets."""
    built.record(stage_s)
    return (Verdict.fail("compile_error", f"import failed: {built.feedback}", guard="import", stage_s=stage_s, **base)
            if built.status == "compile_error" else None)  # fmt: skip
