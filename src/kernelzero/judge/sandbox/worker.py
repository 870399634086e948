"""The worker: the only place task and candidate code runs. One job per process, then it exits.

Started by `Sandbox` as `python -m kernelzero.judge.sandbox.worker RESULT_FD`; reads one JSON job line on stdin,
reports on the signed channel (RESULT_FD) with the messages of `messages.PROTOCOL` for its job kind, then exits
without interpreter teardown. Job kinds (`JOBS`): `reference` and `candidate` (judge_jobs.py), `build` and
`probe_headers` (build_job.py), `validate` (validate_job.py); what they share (clocks bound before untrusted code
runs, inputs, checked forwards, the errors that become verdicts) is harness.py. Everything here runs before any
untrusted code: resource limits, torch's import and warm-up, the precision policy, the channel.
"""

from __future__ import annotations

import json
import os
import sys

from kernelzero.judge.sandbox.build_job import job_build, job_probe_headers
from kernelzero.judge.sandbox.harness import (
    Bound,
    GuardViolation,
    StageError,
    cuda_profiler,
    make_op_recorder,
    short_tb,
)
from kernelzero.judge.sandbox.judge_jobs import job_candidate, job_reference
from kernelzero.judge.sandbox.messages import Done, Failed, GuardHit, Started, wire
from kernelzero.judge.sandbox.process import Channel
from kernelzero.judge.sandbox.validate_job import job_validate

JOBS = {"reference": job_reference, "candidate": job_candidate, "build": job_build,
        "probe_headers": job_probe_headers, "validate": job_validate}  # fmt: skip


def set_precision_policy(torch, allow_tf32: bool) -> None:
    """TF32 off by default: TF32 alone has produced ~10x fake 'speedups' on fp32 matmul/conv tasks."""
    torch.backends.cuda.matmul.allow_tf32 = allow_tf32
    torch.backends.cudnn.allow_tf32 = allow_tf32
    torch.set_float32_matmul_precision("high" if allow_tf32 else "highest")


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
        with cuda_profiler(torch):
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


def apply_nice(value: str) -> None:
    """Lower this worker's priority (and its children's) by `value` (KZ_NICE; the build farm's workers): their CPU
    goes to the judge's checks and timed calls first. Each worker leads a session of its own, and where the kernel
    groups a session's processes for the scheduler (autogroup), a niceness counts only inside the group: the
    group's own niceness is set too."""
    if not value or int(value) <= 0:
        return
    os.nice(int(value))
    try:
        with open("/proc/self/autogroup", "w") as f:
            f.write(str(int(value)))
    except OSError:  # no autogroup scheduling here: the process niceness is the one that counts
        pass


def name_process(name: str) -> None:
    """Name this process (its `comm`: what ps, top and process accounting show) after its role, as `kz-candidate`."""
    try:
        with open("/proc/self/comm", "w") as f:
            f.write(name[:15])
    except OSError:
        pass


def main(argv: list[str]) -> int:
    chan_fd = int(argv[1])
    name_process("kz-worker")
    import faulthandler
    import signal

    faulthandler.register(signal.SIGUSR1, all_threads=True)  # `kill -USR1` prints a stuck worker's stacks to its log
    try:  # when memory runs out, the kernel kills a worker (its verdict says so), never the judge holding the rest
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write("1000")
    except OSError:
        pass
    apply_limits(os.environ.get("KZ_RLIMITS", ""))
    apply_nice(os.environ.get("KZ_NICE", ""))
    try:  # before the job arrives, so a pre-spawned (warm) worker has this done when it does
        import torch

        if os.environ.get("KZ_PREWARM"):  # a pre-spawned worker: time spent here is off the critical path
            prewarm(torch, os.environ.get("KZ_DEVICE", "cpu"))
    except Exception:
        pass  # reported below, on the channel, once the job (and its key) is here
    job = json.loads(sys.stdin.readline())
    name_process(f"kz-{job.get('kind', 'worker')}")
    chan = Channel(chan_fd, bytes.fromhex(job.pop("key")))
    try:
        import torch

        bound = Bound(torch)
        bound.output_fds = {k: int(v) for k, v in (job.get("output_fds") or {}).items()}
        started = {}  # seconds: a pre-spawned worker's CUDA context exists already (prewarm), ~0 s here
        if job["device"] == "cuda":
            t0 = bound.perf_counter()
            torch.cuda.init()
            # torch creates the CUDA context at the first allocation, not at init: made here, a cold worker's
            # context creation shows in `cuda_init` instead of inside its first trial (a warm one made it in prewarm)
            torch.zeros(1, device="cuda")
            t1 = bound.perf_counter()
            bound.open_device_channel(int(job.get("device_fd", -1)), int(job.get("device_min_bytes") or 0))
            started = {"cuda_init": t1 - t0, "device_channel": bound.perf_counter() - t1}
        set_precision_policy(torch, bool(job.get("allow_tf32", False)))
        veil = os.environ.get("KZ_SCRATCH_VEIL")  # set by the namespace prelude: were sibling scratches hidden?
        chan.send(wire(Started(pid=os.getpid(), veil=veil or None, seconds=started)))
        JOBS[job["kind"]](job, chan, torch, bound)
        chan.send(wire(Done()))
    except StageError as err:
        chan.send(wire(Failed(stage=err.stage, message=short_tb(err.exc), type=type(err.exc).__name__)))
    except GuardViolation as err:
        chan.send(wire(GuardHit(guard=err.guard, message=str(err))))
    except BaseException as exc:  # the sandbox boundary: everything becomes a message
        chan.send(wire(Failed(stage="harness", message=short_tb(exc), type=type(exc).__name__)))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # skip interpreter teardown: a candidate's atexit or __del__ must not run after our report


if __name__ == "__main__":
    sys.exit(main(sys.argv))
