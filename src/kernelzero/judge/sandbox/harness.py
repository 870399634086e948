"""The harness the worker's jobs share: what runs task and candidate code under test, and the errors it reports.

Clocks, comparisons and the output writer are bound before untrusted code is imported (`Bound`): patching
`torch.cuda.Event` later does not change our clock. Inputs are drawn on the device per seed, models are built under
the same seed as their twin, and each forward is checked (`checked_forward`: exact tensors, no output aliasing an
input); replay trials reuse the last trial's input buffers with new contents. `make_op_recorder` and `LaunchCounter`
record what a candidate's forward computed with torch and how many of its own kernels it launched. A failure of the
code under test is a `StageError` or a `GuardViolation`, which the worker's `main` turns into a message.
"""

from __future__ import annotations

import fcntl
import functools
import gc
import hashlib
import os
import secrets
import signal
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable

from kernelzero.judge.guards import CANDIDATE_MODULE
from kernelzero.judge.sandbox.devmem import Exports
from kernelzero.judge.sandbox.pack import PackWriter, placeholders
from kernelzero.judge.sandbox.process import SEALS


class StageError(Exception):
    """A failure of the code under test at a named stage; becomes a verdict status in the parent."""

    def __init__(self, stage: str, exc: BaseException):
        super().__init__(f"{stage}: {exc}")
        self.stage = stage
        self.exc = exc


class GuardViolation(Exception):
    """A guard checked inside the worker fired; the parent's verdict is `rejected`, naming `guard`."""

    def __init__(self, guard: str, message: str):
        super().__init__(message)
        self.guard = guard


def short_tb(exc: BaseException, limit: int = 4) -> str:
    """The exception line first (what a model needs most), then the innermost frames."""
    head = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    frames = "".join(traceback.format_tb(exc.__traceback__, limit=-limit))
    return f"{head}\n{frames}"[-6000:]


def load_module(path: str, name: str):
    """Import a source file as a module (Triton needs a real file to read kernel sources from)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


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


def nbytes(torch, tensors) -> int:
    return sum(t.numel() * t.element_size() for t in tensors if isinstance(t, torch.Tensor))


def meta_footprint(torch, task_mod, init_inputs: list) -> dict | None:
    """Bytes of one forward's inputs, outputs and parameters, measured on the `meta` device (nothing allocated, in
    about a second even for 8 GB tensors); None where the task cannot run there (data-dependent code: `.item()`)."""
    try:
        model = build_model(torch, task_mod.Model, init_inputs, 0, "meta")
        inputs = make_inputs(torch, task_mod, 0, "meta")
        with torch.no_grad():
            _, outs = flatten_outputs(torch, model(*inputs))
        params = nbytes(torch, model.parameters()) + nbytes(torch, model.buffers())
        return {"in_bytes": nbytes(torch, inputs), "out_bytes": nbytes(torch, outs), "param_bytes": params}
    except Exception:
        return None


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


class Bound:
    """Harness functions captured before untrusted code runs, so later monkeypatching does not reach them."""

    def __init__(self, torch):
        self.perf_counter = time.perf_counter
        self.randbelow = secrets.randbelow  # which timed calls' outputs are checked (timing.time_model)
        self.frombuffer = functools.partial(torch.frombuffer, dtype=torch.uint8)
        self._cuda, self._empty, self._uint8 = torch.cuda.is_available(), torch.empty, torch.uint8
        self._torch = torch
        self._gc, self._signal = gc, signal
        self._sigmask, self._ftruncate = signal.pthread_sigmask, os.ftruncate
        self._fcntl, self._F_ADD_SEALS, self._F_SEAL_SEAL = fcntl.fcntl, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SEAL
        self.output_fds: dict[str, int] = {}  # set from the job: the sandbox's memfds
        self.device_min_bytes = 0  # CUDA outputs of at least this size stay on the device; 0: none do
        self._exports = None  # devmem.Exports, made when the job opens a device channel
        self._device_socket = None  # where their descriptors go (`open_device_channel`)
        self._send_fds, self._socket, self._close = socket.send_fds, socket.socket, os.close
        self.clone, self.copy, self.zero = torch.Tensor.clone, torch.Tensor.copy_, torch.Tensor.zero_
        self.watch: ForwardWatch | None = None  # the candidate job's hang watch, around each checked forward
        # A new uint8 block of `n` bytes on `device`: the wall rounds' control kernel's (`scratch`), and under a name
        # of its own the arena of timing's placed copies of small inputs (`empty_bytes`)
        self.scratch = self.empty_bytes = lambda n, device: self._empty(n, dtype=self._uint8, device=device)
        self.equal, self.tensor_type = torch.equal, torch.Tensor
        # Looked up on the class, never on the output: a method set on a returned tensor instance (`y.detach = ...`)
        # would run candidate code inside the judge's own read of the output (a lazy answer computed off the record).
        self.detach, self.to, self.contiguous = torch.Tensor.detach, torch.Tensor.to, torch.Tensor.contiguous
        self.storage, self.numel, self.vars = torch.Tensor.untyped_storage, torch.Tensor.numel, vars
        self.element_size = torch.Tensor.element_size
        if torch.cuda.is_available():
            self.event = torch.cuda.Event
            self.synchronize = torch.cuda.synchronize
            self.elapsed = torch.cuda.Event.elapsed_time
            self.sleep = torch.cuda._sleep  # a kernel that spins for a number of GPU cycles (timing's launch cover)
            self.empty_cache = torch.cuda.empty_cache
            # Free memory left in the caching allocator: n bytes allocated and dropped (timing.fresh_reserve)
            self.reserve = lambda n: self._empty(n, dtype=self._uint8, device="cuda").numel()
            names = ("_cuda_beginAllocateCurrentThreadToPool", "_cuda_endAllocateToPool", "_cuda_releasePool")
            api = (getattr(torch.cuda, "MemPool", None), *(getattr(torch._C, n, None) for n in names))
            self.pool_api = (*api, torch.cuda.current_device) if all(api) else None  # timing.own_pool
            cuda = torch.cuda  # timing.graph_timing's capture and replay
            self.graph_api = (cuda.CUDAGraph, cuda.Stream, cuda.stream, cuda.current_stream, cuda.graph_pool_handle)
        else:  # host clocks, for the timing protocol on CPU (JudgeOptions.timing_on_cpu)
            self.event = _host_event(time.perf_counter)
            self.synchronize = lambda: None
            self.elapsed = lambda start, end: (end.t - start.t) * 1e3
            self.sleep = None
            self.empty_cache = self.reserve = lambda *_: None
            self.pool_api = self.graph_api = None

    def writer(self, name: str) -> PackWriter:
        """A writer into the sandbox's `name` memfd (`sandbox.OUTPUTS`): tensors go in as they are produced
        (`PackWriter.add`, one copy from the device into the file), so no worker ever holds a bundle of outputs.
        On a GPU with a device channel, CUDA outputs of at least `device_min_bytes` go into exported device
        allocations instead (`devmem`), never through host memory."""
        if self._exports is None:
            return PackWriter(self.output_fds[name], self.frombuffer, self._ftruncate, self._staging())
        # with a channel, the CUDA outputs left for the file are small: no pinned staging buffer is worth making
        return PackWriter(self.output_fds[name], self.frombuffer, self._ftruncate, None, self._export)

    def open_device_channel(self, fd: int, min_bytes: int) -> None:
        """From the job, before candidate code runs: the socket for device outputs and the size from which CUDA
        outputs take it; binds the driver's calls now (`devmem.Driver`)."""
        self.device_min_bytes = min_bytes
        if self._cuda and fd >= 0 and min_bytes > 0:
            self._exports = Exports(self._torch)
            self._device_socket = self._socket(fileno=fd)

    def _export(self, t) -> int | None:
        big = self.numel(t) * t.element_size() >= self.device_min_bytes
        return self._exports.export(t) if big and t.is_cuda else None

    def release_exports(self) -> None:
        """Free the device copies sent so far (call once the judge has answered: it has copied them by then)."""
        if self._exports is not None:
            self._exports.release()

    def _staging(self):
        """A 64 MB pinned buffer, made on first use on a GPU worker (None elsewhere): device outputs reach the file
        through it at the link's speed (a pageable copy of a 6 GB output measured 1.4 GB/s on the H200)."""
        if getattr(self, "_stage", None) is None and self._cuda:
            self._stage = self._empty(64 << 20, dtype=self._uint8, pin_memory=True)
        return getattr(self, "_stage", None)

    def seal(self, name: str, writer: PackWriter, obj) -> None:
        """Finish `writer`'s pack with `obj` (its tensors already added) and seal the memfd: from then on nobody,
        candidate code included, can change what the judge reads. Signals are blocked and the garbage collector
        paused for the trailer and the seal, so no candidate code (a signal handler, a finalizer) runs between.
        First the allocator's cached blocks go back to the driver: the judge copies the outputs next, beside this
        worker (a 7.5 GB RMSNorm's candidate kept 26 GB of freed inputs and outputs cached while the judge copied
        30 GB of its outputs, beside the reference's 38 GB: the judge ran out of memory)."""
        self.empty_cache()
        mask = self._sigmask(self._signal.SIG_BLOCK, self._signal.valid_signals())
        collecting = self._gc.isenabled()
        self._gc.disable()
        try:
            writer.finish(obj)
            self._fcntl(self.output_fds[name], self._F_ADD_SEALS, SEALS | self._F_SEAL_SEAL)
            if writer.fds:  # the device outputs' descriptors, tagged with the pack's name; ours are closed after
                self._send_fds(self._device_socket, [name.encode()], writer.fds)
        finally:
            for fd in writer.fds:
                self._close(fd)
            writer.fds = []
            if collecting:
                self._gc.enable()
            self._sigmask(self._signal.SIG_SETMASK, mask)

    def save(self, obj, name: str) -> None:
        """Write `obj` (tensors anywhere in lists and dicts) into the `name` memfd and seal it."""
        w = self.writer(name)
        self.seal(name, w, placeholders(obj, w.add))


def _host_event(clock):
    """A stand-in for torch.cuda.Event on CPU: `record()` reads `clock` (bound here, before candidate import)."""

    class HostEvent:
        def __init__(self, enable_timing: bool = True):
            self.t = 0.0

        def record(self) -> None:
            self.t = clock()

    return HostEvent


def run_forward_trials(torch, bound: Bound, model, task_mod, seeds: list[int], device: str, check_inputs: bool,
                       recorder=None, keep=None):  # fmt: skip
    """Per seed: fresh inputs, one forward, outputs copied to CPU. Returns (structures, outputs, input checksums).

    `recorder` (an `OpRecorder`) is entered around each forward to log the aten ops it dispatches; `keep` as in
    `checked_forward`.
    The last trial's input tensors stay in `bound.last_inputs` for the replay trials (same objects, new contents).
    """
    structures, outputs, sums = [], [], []
    for seed in seeds:
        t0 = bound.perf_counter()
        inputs = make_inputs(torch, task_mod, seed, device)
        sums.append(checksum(torch, inputs))
        if not hasattr(bound, "first_inputs_s"):  # the first draw on the device holds its generator's start
            bound.first_inputs_s = bound.perf_counter() - t0
        before = [bound.clone(x) if isinstance(x, bound.tensor_type) else x for x in inputs] if check_inputs else []
        structure, items = checked_forward(torch, bound, model, inputs, device, recorder, keep)
        for x, x0 in zip(inputs, before):
            if isinstance(x, bound.tensor_type) and not bound.equal(x, x0):
                raise GuardViolation("input_mutation", "forward modified its input tensor")
        structures.append(structure)
        outputs.append(items)
        bound.last_inputs = inputs
        if not hasattr(bound, "first_call_s"):  # the first call holds Triton's JIT compile (bench figures)
            bound.first_call_s = bound.perf_counter() - t0
    return structures, outputs, sums


def checked_forward(torch, bound: Bound, model, inputs: list, device: str, recorder=None,
                    keep=None) -> tuple[str, list]:  # fmt: skip
    """One checked forward: (structure, `keep(output)` per output). Raises the tensor_subclass / aliasing guards.

    `keep` copies each output off the candidate's hands at once (a module may reuse its output buffer in the next
    call): by default to the CPU; the jobs pass `PackWriter.add`, which copies it into the output memfd."""
    watch = bound.watch
    if watch is not None:
        watch.begin()
    try:
        with torch.no_grad():
            if recorder is not None:
                with recorder:
                    out = model(*inputs)
            else:
                out = model(*inputs)
        if device == "cuda":
            bound.synchronize()
    finally:
        if watch is not None:
            watch.end()
    structure, items = flatten_outputs(torch, out)
    for t in items:
        if type(t) is not bound.tensor_type:
            raise GuardViolation("tensor_subclass", f"forward returned {type(t).__name__}, not torch.Tensor")
        # Guard tensor_subclass, instance form: attributes set on a plain tensor (`y.detach = lambda: ...`, `y.cpu`)
        # lie to whoever calls them; a plain output carries none.
        if bound.vars(t):
            names = ", ".join(sorted(map(str, bound.vars(t)))[:4])
            raise GuardViolation("tensor_subclass", f"forward returned a tensor with instance attributes ({names}): "
                                 "methods overridden on the output")
        for x in inputs:
            if isinstance(x, bound.tensor_type) and bound.numel(t) and bound.numel(x) and _shares_storage(bound, t, x):
                raise GuardViolation("aliasing", "an output shares memory with an input")
    bound.storage_bytes = sum(bound.storage(t).nbytes() for t in items)  # memory the outputs really span
    if keep is None:
        return structure, [bound.contiguous(bound.to(bound.detach(t), "cpu", copy=True)) for t in items]
    return structure, [keep(bound.detach(t)) for t in items]


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


def run_replay(torch, bound: Bound, model, task_mod, seeds: list[int], plan: list, device: str, keep=None) -> list:
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
                # Through `.data`, which has its own version counter: `b._version` does not move, as when a kernel
                # writes the buffer by pointer. A cache keyed on (data_ptr, _version) would otherwise always miss.
                b.data.copy_(f)
        outputs.append(checked_forward(torch, bound, model, buf, device, keep=keep)[1])
    return outputs


def _shares_storage(bound: Bound, a, b) -> bool:
    return bound.storage(a).data_ptr() == bound.storage(b).data_ptr()


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


def cuda_profiler(torch):
    """A torch.profiler recording CUDA kernels, for counting the candidate's `__global__` launches (GPU only)."""
    from torch.profiler import ProfilerActivity, profile

    return profile(activities=[ProfilerActivity.CUDA])


class ForwardWatch:
    """The hang watch of a candidate's forwards (`JudgeOptions.hang_after_s`): a thread that calls `on_hang` once, with
    the seconds it counted, when the forward under way (`begin` to `end`, its GPU work included) has run `limit_s`,
    less what `excused()` grew by meanwhile (Triton's compiles and autotuning, `LaunchCounter.jit_s`). A kernel that
    never ends and a host loop that never returns alike: either kept its GPU from timing anything else, and the trials
    queued behind the waiting timing, for the whole run timeout. Defence in depth is not its job: a candidate that
    stops it is held by the judge's run timeout."""

    POLL_S = 0.1

    def __init__(self, limit_s: float, excused: Callable[[], float], on_hang: Callable[[float], None],
                 clock: Callable[[], float] = time.perf_counter, start: bool = True) -> None:  # fmt: skip
        self.limit_s, self.excused, self.on_hang, self.clock = limit_s, excused, on_hang, clock
        self._since: tuple[float, float] | None = None  # (clock, excused) at the forward's begin
        self._stop = threading.Event()
        self._lock = threading.Lock()  # `on_hang` (a message) never overlaps the job's own next one, sent after `stop`
        if start:
            threading.Thread(target=self._run, name="kz-forward-watch", daemon=True).start()

    def begin(self) -> None:
        self._since = (self.clock(), self.excused())

    def end(self) -> None:
        self._since = None

    def stop(self) -> None:
        with self._lock:
            self._stop.set()

    def check(self) -> bool:
        """Whether the forward under way has outrun the watch (then `on_hang` has been called)."""
        since = self._since
        if since is None:
            return False
        ran = self.clock() - since[0] - (self.excused() - since[1])
        if ran <= self.limit_s:
            return False
        with self._lock:
            if self._stop.is_set():
                return False
            self._stop.set()  # once
            self.on_hang(round(ran, 2))
        return True

    def _run(self) -> None:
        while not self._stop.wait(self.POLL_S):
            if self.check():
                return


class LaunchCounter:
    """Counts completed launches of kernels defined in the candidate module (`guards.CANDIDATE_MODULE`).

    Triton: wraps `JITFunction.run` (GPU) and the interpreter's `InterpretedFunction.run` (CPU) before the candidate
    is imported; a launch counts once `run` returns (an attempt that raises, e.g. inside a suppressed error, does
    not). CUDA (GPU only): kernels in a torch.profiler trace whose names are `__global__` functions of the source.
    """

    def __init__(self, source: str):
        import re

        self.module = CANDIDATE_MODULE
        self.count = 0
        self.active = False
        self.jit_s = 0.0  # seconds in launches that compiled or autotuned (over 10 ms): the hang watch's excuse
        self._depth = 0  # Triton `run` calls under way (an autotuner's hold its kernel's): only the outermost counts
        self.cuda_names = set(re.findall(r"__global__\s+(?:__launch_bounds__\([^)]*\)\s+)?void\s+(\w+)", source))
        self.wrapped: list[tuple] = []  # (class, "run") pairs it replaced, for `integrity.HarnessSeal`

    def install_triton(self) -> None:
        try:
            from triton.runtime import autotuner, interpreter, jit
        except ImportError:  # no Triton here: CUDA candidates are counted by the profiler
            return
        for cls in (jit.JITFunction, interpreter.InterpretedFunction):
            self._wrap(cls)
        self._wrap(autotuner.Autotuner, count=False)  # its benchmarking of configs: excused, not counted

    def _wrap(self, cls, count: bool = True) -> None:
        orig, counter = cls.run, self

        def run(fn_self, *args, **kwargs):
            counter._depth += 1
            t0 = time.perf_counter()
            try:
                result = orig(fn_self, *args, **kwargs)
            finally:
                counter._depth -= 1
                spent = time.perf_counter() - t0
                if spent > 0.01 and counter._depth == 0:  # a launch is ~20-50 us: this one compiled or autotuned
                    counter.jit_s += spent
            mine = getattr(getattr(fn_self, "fn", None), "__module__", None) == counter.module
            if count and counter.active and not kwargs.get("warmup") and mine:
                counter.count += 1
            return result

        cls.run = run
        self.wrapped.append((cls, "run"))

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


def precision_flags(torch) -> dict:
    """The process's reduced-precision switches (`worker.set_precision_policy` sets them before candidate code)."""
    matmul = torch.backends.cuda.matmul
    return {"matmul.allow_tf32": matmul.allow_tf32, "cudnn.allow_tf32": torch.backends.cudnn.allow_tf32,
            "float32_matmul_precision": torch.get_float32_matmul_precision(),
            "matmul.fp16_reduction": matmul.allow_fp16_reduced_precision_reduction,
            "matmul.bf16_reduction": matmul.allow_bf16_reduced_precision_reduction}  # fmt: skip


def check_precision_flags(torch, policy: dict) -> None:
    """Guard `precision` (runtime): the candidate turned TF32 / reduced-precision reductions on (any spelling the static
    rule missed), so its library matmuls run below the strict-fp32 reference's precision."""
    now = precision_flags(torch)
    changed = [f"{k}={now[k]!r}" for k in policy if now[k] != policy[k]]
    if changed:
        raise GuardViolation("precision", f"the solution changed the judge's precision policy ({', '.join(changed)}): "
                             "fp32 tasks are judged with TF32 and reduced-precision reductions off")


_NETWORK_EVENTS = {"socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg", "socket.getaddrinfo",
                   "socket.gethostbyname", "socket.gethostbyname_ex", "socket.gethostbyaddr", "urllib.Request",
                   "ensurepip.bootstrap", "webbrowser.open"}  # fmt: skip
_INSTALL_WORDS = ("pip", "pip3", "ensurepip", "conda", "mamba", "uv", "install", "curl", "wget", "git")


class NetworkBlock:
    """Guard `network` (runtime): refuses sockets and package installs from the candidate's import on.

    A CPython audit hook (it cannot be removed once added) raises PermissionError on socket connects, binds and name
    lookups, and on processes started to install or fetch (pip, conda, curl: Triton's own ptxas or a build's nvcc
    stay allowed). Each attempt is recorded, so one swallowed by the code that made it (pip reports a failed install
    as an exit code) still becomes a `rejected` verdict at `check`. The sandbox's network namespace already has no
    route out; this names the attempt, and holds where the sandbox runs without namespaces."""

    def __init__(self, device_socket=None) -> None:
        """device_socket: the harness's unix socket to the judge (`devmem`): descriptors sent on it are allowed."""
        self.hits: list[str] = []
        self.armed = False
        self.device_socket = device_socket

    def install(self) -> None:
        hits, block = self.hits, self

        def hook(event: str, args: tuple) -> None:
            if not block.armed:
                return
            own = block.device_socket
            if event == "socket.sendmsg" and own is not None and args and args[0] is own:
                return  # to the judge only (a socket pair made before any candidate code ran), never a network
            if event in _NETWORK_EVENTS:
                hits.append(event)
                raise PermissionError(f"{event}: the judge's sandbox has no network")
            if event in ("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn"):
                words = []  # the command's words (a list, or a shell string), never its environment
                for a in args:
                    items = a if isinstance(a, (list, tuple)) else [a] if isinstance(a, (str, bytes)) else []
                    words += [w for item in items for w in os.fsdecode(item).split()]
                text = " ".join(words)
                if {os.path.basename(w) for w in words[:6]} & set(_INSTALL_WORDS):  # `python -m pip install`
                    hits.append(f"{event}: {text[:80]}")
                    raise PermissionError("installing packages or fetching files is not allowed in the sandbox")

        sys.addaudithook(hook)
        self.armed = True

    def check(self) -> None:
        if self.hits:
            raise GuardViolation("network", f"the solution tried to reach the network or install packages "
                                 f"({'; '.join(self.hits[:3])}): a solution is torch, triton and load_inline only")


REDUCTIONS = ("sum", "mean", "amax", "amin")


def input_reductions(torch, inputs: list, outs: list) -> list[list]:
    """Degenerate-task canary `reduction`: per output, every sum/mean/amax/amin of a floating input along one dim
    that has the output's shape and dtype, where the inputs are (same order on every trial). A task whose reference
    matches one of them on every trial rewards a kernel that only reduces its input (`check.degenerate_canary`)."""
    per_output = []
    for o in outs:
        found = []
        for x in inputs:
            if not (isinstance(x, torch.Tensor) and x.is_floating_point() and x.dim() and x.dtype == o.dtype):
                continue
            for d in range(x.dim()):
                for name in REDUCTIONS:
                    for keep in (False, True):
                        if len(found) < 16 and tuple(o.shape) == tuple(x.shape[:d]) + ((1,) if keep else ()) + tuple(
                                x.shape[d + 1:]):  # fmt: skip
                            found.append(getattr(torch, name)(x, dim=d, keepdim=keep).detach())
        per_output.append(found)
    return per_output
