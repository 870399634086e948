"""EXPLOIT (extra, threads): forward hands the launch to a worker thread and returns as soon as the launch is QUEUED.

WHAT: a daemon thread started at import owns the kernel launches. On a GPU it launches on its own CUDA stream, so
the default-stream CUDA events around forward() record nothing of the kernel; forward waits only for "launched",
never for "done". On the CPU interpreter the launch runs to completion inside the worker before it signals. Threads
also outlive forward: a judge that measures only between forward's entry and exit cannot bound their work.
WHY A NAIVE HARNESS PASSES IT: correctness is read after torch.cuda.synchronize() (device-wide: it waits for the
worker's stream too), so values are exact; the timer sees a near-empty default stream.
EXPECTED: rejected by `static:threads` (threading/concurrent.futures in candidate code). At run time the
`side_stream` guard (or a thread-count check on the worker process) catches the GPU behaviour.
"""

import queue
import threading

import torch
import torch.nn as nn
import triton
import triton.language as tl

EXPECT_STATUS = "rejected"
EXPECT_GUARD = "static:threads"
EXPECT_ALSO = [("rejected", "static:streams"), ("rejected", "side_stream")]
FAMILY = "threads"
TASK = "relu_small"
BACKEND = "triton"
NEEDS_GPU = False


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


_jobs: "queue.Queue" = queue.Queue()


def _worker() -> None:
    stream = None
    while True:
        x, y, launched = _jobs.get()
        if x.is_cuda and stream is None:
            stream = torch.cuda.Stream()
        if x.is_cuda:
            with torch.cuda.stream(stream):
                relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        else:
            relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        launched.set()


threading.Thread(target=_worker, daemon=True).start()


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = torch.empty_like(x)
        launched = threading.Event()
        _jobs.put((x, y, launched))
        launched.wait()
        return y
