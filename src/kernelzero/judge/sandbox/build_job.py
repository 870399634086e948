"""The build farm's jobs in the worker: `build` (import a CUDA candidate on CPU so its extensions build) and
`probe_headers` (does this sandbox's compiler take the farm's precompiled headers). The parent's side is
`judge.build.farm.BuildFarm`; the messages are `messages.PROTOCOL["build"]` and `["probe_headers"]`.
"""

from __future__ import annotations

from pathlib import Path

from kernelzero.judge.build.farm import install_load_inline_shim
from kernelzero.judge.build.headers import probe_headers
from kernelzero.judge.sandbox.harness import Bound, StageError, load_module, short_tb
from kernelzero.judge.sandbox.messages import Prebuilt, Probed, Unbuilt, wire
from kernelzero.judge.sandbox.process import Channel


def job_build(job: dict, chan: Channel, torch, bound: Bound) -> None:
    """Import the candidate on CPU so its load_inline calls build into `build_dir` (see judge/build/farm.py).
    Only a failed load_inline build is the candidate's compile error; any other failure here (e.g. CUDA touched
    at import) says only that this candidate must be built where it runs: `unbuilt`, and the GPU worker builds."""
    state = install_load_inline_shim(job)
    try:
        load_module(job["candidate_path"], "kz_candidate")
    except Exception as exc:  # the import failed: a compile error if a build failed, else "build it on the GPU"
        if state["compile_error"] is not None:
            raise StageError("compile", RuntimeError(state["compile_error"])) from exc
        if not state["calls"]:
            chan.send(wire(Unbuilt(message=short_tb(exc))))
            return
    # what failed to build is retried in the GPU worker
    chan.send(wire(Prebuilt(calls=state["calls"], modes=state["modes"])))


def job_probe_headers(job: dict, chan: Channel, torch, bound: Bound) -> None:
    """Does this sandbox's host compiler take the farm's precompiled headers? No candidate code runs here."""
    chan.send(wire(Probed(headers=probe_headers(job["headers"], job["with_cuda"], Path(job["scratch"])))))
