"""The build farm: CUDA candidates are compiled by sandboxed CPU workers into a content-addressed cache.

Two halves:
- `install_load_inline_shim` runs inside a worker, before candidate code is imported, and wraps
  `torch.utils.cpp_extension.load_inline`. In a `build` job it builds each call into `<out>/<call key>/` under a
  name made unique by content (torch names build folders and modules by `name` only); in a `candidate` job it
  imports `<cache entry>/<call key>/<name>.so` when present and falls back to the plain in-scratch build when not.
- `BuildFarm` lives in the judge's process: bounded build slots, one build per content at a time, and promotion of
  a finished build from the build worker's scratch into the cache by one atomic rename, done here after the worker
  has exited. A killed build therefore leaves nothing in the cache (its scratch, and torch's lock file with it,
  is discarded), and no later build waits on a stale lock: builds never share a build directory.

Keys. An entry is keyed by the whole candidate source plus the toolchain (torch, CUDA, nvcc, compiler) and the
target arch. Keying on the candidate's source rather than on the load_inline arguments alone is deliberate: the
build worker runs candidate code, so it can write anything into its output; with this key a planted `.so` can only
ever be loaded by the very same source, which could have done the same thing at import anyway. Inside an entry,
each load_inline call has its own key (sources, functions, flags, include paths).

Meaning is unchanged: sources, flags and `-O` levels are passed as written. What changes: TORCH_CUDA_ARCH_LIST is
set to the judging GPU's arch (a CPU worker would otherwise build for every arch), the extension name gets a
content suffix, MAX_JOBS bounds ninja, and where `split.py` applies, torch-facing host code moves from the `.cu` to
the C++ translation unit, which uses a precompiled torch/extension.h built here for the same flags (headers.py).
Where `bind.py` applies, that TU includes torch/all.h only (precompiled too) and its functions are bound through the
bridge library built here, instead of by pybind11 in the TU. (A fourth trick, a host TU against a lean subset of
torch's headers, built up to 5x faster than the bridge's, yet saved 7.6% of the realistic mix's wall in one pass and
lost 12.9% in the other on the H200, under the 10% a part must save in both: bench/README.md; it was removed.)
Tricks are tried in that order; one that fails to build falls back to the next, and last to the build of the code
as written, whose result (and compile error) is the verdict. GCC skips a precompiled header it cannot use without a
word: once the headers are built, a build worker compiles each one's include and says whether it was used
(`BuildFarm.probe_headers`, in `state_dict` and on stderr when not).

Before a build, the front check (front.py) looks at the device code in seconds; a compile error it is certain of
is the result at once (and cached like any), without the 2-3 builds a failing candidate pays otherwise.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelzero.judge.build.bind import BRIDGE_SOURCE, LIBRARY, binding, build_bridge
from kernelzero.judge.build.front import FrontCheck, FrontResult, FrontSlots, check_with_headers
from kernelzero.judge.build.headers import PCH_FLAG_SETS, build_pch, has_cuda_toolkit
from kernelzero.judge.build.split import _strip_comments, split_call
from kernelzero.judge.sandbox.messages import Done, Failed, GuardHit, Message, Prebuilt, Probed, Started, Unbuilt, parse
from kernelzero.judge.sandbox.process import ChannelError, Sandbox, WarmSandboxes

_BUILD_ERROR = "Error building extension"  # torch's message when ninja fails: the candidate's compile error
BUILD_MODES = ("split+bind", "split+pch", "split", "bind", "plain")  # how a call was built
BUILD_NICE = 10  # builds yield the CPU to the front check and to the GPU workers' host threads (timed calls)


def _digest(*parts: Any) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(json.dumps(p, sort_keys=True, default=str).encode())
        h.update(b"\0")
    return h.hexdigest()[:20]


# ---------------------------------------------------------------------------------------------- inside the worker
def install_load_inline_shim(job: dict) -> dict:
    """Wrap load_inline for this worker's job. Returns the shim's state (calls made, how each was built: `split+pch`,
    `split` or `plain`, build failure seen)."""
    import torch.utils.cpp_extension as cpp

    state: dict[str, Any] = {"calls": [], "modes": [], "compile_error": None}
    mode, root = job.get("build_mode"), job.get("build_dir")
    if mode not in ("build", "load") or not root:
        return state
    original = cpp.load_inline
    signature = inspect.signature(original)

    @functools.wraps(original)
    def load_inline(*args: Any, **kwargs: Any):
        call = signature.bind(*args, **kwargs)
        call.apply_defaults()
        a = dict(call.arguments)
        key = _digest({k: v for k, v in a.items() if k not in ("build_directory", "verbose", "use_pch")})
        unique = f"{a['name']}_{key[:12]}"
        entry = Path(root) / key
        state["calls"].append(key)
        if mode == "load":
            for where in (entry / "split", entry):
                if (where / f"{unique}.so").is_file():
                    return cpp._import_module_from_library(unique, str(where), a["is_python_module"])
            return original(**a)  # not prebuilt (built inside this worker, as without a farm)
        entry.mkdir(parents=True, exist_ok=True)
        a.update(name=unique, build_directory=str(entry))
        for fast, how in _fast_calls(a, job) if job.get("split", True) else ():
            (entry / "split").mkdir(exist_ok=True)
            try:
                module = original(**dict(fast, build_directory=str(entry / "split")))
                state["modes"].append(how)
                return module
            except Exception:  # the trick did not apply after all: the next one, then the code as written
                shutil.rmtree(entry / "split", ignore_errors=True)
                cpp.JIT_EXTENSION_VERSIONER.entries.pop(unique, None)  # else torch renames the retry `_v1`
        try:
            module = original(**a)
            state["modes"].append("plain")
            return module
        except Exception as exc:
            if _BUILD_ERROR in str(exc):
                state["compile_error"] = str(exc)[-6000:]
            raise

    cpp.load_inline = load_inline
    return state


TRICKS = ("plain", "split", "pch", "bridge")
"""The build tricks' levels, each adding one part to the one before: the call as written; host and device TUs apart;
a precompiled torch/extension.h; the bridge binding with torch/all.h."""


def trick_headers(headers: dict, tricks: str) -> dict:
    """A build job's header entries with the parts past `tricks` (a TRICKS level) left out."""
    if tricks not in TRICKS:
        raise ValueError(f"BuildFarm.tricks must be one of {TRICKS}, got {tricks!r}")
    level = TRICKS.index(tricks)
    out = {**headers, "split": level >= 1}
    if level < 2:
        out["pch_dirs"] = {}
    if level < 3:
        out["light_pch_dirs"], out["bridge"] = {}, None
    return out


def _as_list(sources: Any) -> list[str]:
    return [sources] if isinstance(sources, str) else list(sources or [])


def _fast_calls(a: dict, job: dict) -> list[tuple[dict, str]]:
    """Faster builds of one load_inline call to try in order, as (arguments, mode): the split with its host TU
    bound through the bridge (`split+bind`, bind.py), then the split alone (`split+pch` with a precompiled header,
    else `split`); a C++-only call, bound through the bridge (`bind`). Empty where no trick applies."""
    if a["no_implicit_headers"] or a["sycl_sources"] or a["use_pch"]:
        return []
    if not a["cuda_sources"]:
        bound = _bind_call(a, job, "\n".join(_as_list(a["cpp_sources"])), list(a["extra_cflags"] or []))
        return [(bound, "bind")] if bound else []
    split = split_call(a)
    if split is None:
        return []
    parts, cflags = split
    fast = dict(a, cpp_sources=parts[0], cuda_sources=parts[1], no_implicit_headers=True)
    pch = (job.get("pch_dirs") or {}).get(json.dumps(cflags))
    if pch and a["extra_include_paths"]:
        pch = None
    calls = [(dict(fast, extra_cflags=[*cflags, f"-I{pch}"] if pch else cflags), "split+pch" if pch else "split")]
    host = "\n".join(parts[0]).removeprefix("#include <torch/extension.h>")
    bound = _bind_call(fast, job, host, cflags)
    return [(bound, "split+bind"), *calls] if bound else calls


def _bind_call(a: dict, job: dict, code: str, cflags: list[str]) -> dict | None:
    """load_inline arguments building `code` (the TU's code after torch's header) with torch/all.h only and the
    bridge's binding (bind.py); or None where that does not apply: no bridge or light header for these flags, extra
    include paths (they could shadow the header), or functions the bridge cannot bind."""
    light, bridge = (job.get("light_pch_dirs") or {}).get(json.dumps(cflags)), job.get("bridge")
    functions = a["functions"]
    functions = {functions: functions} if isinstance(functions, str) else functions
    functions = {f: f for f in functions} if isinstance(functions, list) else functions
    text = _strip_comments(code)
    if not (light and bridge and isinstance(functions, dict)) or a["extra_include_paths"] or text is None:
        return None
    glue = binding(a["name"], functions, text, bool(a["with_pytorch_error_handling"]))
    if glue is None:
        return None
    return dict(
        a,
        cpp_sources=[f"#include <torch/all.h>\n{code}\n{glue}"],
        functions=None,
        no_implicit_headers=True,
        extra_cflags=[*cflags, f"-I{light}"],
        extra_ldflags=[*(a["extra_ldflags"] or []), bridge],
    )


# ------------------------------------------------------------------------------------------- in the judge process
@functools.cache
def toolchain() -> dict:
    """What a built module depends on besides its sources: part of every cache key."""
    import platform

    import torch

    def version(cmd: list[str]) -> str | None:
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
            return out.stdout.strip().splitlines()[-1] if out.returncode == 0 and out.stdout.strip() else None
        except (OSError, subprocess.TimeoutExpired):
            return None

    cxx = os.environ.get("CXX", "c++")
    return {"torch": torch.__version__, "cuda": torch.version.cuda, "python": platform.python_version(),
            "nvcc": version(["nvcc", "--version"]), "cxx": version([cxx, "-dumpfullversion"])}  # fmt: skip


def ninja_steps(build_dir: Path) -> dict[str, float]:
    """Seconds spent per kind of build step (`nvcc`: .cu objects, `host`: C++ objects, `link`), summed over the
    `.ninja_log` files torch's builds left under `build_dir` (figures only: where a CUDA build's time goes)."""
    steps: Counter[str] = Counter()
    for log in build_dir.rglob(".ninja_log"):
        for line in log.read_text(errors="replace").splitlines():
            fields = line.split("\t")
            if line.startswith("#") or len(fields) < 4 or not (fields[0].isdigit() and fields[1].isdigit()):
                continue
            target = fields[3]
            kind = "nvcc" if target.endswith(".cuda.o") else "host" if target.endswith(".o") else "link"
            steps[kind] += (int(fields[1]) - int(fields[0])) / 1e3
    return {k: round(v, 3) for k, v in steps.items()}


@dataclass
class BuildResult:
    """Outcome of building one candidate's extensions. `path` is the cache entry the candidate worker loads from."""

    status: str  # "built" (prebuilt, or nothing to build), "compile_error", or "fallback" (build in the GPU worker)
    path: str | None = None
    modes: list[str] = field(default_factory=list)  # per load_inline call: split+pch, split or plain (figures only)
    steps: dict[str, float] = field(default_factory=dict)  # seconds per build step kind (`ninja_steps`, figures)
    hit: bool = False
    seconds: float = 0.0
    feedback: str = ""
    front: FrontResult | None = None  # the front check's outcome, when it ran (front.py)

    def record(self, stage_s: dict[str, float]) -> None:
        """Its seconds in a verdict's stages: `build_farm`, and `front_check` and `front_wait` (the check's own seconds,
        and its waits for a slot or the headers: parts of it) when the check ran."""
        stage_s["build_farm"] = round(self.seconds, 3)
        if self.front is not None:
            stage_s["front_check"], stage_s["front_wait"] = self.front.seconds, self.front.waited


@dataclass
class BuildFarm:
    """Bounded pool of sandboxed CPU build workers in front of a content-addressed cache on local disk."""

    cache_dir: str
    arch: str = "9.0"  # TORCH_CUDA_ARCH_LIST for builds: the judging GPU's compute capability
    workers: int = 0  # concurrent builds; 0: one per CPU core (see __post_init__)
    timeout_s: float = 600.0
    memory_limit_gb: float = 16.0
    pch: bool = True  # build precompiled torch/extension.h headers (background, once per cache) for builds
    bind: bool = True  # also torch/all.h headers and the bridge library, for host TUs without pybind11 (bind.py);
    # set False later to build without the bridge again (bench/judge_throughput.py --steady-no-bind)
    warm: bool = False  # keep `workers` build workers spawned ahead, `import torch` done (~3 s of each build)
    pch_wait_s: float = 240.0  # a build waits this long for headers being precompiled (parsing torch doubles it)
    probe: bool = True  # once the headers are built, ask a build worker whether its compiler takes them
    front: bool = True  # a front check before each build answers certain compile errors in seconds (front.py)
    front_host_cap_s: float = 1.0  # the host check's cut, CPU seconds: past the parse, torch's pending templates
    tricks: str = "bridge"  # how far the build tricks go, for their ablation (TRICKS; bench/build_ablation.py)

    def __post_init__(self) -> None:
        # One per core. A split build is one host compile beside a short nvcc pipeline (~2.5 s). Measured on the
        # H200 when that compile took 20-25 s (the build workers then ran another compiler than the one the headers
        # were precompiled with, so the `.gch` went unused): 16 candidates in 38.1 s at 16 builds against 48.6 s at 8
        # (bench/judge_throughput.py --steady-farm, 2026-12-03). With the header used (host step 6.3 s) it is not
        # measured again.
        self.workers = self.workers or max(1, os.cpu_count() or 2)
        self.root = Path(self.cache_dir)
        self.root.mkdir(parents=True, exist_ok=True)
        for stale in self.root.glob(".tmp-*"):  # a promotion interrupted by a crash of the judge itself
            shutil.rmtree(stale, ignore_errors=True)
        self._slots = threading.BoundedSemaphore(self.workers)
        self._lock = threading.Lock()
        self._inflight: dict[str, threading.Lock] = {}
        self.builds_started = 0  # build jobs actually run (cache hits and dedupe do not count)
        self.build_modes: Counter[str] = Counter()  # how load_inline calls were built (split+pch, split, plain)
        self.build_steps: list[dict[str, float]] = []  # seconds per step kind of each build (`ninja_steps`)
        self._pch_dirs: dict[str, str] = {}  # json(host cflags) -> dir holding torch/extension.h.gch
        self._light_dirs: dict[str, str] = {}  # json(host cflags) -> dir holding torch/all.h.gch (bind.py)
        self._bridge: str | None = None  # the bridge library (bind.py), once built
        self.pch_ready = threading.Event()  # set once every precompiled header is built (or failed)
        self.pch_seconds: float | None = None  # how long that took (0-ish when the cache already had them)
        self._pch_started = False  # headers are built when the first build comes (a Triton-only run builds none)
        self.pch_probe: dict[str, str] | None = None  # what `probe_headers` found, once it ran
        if not self.pch:
            self.pch_ready.set()
        self._warm: WarmSandboxes | None = None  # started by the first build: a Triton-only run spawns none
        # Threads for `submit`: enough that every request of a large batch gets its front check at once (a batch's
        # compile errors waited over 100 s behind 16 running builds on the H200). Builds still take a slot each,
        # front checks one of their own (a few nvcc front ends, ~0.3-2 s); the other threads wait.
        self._submitted = ThreadPoolExecutor(max_workers=8 * self.workers, thread_name_prefix="kz-build")
        self._futures: dict[tuple[str, bool], Future] = {}  # submitted and not finished, by (key, front)
        self._front_slots = FrontSlots(self.workers)
        self.front_outcomes: Counter[str] = Counter()  # front check statuses (compile_error, passed, unsure, skipped)
        self._front: FrontCheck | None = None  # made by the first build (front.py)

    def resize(self, workers: int) -> None:
        """Change how many builds run at once; builds already running finish on their old slots."""
        with self._lock:
            self.workers = max(1, int(workers))
            self._slots = threading.BoundedSemaphore(self.workers)

    def _env(self, nice: int = BUILD_NICE) -> dict[str, str]:
        """The build workers' environment, their compiler the one the headers were precompiled with: GCC passes over
        another compiler's `.gch` without a word (on the H200, CXX=/opt/gcc/bin/g++ and the sandbox's `c++` differed,
        and every host compile parsed torch's headers again: 11.1 s instead of 3.8 s, bench/pch_check.py). Builds
        run at niceness `nice` (the worker applies KZ_NICE), the front check at 0."""
        import torch.utils.cpp_extension as cpp

        return {"TORCH_CUDA_ARCH_LIST": self.arch, "MAX_JOBS": "2", "CUDA_VISIBLE_DEVICES": "",
                "CXX": cpp.get_cxx_compiler(), **({"KZ_NICE": str(nice)} if nice > 0 else {})}  # fmt: skip

    def close(self) -> None:
        """Stop the warm build workers (builds in progress finish)."""
        with self._lock:
            warm, self.warm = self._warm, False
        if warm is not None:
            warm.close()
        self._submitted.shutdown(wait=False, cancel_futures=True)

    def submit(self, source: str, front: bool = True) -> Future:
        """`build(source, front)` on a farm thread: the judge starts a build before it waits for the task's
        reference. A source whose build is under way gets that build's future (its BuildResult is shared, read
        only): the pool and the judge thread both ask for every CUDA candidate's build, and a second thread would
        only hold a farm thread waiting on the first one's lock."""
        key = (self.key(source), front)
        with self._lock:
            future = self._futures.get(key)
            if future is not None:
                return future
            future = self._futures[key] = self._submitted.submit(self.build, source, front)
        future.add_done_callback(lambda f: self._forget(key, f))  # outside the lock: a done future calls back here
        return future

    def _forget(self, key: tuple[str, bool], future: Future) -> None:
        with self._lock:
            if self._futures.get(key) is future:
                del self._futures[key]

    def _sandbox(self, job: dict[str, Any]) -> Sandbox:
        with self._lock:
            if self.warm and self._warm is None:
                self._warm = WarmSandboxes(self.workers, "cpu", self.memory_limit_gb, self._env(), prewarm=False)
            warm = self._warm
        if warm is not None:
            return warm.take(job)
        return Sandbox(job=job, device="cpu", memory_limit_gb=self.memory_limit_gb, extra_env=self._env())

    @staticmethod
    def applies(source: str) -> bool:
        return "load_inline" in source

    def key(self, source: str) -> str:
        return _digest(source, toolchain(), self.arch)

    def lookup(self, source: str) -> BuildResult | None:
        entry = self.root / self.key(source)
        try:
            manifest = json.loads((entry / "manifest.json").read_text())
        except (OSError, ValueError):
            return None
        return BuildResult(manifest["status"], str(entry), hit=True, feedback=manifest.get("feedback", ""))

    def build(self, source: str, front: bool = True) -> BuildResult:
        """The cache entry for `source`, building it first on a free build slot unless cached. Never raises for
        candidate faults: a compile error is a result, a candidate that cannot be built on CPU is `fallback`.
        front (and the farm's `front`): run the front check first, on a slot of its own, and answer a compile error
        it is certain of without building (front.py); in every other case the build runs as without it."""
        t0 = time.monotonic()
        if not self.applies(source):
            return BuildResult("built")
        key = self.key(source)
        with self._lock:
            lock = self._inflight.setdefault(key, threading.Lock())
        with lock:  # identical sources wait for the first build instead of building twice
            hit = self.lookup(source)
            if hit is not None:
                hit.seconds = time.monotonic() - t0
                return hit
            checked = self._front_check(source) if front and self.front else None
            if checked is not None and checked.status == "compile_error":
                result = self._promote(self.root / ".none", key, "compile_error", checked.feedback)
            else:
                with self._lock:
                    slots = self._slots  # released to the semaphore it came from, even across a resize
                with slots:
                    result = self._run(source, key)
            result.front = checked
        with self._lock:
            self._inflight.pop(key, None)
        result.seconds = time.monotonic() - t0
        return result

    def _run(self, source: str, key: str) -> BuildResult:
        with self._lock:
            self.builds_started += 1
        self.start_pch()
        self.pch_ready.wait(self.pch_wait_s)
        with self._lock:
            headers = {
                "pch_dirs": dict(self._pch_dirs),
                "light_pch_dirs": dict(self._light_dirs),
                "bridge": self._bridge if self.bind else None,
            }
        job = {"kind": "build", "device": "cpu", "build_mode": "build", **trick_headers(headers, self.tricks)}
        sb = self._sandbox(job)
        (sb.scratch / "candidate.py").write_text(source)
        sb.job.update(candidate_path=str(sb.scratch / "candidate.py"), build_dir=str(sb.scratch / "builds"))
        # the worker is dead once this returns: nothing can race the promotion below
        msg = self._exchange(sb)
        try:
            if isinstance(msg, Failed) and msg.stage == "compile":
                return self._promote(sb.scratch / "builds", key, "compile_error", msg.message)
            if isinstance(msg, Prebuilt):
                modes = [m for m in msg.modes if m in BUILD_MODES]  # worker-sent: figures only
                steps = ninja_steps(sb.scratch / "builds")
                with self._lock:
                    self.build_modes.update(modes)
                    self.build_steps.append(steps)
                result = self._promote(sb.scratch / "builds", key, "built", "")
                result.modes, result.steps = modes, steps
                return result
            why = msg.message if isinstance(msg, (Failed, GuardHit, Unbuilt)) else sb.log_tail()
            return BuildResult("fallback", feedback=why[-2000:])
        finally:
            sb.cleanup()

    def _front_check(self, source: str) -> FrontResult:
        """The front check on slots of its own, before a build slot (`front.check_with_headers`)."""
        self.start_pch()  # the host TU's check needs torch/extension.h precompiled: started by the first check
        with self._lock:  # one checker (it keeps what it learnt of the headers), made by one thread (imports torch)
            if self._front is None:
                self._front = FrontCheck(self.arch, min(self.timeout_s, 120.0), self.memory_limit_gb, self._env(0),
                                         host_pch=lambda cflags: self._pch_dirs.get(json.dumps(cflags)))  # fmt: skip
            front = self._front
        result = check_with_headers(front, source, self._front_slots, self.pch_ready, self.pch_wait_s,
                                    self.front_host_cap_s or None)  # fmt: skip
        with self._lock:
            self.front_outcomes[result.status] += 1
        return result

    def _exchange(self, sb: Sandbox) -> Message | None:
        """Start `sb`'s job and wait for its answer, the first message other than `started` and `done`; the worker
        is finished (dead) on return. None when it exited without one; `Unbuilt` on a timeout, a broken channel or
        a message its job never sends (`messages.parse`: the build worker runs candidate code, which can forge)."""
        try:
            sb.start()
            deadline = time.monotonic() + self.timeout_s
            while True:
                raw = sb.recv(deadline)
                msg = None if raw is None else parse(raw, sb.job["kind"])
                if not isinstance(msg, (Started, Done)):
                    return msg
        except (TimeoutError, ChannelError) as exc:
            return Unbuilt(message=f"{type(exc).__name__}: {exc}")
        finally:
            sb.finish()

    def probe_headers(self) -> dict[str, str]:
        """Ask a build worker, in the build sandbox with the build environment, whether its compiler takes each
        precompiled header (`probe_headers`): {"pch [flags]" or "light [flags]": "used", or why not}. Run once the
        headers are built (`_warm_pch`); a header not used is said on stderr, and `state_dict` has them all."""
        with self._lock:
            dirs = [(kind, flags, d) for kind, found in (("pch", self._pch_dirs), ("light", self._light_dirs))
                    for flags, d in found.items()]  # fmt: skip
        headers = []
        for kind, flags, d in dirs:  # the header each directory precompiles, as the farm's TUs include it
            header = "torch/all.h" if Path(d, "torch/all.h.gch").is_file() else "torch/extension.h"
            headers.append([f"{kind} {flags}", json.loads(flags), d, header])
        if not headers:
            return {}
        job = {"kind": "probe_headers", "device": "cpu", "headers": headers, "with_cuda": has_cuda_toolkit()}
        sb = Sandbox(job=job, device="cpu", memory_limit_gb=self.memory_limit_gb, extra_env=self._env())
        try:
            msg = self._exchange(sb)
            if isinstance(msg, Probed):
                found = msg.headers
            else:
                why = msg.message if isinstance(msg, (Failed, GuardHit, Unbuilt)) else ""
                found = {name: f"not probed: {why or sb.log_tail()[-300:]}" for name, *_ in headers}
        finally:
            sb.cleanup()
        self.pch_probe = {name: str(found.get(name, "not probed")) for name, *_ in headers}
        passed_over = {name: why for name, why in self.pch_probe.items() if why != "used"}
        if passed_over:
            name, why = next(iter(passed_over.items()))
            print(f"kernelzero: {len(passed_over)} of {len(headers)} precompiled headers are not used by the build "
                  f"workers' compiler, so host compiles parse torch's headers again (slower, not wrong); {name}: {why}",
                  file=sys.stderr)  # fmt: skip
        return self.pch_probe

    def _promote(self, built: Path, key: str, status: str, feedback: str) -> BuildResult:
        """Move a finished build into the cache with one atomic rename; a concurrent identical promotion wins."""
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=self.root))
        if status == "built" and built.is_dir():
            for item in built.iterdir():
                shutil.move(str(item), tmp / item.name)
        (tmp / "manifest.json").write_text(json.dumps({"status": status, "feedback": feedback, "key": key}))
        entry = self.root / key
        try:
            os.rename(tmp, entry)
        except OSError:  # already there (an identical build promoted first): keep that one
            shutil.rmtree(tmp, ignore_errors=True)
        return BuildResult(status, str(entry), feedback=feedback)

    def start_pch(self) -> None:
        """Start building the precompiled headers (once; quick when the cache already has them)."""
        with self._lock:
            if not self.pch or self._pch_started:
                return
            self._pch_started = True
        toolchain()  # imports torch here: two threads importing it at once fail (partially initialised module)
        threading.Thread(target=self._warm_pch, name="kz-pch", daemon=True).start()

    def _warm_pch(self) -> None:
        """Precompiled torch/extension.h for the host TU of split builds, one per common flag set, built here
        (trusted) into the cache, all at once. Not torch's own `use_pch`: that one lives in site-packages, and every
        plain load_inline deletes it (in a read-only sandbox that deletion fails the candidate's build)."""
        t0 = time.monotonic()
        try:
            with_cuda = has_cuda_toolkit()
            jobs = [(self._one_pch, (flags, with_cuda, light)) for flags in PCH_FLAG_SETS
                    for light in ((False, True) if self.bind else (False,))]  # fmt: skip
            if self.bind:
                jobs.append((self._one_bridge, ()))
            threads = [threading.Thread(target=f, args=args, daemon=True) for f, args in jobs]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        finally:
            self.pch_seconds = round(time.monotonic() - t0, 3)
            self.pch_ready.set()
        if self.probe:  # after `pch_ready`: builds do not wait for it
            self.probe_headers()

    def _one_pch(self, flags: list[str], with_cuda: bool, light: bool = False) -> None:
        out = self.root / "pch" / _digest(flags, toolchain(), with_cuda, *(["all.h"] if light else []))
        product = "torch/all.h.gch" if light else "torch/extension.h.gch"
        if self._build_once(out, product, lambda tmp: build_pch(tmp, flags, with_cuda, light),
                            f"no precompiled header for {flags}"):  # fmt: skip
            with self._lock:
                (self._light_dirs if light else self._pch_dirs)[json.dumps(flags)] = str(out)

    def _one_bridge(self) -> None:
        out = self.root / "bridge" / _digest(BRIDGE_SOURCE, toolchain())
        if self._build_once(out, LIBRARY, build_bridge, "no binding bridge (builds keep pybind11)"):
            with self._lock:
                self._bridge = str(out / LIBRARY)

    @staticmethod
    def _build_once(out: Path, product: str, build: Callable[[Path], str | None], what: str) -> bool:
        """Build into `out` (here, trusted) unless `out/product` is there: into a sibling, then one rename. False, with
        the error printed, when the build failed."""
        if (out / product).is_file():
            return True
        tmp = out.with_name(f"{out.name}.tmp{os.getpid()}-{threading.get_ident()}")
        err = build(tmp)
        if err is not None:
            print(f"kernelzero: {what}: {err[-400:]}", file=sys.stderr)
            shutil.rmtree(tmp, ignore_errors=True)
            return False
        if out.is_dir() and not (out / product).is_file():
            shutil.rmtree(out, ignore_errors=True)  # a stale folder without the product (an older layout)
        try:
            os.rename(tmp, out)
        except OSError:  # another judge on this machine promoted the same build first: theirs is in use, keep it
            shutil.rmtree(tmp, ignore_errors=True)
        return (out / product).is_file()

    def state_dict(self) -> dict:
        """Counters and figures: builds run, how they were made, median seconds per build step kind."""
        kinds = sorted({k for steps in self.build_steps for k in steps})
        medians = {k: round(statistics.median(s.get(k, 0.0) for s in self.build_steps), 3) for k in kinds}
        return {"cache_dir": str(self.root), "builds_started": self.builds_started, "pch_seconds": self.pch_seconds,
                "bridge": bool(self._bridge and self.bind), "build_modes": dict(self.build_modes),
                "pch_probe": self.pch_probe,
                "build_step_median_s": medians, "front_check": dict(self.front_outcomes)}  # fmt: skip

    def load_state_dict(self, state: dict) -> None:
        self.builds_started = int(state.get("builds_started", 0))
