"""Judging many candidates at once: GPU judges fed by a CPU build farm, dedupe, back-pressure, and an async client.

Scheduling (GPU): one `Judge` per visible GPU (or per GPU in `devices`), each bound to its device by
CUDA_VISIBLE_DEVICES and holding at most `slots_per_gpu` live candidate workers (`default_slots_per_gpu`). Timing is
exclusive per GPU and correctness trials never overlap it (`SharedExclusiveLock`); the other slots load modules and
compile Triton kernels meanwhile. CUDA builds run first on the shared `BuildFarm` (`build_workers` sandboxed CPU
builds), so builds overlap GPU work. Requests go to the least-busy GPU. Back-pressure: `submit` blocks once
`max_pending` distinct requests are queued or running. Workers are spawned ahead of need (`WarmSandboxes`), so
process start and `import torch` overlap other candidates' work.

Dedupe: identical requests (same task source, candidate source and backend; common within a GRPO group) are judged
once. Concurrent duplicates share one future; later ones get the cached verdict. Every caller gets its own copy.
`infra_error` verdicts are never cached (they say nothing about the candidate).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import os
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, InvalidStateError, ThreadPoolExecutor

from kernelzero.judge.build.farm import BuildFarm
from kernelzero.judge.core import Judge, source_hash
from kernelzero.judge.footprint import MemoryGate
from kernelzero.judge.options import JudgeOptions
from kernelzero.judge.sandbox.gpulock import SharedExclusiveLock
from kernelzero.judge.sandbox.process import WarmSandboxes, kill_workers
from kernelzero.judge.verdict import Verdict
from kernelzero.tasks import Task

Request = tuple[Task, str, str]


def request_key(task: Task, source: str, backend: str) -> str:
    return source_hash(task.source, source, backend)


def _visible_gpus() -> list[str]:
    import torch

    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    ids = [d.strip() for d in env.split(",") if d.strip()] if env else []
    return ids[: torch.cuda.device_count()] or [str(i) for i in range(torch.cuda.device_count())]


def default_slots_per_gpu(n_gpus: int = 1, index: int = 0) -> int:
    """Live candidate workers per GPU. A candidate spends most of its slot on CPU work (import, Triton JIT, writing
    and reading outputs) that runs alongside other slots, while the GPU work that must be alone (timing) is
    serialised anyway; so: 2 cores per slot, and 16 GB of GPU memory per slot (a worker's CUDA context plus a
    KernelBench-size task), between 2 and 8. An H200 (141 GB) on 16 cores gets 8, an 80 GB H100 4, a 24 GB card 2."""
    import torch

    mem_gb = torch.cuda.get_device_properties(index).total_memory / 2**30
    return max(2, min(8, (os.cpu_count() or 2) // (2 * max(1, n_gpus)), int(mem_gb // 16)))


def select_gpus(ids: Sequence[str], devices: Sequence[int] | None, gpus: int | None) -> tuple[list[int], list[str]]:
    """(indices as this process numbers its GPUs, CUDA_VISIBLE_DEVICES ids) of the GPUs a pool judges on."""
    indices = list(range(len(ids))) if devices is None else list(devices)
    if not indices or any(not 0 <= d < len(ids) for d in indices):
        raise ValueError(f"JudgePool devices {indices} must index the {len(ids)} visible GPU(s)")
    indices = indices[: gpus or None]
    return indices, [ids[d] for d in indices]


def _copy_future(shared: Future) -> Future:
    """A future resolved with a private copy of `shared`'s verdict, so callers never alias one record."""
    own: Future = Future()

    def done(f: Future) -> None:
        if f.cancelled():
            own.cancel()
        elif f.exception() is not None:
            own.set_exception(f.exception())
        else:
            own.set_result(copy.deepcopy(f.result()))

    shared.add_done_callback(done)
    return own


class JudgePool:
    """Runs `Judge.judge` for many (task, source, backend) requests concurrently, each in its own worker process.

    Every request gets exactly one Verdict, in request order, whatever its candidate does.
    """

    def __init__(self, options: JudgeOptions | None = None, workers: int | None = None, *, gpus: int | None = None,
                 devices: Sequence[int] | None = None, slots_per_gpu: int | None = None, build_workers: int = 0,
                 cache_dir: str | None = None, max_pending: int = 1024, dedupe: bool = True, cache_size: int = 100_000,
                 warm: bool = True):  # fmt: skip
        """gpus: use the first N of `devices`; devices: indices of this process's visible GPUs to judge on (default
        all; `[LOCAL_RANK]` gives each training process its own judge GPU)."""
        self.judge_ = Judge(options)
        self.judges = [self.judge_]
        self.slots_per_gpu: int | None = None  # live candidate workers per GPU (none on CPU)
        self.farm: BuildFarm | None = None
        if self.judge_.device == "cuda":
            indices, visible = select_gpus(_visible_gpus(), devices, gpus)
            slots_per_gpu = slots_per_gpu or default_slots_per_gpu(len(visible), indices[0])
            self.judges += [Judge(options) for _ in visible[1:]]
            cache_dir = cache_dir or os.path.join(tempfile.gettempdir(), "kernelzero-build-cache")
            self.farm = BuildFarm(cache_dir, arch=self.judge_.env.get("capability") or "9.0", workers=build_workers,
                                  timeout_s=self.judge_.options.build_timeout_s, warm=warm)  # fmt: skip
            for index, judge, dev in zip(indices, self.judges, visible):
                judge.sandbox_env = {"CUDA_VISIBLE_DEVICES": dev}
                judge.compare_device = f"cuda:{index}"  # the same GPU, as this process numbers it
                judge.gpu_key = f"gpu:{index}"
                judge.gpu_slots = threading.BoundedSemaphore(slots_per_gpu)
                judge.timing_lock = SharedExclusiveLock()  # timing alone on its GPU; trials share it
                judge.farm = self.farm
            default = self.farm.workers + len(self.judges) * slots_per_gpu
            self.slots_per_gpu = slots_per_gpu
        else:
            default = max(1, os.cpu_count() or 2)
        self.workers = workers or default
        # Pre-spawned workers per judge (none without `warm`): on a GPU twice the slots, so a burst (a GRPO batch,
        # its references included) finds warm workers.
        per_judge = (2 * (slots_per_gpu or 0) if self.farm is not None else self.workers) if warm else 0
        # One admission gate for every judge: a GPU each, and the host's memory, which they share.
        capacity: dict[str, int] = {}
        for judge in self.judges:
            capacity.update(judge.capacities(len(self.judges) * per_judge, per_judge))
        self.gate = MemoryGate(capacity)
        for judge in self.judges:
            judge.set_gate(self.gate, judge.gpu_key)
        self._warm: list[WarmSandboxes] = []
        if warm:  # pre-spawned workers: a candidate does not wait for a process start and `import torch`
            for judge in self.judges:
                judge.warm = WarmSandboxes(per_judge, judge.device, judge.options.memory_limit_gb, judge.sandbox_env)
                self._warm.append(judge.warm)
        self._executor = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="kz-judge")
        self._init_client(len(self.judges), max_pending, dedupe, cache_size)

    def _init_client(self, n_judges: int, max_pending: int, dedupe: bool, cache_size: int) -> None:
        """Client-side state shared by every backend: dedupe, verdict cache, back-pressure, load accounting."""
        self._pending = threading.BoundedSemaphore(max_pending)
        self._lock = threading.RLock()  # RLock: a done-callback may run inline inside _dispatch
        self._load = [0] * n_judges  # requests in flight per judge (GPU)
        self._inflight: dict[str, Future] = {}
        self._verdicts: OrderedDict[str, Verdict] = OrderedDict()
        self.dedupe, self.cache_size = dedupe, cache_size
        self.stats = {"submitted": 0, "judged": 0, "deduped": 0, "cached": 0}
        self._closed = False

    def resize_slots(self, slots_per_gpu: int) -> None:
        """Change how many candidate workers each GPU holds at once (for comparisons in one pool: bench/); workers
        already holding a slot finish on their old one. The pool's thread count is not changed."""
        if self.slots_per_gpu is None:
            raise RuntimeError("JudgePool.resize_slots: this pool judges on the CPU and has no GPU slots")
        self.slots_per_gpu = max(1, int(slots_per_gpu))
        for judge in self.judges:
            judge.gpu_slots = threading.BoundedSemaphore(self.slots_per_gpu)

    # ------------------------------------------------------------------ core API
    def submit(self, task: Task, source: str, backend: str) -> Future:
        """Schedule one request; blocks while `max_pending` requests are outstanding. The future's result is a
        Verdict owned by the caller."""
        if self._closed:
            raise RuntimeError("JudgePool is closed")
        key = request_key(task, source, backend)
        with self._lock:
            self.stats["submitted"] += 1
            if self.dedupe and key in self._verdicts:
                self.stats["cached"] += 1
                self._verdicts.move_to_end(key)
                done: Future = Future()
                done.set_result(copy.deepcopy(self._verdicts[key]))
                return done
            if self.dedupe and key in self._inflight:
                self.stats["deduped"] += 1
                return _copy_future(self._inflight[key])
        if self.judges and self.judges[0].static_check(source, backend) is not None:
            # Syntax, the static guards, Triton's front check: answered here in milliseconds, never queued behind
            # the candidates running (a batch's Triton compile errors waited a minute for a thread on 2 cores).
            done = Future()
            try:
                done.set_result(self.judges[0].judge(task, source, backend))  # returns at its static step: no worker
            except Exception as exc:  # e.g. an unknown backend: raised by the future, as for every request
                done.set_exception(exc)
            with self._lock:
                self.stats["judged"] += 1
            return done
        self._pending.acquire()  # back-pressure, outside the lock so completions can proceed
        with self._lock:
            if self.dedupe and key in self._inflight:  # an identical request got in while we waited
                self._pending.release()
                self.stats["deduped"] += 1
                return _copy_future(self._inflight[key])
            shared = self._build_answers_first(task, source, backend, self._dispatch(task, source, backend))
            self._inflight[key] = shared
            self.stats["judged"] += 1
        shared.add_done_callback(lambda f: self._finish(key, f))
        return _copy_future(shared)

    def _build_answers_first(self, task: Task, source: str, backend: str, judged: Future) -> Future:
        """`judged`, or for a CUDA candidate built on the farm, a future answered by whichever comes first: the
        judge's verdict or the compile error its build finds (the front check: about a second). The build starts
        here, not when a judge thread is free: a batch's compile errors waited over 100 s on the H200 for threads
        busy with the candidates before them. Both answers agree: the judge reads the same build from the farm."""
        farm = getattr(self, "farm", None)
        if farm is None or backend != "cuda" or not farm.applies(source):
            return judged
        answer: Future = Future()

        def settle(result: Callable[[], Verdict | None]) -> None:
            try:
                verdict = result()
                if verdict is not None:
                    answer.set_result(verdict)
            except InvalidStateError:  # answered already, by the other
                pass
            except BaseException as exc:  # raised again by the caller's `result()`
                with contextlib.suppress(InvalidStateError):
                    answer.set_exception(exc)

        def built(f: Future) -> None:
            if not f.cancelled() and f.exception() is None:  # a farm failure: the judge's own answer decides
                settle(lambda: self.judges[0].answer_from_build(task, source, backend, f.result()))

        judged.add_done_callback(lambda f: settle(f.result))
        farm.submit(source, self.judges[0].options.front_check).add_done_callback(built)
        return answer

    def _dispatch(self, task: Task, source: str, backend: str) -> Future:
        """Start judging one request on the least-busy judge (called under the lock). Backends override this."""
        index = min(range(len(self.judges)), key=self._load.__getitem__)
        self._load[index] += 1
        fut = self._executor.submit(self.judges[index].judge, task, source, backend)
        fut.add_done_callback(lambda _: self._unload(index))
        return fut

    def _unload(self, index: int) -> None:
        with self._lock:
            self._load[index] -= 1

    def _finish(self, key: str, fut: Future) -> None:
        with self._lock:
            self._inflight.pop(key, None)
            if self.dedupe and not fut.cancelled() and fut.exception() is None and fut.result().scored:
                self._verdicts[key] = fut.result()
                while len(self._verdicts) > self.cache_size:
                    self._verdicts.popitem(last=False)
        self._pending.release()

    def judge(self, task: Task, source: str, backend: str) -> Verdict:
        return self.submit(task, source, backend).result()

    def judge_many(self, requests: Sequence[Request], progress: bool = False) -> list[Verdict]:
        futures = [self.submit(*r) for r in requests]
        if progress:
            from rich.progress import Progress

            with Progress(transient=True) as bar:
                job = bar.add_task("judging", total=len(futures))
                for f in futures:
                    f.result()
                    bar.advance(job)
        return [f.result() for f in futures]

    def imap(self, requests: Iterable[Request]):
        """Verdicts in request order as they complete, for writers that must flush each line."""
        futures = [self.submit(*r) for r in requests]
        for f in futures:
            yield f.result()

    async def ajudge(self, task: Task, source: str, backend: str, timeout_s: float | None = None) -> Verdict:
        """Async client for reward functions. A request past `timeout_s` (queueing included) is `infra_error`, not
        scored; the judging itself carries on and its verdict serves later identical requests."""

        async def run() -> Verdict:
            fut = await asyncio.to_thread(self.submit, task, source, backend)  # submit may block (back-pressure)
            return await asyncio.wrap_future(fut)

        try:
            return await asyncio.wait_for(run(), timeout_s)
        except TimeoutError:
            return Verdict.fail("infra_error", f"judge request exceeded {timeout_s} s", guard="request_timeout",
                                backend=backend, task=task.name)  # fmt: skip

    # ------------------------------------------------------------------ state and lifecycle
    def state_dict(self) -> dict:
        with self._lock:
            return {"verdicts": {k: v.to_dict() for k, v in self._verdicts.items()}, "stats": dict(self.stats)}

    def load_state_dict(self, state: dict) -> None:
        with self._lock:
            self._verdicts = OrderedDict((k, Verdict.from_dict(v)) for k, v in state.get("verdicts", {}).items())
            self.stats.update(state.get("stats", {}))

    def close(self, wait: bool = True, kill: bool = False) -> None:
        """Stop taking requests, drop queued ones (their futures are cancelled), let running ones finish; with `kill`
        (Ctrl-C), kill their workers first, so that they finish at once, their verdicts unused: a study interrupted on
        the H200 still waited over 30 s for its running judgings."""
        self._closed = True
        if kill:
            kill_workers()
        self._executor.shutdown(wait=wait, cancel_futures=True)
        for w in self._warm:
            w.close()
        if self.farm is not None:
            self.farm.close()

    def __enter__(self) -> JudgePool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
