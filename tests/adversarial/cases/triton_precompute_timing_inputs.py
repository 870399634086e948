"""EXPLOIT (family 4b, precomputing the TIMING inputs at import): regenerates the harness's timing inputs while it is
being imported (untimed), runs the honest Triton kernel on them there, and answers timed calls from that table.

WHAT: the timing inputs are predictable from inside the candidate's process. KernelBench times on get_inputs()
drawn right after torch.manual_seed(42). The kernelzero worker draws them from `timing_seeds` that sit in its job
dict (reachable through gc) from the moment the candidate is imported, with the task module in sys.modules. The case
finds the task's get_inputs and the seeds, draws the same tensors the same way, computes their outputs with the
honest kernel at import, and restores the RNG state. In forward, the first sight of an input buffer is compared
with the table (torch.equal); the buffer is then remembered by (data_ptr, _version, shape), so later calls on it
return the stored output with no launch and no device sync. Any other input is computed honestly.
WHY A NAIVE HARNESS PASSES IT: every output it returns is exact (computed by the honest kernel), so no check of
values fails, including checks of timed calls' outputs; timed calls do no work.
EXPECTED: rejected by `static:harness_import`: the case looks up the worker's task module by its name (`kz_task`),
which the static rules treat as reaching into the harness. Behind that rule stands the design fix: timing seeds
reach the candidate only with the `time` command, after import and the correctness trials, so even a variant that
found the task module another way would build its table from the wrong inputs and run the honest path. A
variant that cached by buffer at timing time would return right outputs with no launch; the checks of timed
outputs (`replay`) cannot see that, which is why `roofline` and launch counting on timed calls stay on the
list of guards to add (see the judge's known gaps).
"""

import gc
import sys
import types

import torch
import torch.nn as nn
import triton
import triton.language as tl

EXPECT_STATUS = "rejected"
EXPECT_GUARD = "static:harness_import"
EXPECT_ALSO = [("rejected", "no_custom_kernel"), ("rejected", "roofline"), ("rejected", "replay")]
FAMILY = "caching"
TASK = "relu_small"
BACKEND = "triton"
NEEDS_GPU = True
NAIVE_FAST = True  # the naive harness's reported runtime is far below one honest launch


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)


def _relu(x: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    y = torch.empty_like(x)
    relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
    return y


def _is_task_get_inputs(o) -> bool:  # the task's own: no arguments, defined next to a `Model`
    return (
        isinstance(o, types.FunctionType)
        and o.__name__ == "get_inputs"
        and o.__code__.co_argcount == 0
        and "Model" in o.__globals__
    )


def _predicted_timing_inputs() -> list[torch.Tensor]:
    device = "cuda" if torch.cuda.is_available() else "cpu"
    job = next((o for o in gc.get_objects() if isinstance(o, dict) and "timing_seeds" in o and "task_path" in o), None)
    task = sys.modules.get("kz_task")
    if job is not None and task is not None:  # the kernelzero worker: its seeds, its way of drawing
        drawn = []
        for seed in job["timing_seeds"]:
            torch.manual_seed(seed)
            with torch.device(job.get("device", device)):
                drawn += [x for x in task.get_inputs() if isinstance(x, torch.Tensor)]
        return drawn
    get_inputs = next((o for o in gc.get_objects() if _is_task_get_inputs(o)), None)
    if get_inputs is None:
        return []
    torch.manual_seed(42)  # KernelBench: set_seed(seed_num) right before the timing inputs
    return [x.to(device) for x in get_inputs() if isinstance(x, torch.Tensor)]


_rng = torch.get_rng_state()
_TABLE = [(x, _relu(x)) for x in _predicted_timing_inputs()]  # (input, output), computed now, outside any timer
torch.set_rng_state(_rng)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.known = {}  # (data_ptr, _version, shape) -> output

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        key = (x.data_ptr(), x._version, tuple(x.shape))
        hit = self.known.get(key)
        if hit is not None:
            return hit
        for inp, out in _TABLE:
            if inp.shape == x.shape and inp.device == x.device and torch.equal(inp, x):
                self.known[key] = out
                return out
        return _relu(x)
