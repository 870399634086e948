"""Scale-out: the judge's build and GPU workers as Ray actors across a cluster. Optional: needs `kernelzero[ray]`.

Same client API as `JudgePool` (submit / judge / judge_many / imap / ajudge, dedupe, back-pressure); only dispatch
differs. Each `JudgeActor` owns one GPU (`num_gpus=1`; on a CPU-only cluster, one CPU and the Triton interpreter)
and runs candidates in its node's sandboxes as `JudgePool` does. Each `BuildActor` runs a `BuildFarm` on a CPU node
and returns the finished cache entry as a tar archive through Ray's object store, so build nodes and GPU nodes
need no shared filesystem; the judge actor unpacks it into its local cache before it judges. A request's build is
an ObjectRef argument of its judge call, so Ray overlaps builds with GPU work and no GPU waits for a compiler.
Nodes must share the toolchain (same image): the cache key includes it, and a mismatch only costs a local build.
"""

from __future__ import annotations

import io
import os
import tarfile
import tempfile
import threading
from concurrent.futures import Future
from pathlib import Path

from kernelzero.judge.build.farm import BuildFarm, BuildResult
from kernelzero.judge.core import Judge
from kernelzero.judge.options import JudgeOptions
from kernelzero.judge.pool import JudgePool
from kernelzero.judge.sandbox.gpulock import SharedExclusiveLock
from kernelzero.tasks import Task

try:
    import ray
except ImportError:  # the local pool is the default and needs no Ray
    ray = None


def _pack(result: BuildResult) -> tuple[str, str, bytes | None]:
    if result.path is None:
        return result.status, result.feedback, None
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(result.path, arcname=".")
    return result.status, result.feedback, buf.getvalue()


class BuildActor:
    """One build node's farm: builds a candidate's extensions and ships the cache entry back."""

    def __init__(self, arch: str, workers: int = 0, cache_dir: str | None = None):
        cache_dir = cache_dir or os.path.join(tempfile.gettempdir(), "kernelzero-ray-build")
        self.farm = BuildFarm(cache_dir, arch=arch, workers=workers)

    def build(self, source: str) -> tuple[str, str, bytes | None]:
        return _pack(self.farm.build(source))


class JudgeActor:
    """One GPU (or one CPU slot): a `Judge` whose CUDA candidates load what a `BuildActor` built."""

    def __init__(self, options: JudgeOptions, slots: int = 2):
        self.judge = Judge(options)
        if self.judge.device == "cuda":  # Ray already restricts CUDA_VISIBLE_DEVICES to this actor's GPU
            cache = os.path.join(tempfile.gettempdir(), "kernelzero-ray-cache")
            self.judge.farm = BuildFarm(cache, arch=self.arch(), workers=1, pch=False)  # fallback builds only
            self.judge.gpu_slots = threading.BoundedSemaphore(slots)
            self.judge.timing_lock = SharedExclusiveLock()

    def arch(self) -> str:
        return self.judge.env.get("capability") or "9.0"

    def judge_request(self, task: Task, source: str, backend: str, built: tuple | None = None):
        farm = self.judge.farm
        if built is not None and built[2] is not None and farm is not None:
            entry = farm.root / farm.key(source)
            if not entry.exists():
                tmp = tempfile.mkdtemp(prefix=".tmp-", dir=farm.root)
                with tarfile.open(fileobj=io.BytesIO(built[2])) as tar:
                    tar.extractall(tmp, filter="data")
                try:
                    os.rename(tmp, entry)
                except OSError:  # another call installed it first
                    pass
        return self.judge.judge(task, source, backend)


class RayJudgePool(JudgePool):
    """`JudgePool` over Ray actors. `judge_actors` defaults to the cluster's GPUs (CPUs on a CPU-only cluster)."""

    def __init__(self, options: JudgeOptions | None = None, *, judge_actors: int | None = None,
                 build_actors: int | None = None, build_workers: int = 0, slots_per_gpu: int = 4,
                 address: str | None = None, max_pending: int = 1024, dedupe: bool = True):  # fmt: skip
        if ray is None:
            raise ImportError("the Ray backend needs Ray: pip install 'kernelzero[ray]'")
        if not ray.is_initialized():  # ship this package to the cluster's workers
            ray.init(address=address, runtime_env={"py_modules": [str(Path(__file__).resolve().parents[1])]})
        options = options or JudgeOptions()
        gpus = int(ray.cluster_resources().get("GPU", 0))
        cuda = options.device == "cuda" or (options.device == "auto" and gpus > 0)
        n = judge_actors or (gpus if cuda else max(1, int(ray.cluster_resources().get("CPU", 1)) // 2))
        actor = ray.remote(num_gpus=1 if cuda else 0, num_cpus=1, max_concurrency=slots_per_gpu + 1)(JudgeActor)
        self._actors = [actor.remote(options, slots_per_gpu) for _ in range(n)]
        self._builders = []
        if cuda:
            arch = ray.get(self._actors[0].arch.remote())
            builder = ray.remote(num_cpus=2)(BuildActor)
            nb = build_actors if build_actors is not None else max(1, int(ray.cluster_resources().get("CPU", 2)) // 8)
            self._builders = [builder.remote(arch, build_workers) for _ in range(nb)]
        self._next_builder = 0
        self.judges, self.farm, self.workers, self._executor, self._warm = [], None, n, None, []
        self._init_client(n, max_pending, dedupe, 100_000)

    def _dispatch(self, task: Task, source: str, backend: str) -> Future:
        index = min(range(len(self._actors)), key=self._load.__getitem__)
        self._load[index] += 1
        built = None
        if self._builders and BuildFarm.applies(source):
            built = self._builders[self._next_builder % len(self._builders)].build.remote(source)
            self._next_builder += 1
        fut = self._actors[index].judge_request.remote(task, source, backend, built).future()
        fut.add_done_callback(lambda _: self._unload(index))
        return fut

    def close(self, wait: bool = True) -> None:
        self._closed = True
        for a in [*self._actors, *self._builders]:
            ray.kill(a)
        self._actors, self._builders = [], []
