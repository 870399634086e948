"""Where a launch-bound figure moves: the judge's own timing protocol (`timing.time_model`) on small eager tasks, run
again and again under conditions that separate the causes.

For each of a few small tasks of the realistic mix (64 x 256, a few microseconds of GPU work; one or two kernels):

- `repeat`: the same process, the same inputs, the protocol run 5 times back to back;
- `realloc`: the same process, new inputs (fresh allocations) each of 5 times; the old ones are freed first, so the
  caching allocator hands back the same blocks (the same physical memory);
- `placement`: the same process, the same input values copied each of 5 times into a fresh 64 MB block (its own
  cudaMalloc, kept alive) at a random 4 KB-aligned offset: a spread here as large as `process`'s points at where
  the inputs lie (DRAM pages, L2 slices), which one process never varies. The protocol copies small inputs into its
  own arena anyway, so this moves the process's other allocations, not the timed inputs: on an H100 (6fa72e6) the
  five figures alternated 7.4, 6.5, 7.4, 6.5, 7.4 us while `repeat` held at 7.4 within 0.8%;
- `process`: 5 freshly spawned processes, each timing once (what two fresh judgings do);
- `no_cover`, `no_flush`: the same process and inputs, without the launch cover or without the L2 flush;
- `flush_placement`: the same process and inputs, the L2 flush buffer each time at a random offset of a block of its
  own: where the one large buffer a timing writes lies is drawn once per process too;
- `zero_flush`, `process_zero_flush`: the flush writing zeros into its buffer (`TimingConfig.flush_reads` off, as
  every figure before 6fa72e6) instead of reading it, in this process and in each fresh one (after its
  `process_later` timing);
- `long_cover`, `process_short_cover`: the launch cover held at 250 us or more in this process, and at 50 us or less
  in each fresh one. A warm process sizes its cover from fast enqueues (about 50 us on an H100), a fresh one from its
  slow first calls (200-250 us), and on an H100 (6fa72e6) the eager `(x - y).abs()` took 7.4 us in this process and
  6.1-6.5 us in every fresh one: if the cover's length is the cause, these two swap the figures;
- `temp_placement`, `out_placement` (absdiff only): the same process and inputs, `(x - y).abs()` computed with its
  intermediate `x - y` (or its result) written into a buffer at a random 4 KB-aligned offset of a new block of its
  own, once per timing. Within one timing the caching allocator hands the intermediate the same block every call
  (it is freed before the next call needs one), while the placed inputs rotate over 8 copies: a spread here as
  large as `process`'s points at where the intermediate lies, the one address no placement of inputs varies;
- `graph`: the same process and inputs, the call captured once in a CUDA graph and replayed (one launch per call,
  whatever the module launches; the inputs not placed, since the graphs hold their addresses);
- `empty_cache`: the same process and inputs, the caching allocator's free blocks given back to the driver before
  each timing (the process's memory as a fresh one holds it, less its live tensors);
- `process_later`: in each of the `process` processes, the protocol again 2 s after its first run: a process whose
  two figures agree while processes differ points at the process (its context, where its memory lies), two figures
  that differ at the clock;
- `process_no_flush`, `process_no_cover`, `process_graph`: in each fresh process, after the above, without the L2
  flush, without the launch cover, and replayed from CUDA graphs: which way of timing gives the same figure in
  every process (the candidates for the judge's protocol where eager timing does not);
- `process_held`, `process_launched`: in each fresh process, last, the protocol again once the process holds 2 GB
  more (in 64 MB blocks, as the long-lived process's conditions leave it) and again after 100,000 more launches of a
  one-element kernel: does the memory a process has mapped, or the launches it has made, move it to the long-lived
  process's figure?
- `pool` / `no_pool`, `process_pool` / `process_no_pool`, `process_held_pool` / `process_held_no_pool`: the flush
  buffer, the placed copies and everything the timed calls allocate from one private pool made for the timing
  (`TimingConfig.own_pool`, on since it was added back) or from the process's, in this process, in each fresh one
  and in each once it holds the 2 GB: if the slow mode is a timed call's pages lying far from the flush buffer's
  (page walks once the flush has filled the GPU's TLBs with its own), the pool brings every figure to the fresh
  processes' one, and without it the held memory takes them to the long-lived process's. The conditions above run
  at the default (the pool).

Measured so far (H100s; `bench/README.md`): the eager `(x - y).abs()` reads 7.1-7.4 us in the long-lived process and
6.1-6.8 us in fresh ones, and the 8 placed copies of one timing agree within about 3%: the mode belongs to the
process, not to where the inputs lie. It does not move with the cover's length (250 us floor, 50 us ceiling), the
flush's kind (read or write) or place, the intermediate's or the output's place, a private memory pool per timing
for the copies and everything the calls allocate with the flush buffer left outside it (`torch.cuda.MemPool`), or
copies 66 MB apart (528 MB arena).

Per condition the medians (us) and their spread ((max - min) / median). A cause shows as the condition whose spread
is large while `repeat`'s is small. Each timing also keeps the launch cover's audit (`timing._cover_audit`: how long
the covers ran on the GPU against the host's time to enqueue each call, and how many calls the host may have
outrun) and the SM clock after it: a cover sized in cycles at one clock runs shorter at a higher one. Nothing is
judged: only trusted eager modules run here.

    python bench/timing_probe.py --out probe.json     # an H100: about 2.5 minutes
    python bench/timing_probe.py --ops absdiff --processes 3   # about 40 s
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

OPS = ("absdiff", "mul", "softmax", "sigmoid")
SETS = 3  # input sets rotated, as the judge's timing_sets


def _module(op: str):
    from throughput_cases.mix import _task

    ns: dict = {}
    exec(compile(_task(op, small=True), f"<task {op}>", "exec"), ns)  # our own task text, no candidate code
    return ns["Model"]().cuda(), ns["get_inputs"]


def _time(op: str, model, inputs: list, torch_=None, **cfg) -> dict:
    import torch

    from kernelzero.judge.sandbox.harness import Bound
    from kernelzero.judge.timing import time_model

    out = time_model(torch_ or torch, Bound(torch), model, inputs, cfg)
    ev = out["events"]
    return {"median_us": round(ev["median_ms"] * 1e3, 3), "iqr_us": round(ev["iqr_ms"] * 1e3, 3),
            "copies_us": [round(m * 1e3, 3) for m in out["placements"] or []], "cover_us": out["cover_us"],
            "cover_audit": out["cover_audit"], "sm_clock_mhz": _sm_clock()}  # fmt: skip


def _sm_clock() -> int | None:
    """The GPU's SM clock right after a timing (nvidia-smi), or None: a cover sized at one clock runs shorter at a
    higher one (the sleep counts cycles)."""
    import subprocess

    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm", "--format=csv,noheader,nounits", "-i", "0"],
                             capture_output=True, text=True, timeout=10, check=True).stdout  # fmt: skip
        return int(out.split()[0])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None


def _fresh_inputs(get_inputs) -> list:
    return [[x.cuda() for x in get_inputs()] for _ in range(SETS)]


def _graphed(model, inputs: list):
    """`model` over each input set, captured once per set in a CUDA graph: the call replays the set's graph."""
    import torch

    graphs = {}
    for args in inputs:
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream), torch.no_grad():
            model(*args)  # warm-up on a side stream, as torch.cuda.graphs asks before a capture
        torch.cuda.current_stream().wait_stream(stream)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g), torch.no_grad():
            out = model(*args)
        graphs[id(args[0])] = (g, out)

    def replay(*args):
        g, out = graphs[id(args[0])]
        g.replay()
        return out

    return replay


def _placements(op: str, model, inputs: list, times: int) -> list[dict]:
    """`times` timings, each on copies of `inputs` carved from a new 64 MB block at a random offset."""
    import random

    import torch

    held, rows = [], []
    for _ in range(times):
        block = torch.empty(16 * 2**20, dtype=torch.float32, device="cuda")  # a segment of its own
        held.append(block)
        offset, sets = random.randrange(0, 2**20, 1024), []  # in floats: 4 KB steps within the first 4 MB
        for args in inputs:
            placed = []
            for x in args:
                view = block[offset : offset + x.numel()].view(x.shape)
                view.copy_(x)
                placed.append(view)
                offset += (x.numel() + 1023) // 1024 * 1024
            sets.append(placed)
        rows.append(_time(op, model, sets))
    return rows


def _elsewhere(torch, n: int, held: list, dtype=None, device="cuda"):
    """`n` elements at a random 4 KB-aligned offset (of float32) of a new block of their own, 64 MB larger than they
    need to slide over; the block is kept alive in `held`, so the next one lies elsewhere."""
    import random

    block = torch.empty(n + 2**24, dtype=dtype or torch.float32, device=device)
    held.append(block)
    offset = random.randrange(0, 2**24, 1024)
    return block[offset : offset + n]


class _FlushElsewhere:
    """torch for `time_model`, but the L2 flush buffer it allocates lies at a random 4 KB-aligned offset of a new
    block of its own (kept alive): does where the flush buffer lies move the figure, as a fresh process does?"""

    def __init__(self, torch, held: list):
        self._torch, self._held = torch, held

    def __getattr__(self, name):
        return getattr(self._torch, name)

    def empty(self, n, dtype=None, device=None):
        return _elsewhere(self._torch, n, self._held, dtype, device)


class _Placed:
    """`(x - y).abs()` with the intermediate (`temp`) or the result (`out`) written into a view at a random 4 KB-aligned
    offset of a new block (`_elsewhere`): the same two kernels as the eager module, one address moved."""

    def __init__(self, which: str, shape, held: list):
        import torch

        self.which, self.buf = which, _elsewhere(torch, shape.numel(), held).view(shape)

    def __call__(self, x, y):
        import torch

        if self.which == "temp":
            return torch.sub(x, y, out=self.buf).abs()
        return torch.abs(x - y, out=self.buf)


def in_process(op: str, times: int = 5) -> dict:
    import torch

    model, get_inputs = _module(op)
    inputs = _fresh_inputs(get_inputs)
    _time(op, model, inputs)  # warm the process: first-call costs of every kind
    held: list = []  # the blocks of `flush_placement` and `*_placement`, alive to the end: each timing's lies elsewhere
    rows = {
        "placement": _placements(op, model, inputs, times),
        "flush_placement": [_time(op, model, inputs, torch_=_FlushElsewhere(torch, held)) for _ in range(times)],
        "zero_flush": [_time(op, model, inputs, flush_reads=False) for _ in range(times)],
        "long_cover": [_time(op, model, inputs, cover_min_us=250.0) for _ in range(times)],
        "repeat": [_time(op, model, inputs) for _ in range(times)],
        "realloc": [_time(op, model, _fresh_inputs(get_inputs)) for _ in range(times)],
        "no_cover": [_time(op, model, inputs, launch_cover=False) for _ in range(times)],
        "no_flush": [_time(op, model, inputs, flush_l2=False) for _ in range(times)],
        # one copy: the graphs were captured on `inputs` themselves, not on the timing's placed copies of them
        "graph": [_time(op, _graphed(model, inputs), inputs, placements=1) for _ in range(times)],
        "empty_cache": [_emptied(op, model, inputs) for _ in range(times)],
        "pool": [_time(op, model, inputs, own_pool=True) for _ in range(times)],
        "no_pool": [_time(op, model, inputs, own_pool=False) for _ in range(times)],
    }
    if op == "absdiff":
        shape = inputs[0][0].shape
        for which in ("temp", "out"):
            rows[f"{which}_placement"] = [_time(op, _Placed(which, shape, held), inputs) for _ in range(times)]
    return rows


def _emptied(op: str, model, inputs: list) -> dict:
    import torch

    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    return _time(op, model, inputs)


PROCESS_ROWS = ("process", "process_later", "process_zero_flush", "process_short_cover", "process_no_flush",
                "process_no_cover", "process_graph", "process_pool", "process_no_pool", "process_held",
                "process_held_pool", "process_held_no_pool", "process_launched")  # fmt: skip


def one_process(op: str) -> tuple[dict, ...]:
    """One fresh process's timings, in the order of PROCESS_ROWS (from `process_held` on, holding 2 GB more)."""
    import time

    import torch

    model, get_inputs = _module(op)
    inputs = _fresh_inputs(get_inputs)
    first = _time(op, model, inputs)
    time.sleep(2.0)
    rows = [
        first,
        _time(op, model, inputs),
        _time(op, model, inputs, flush_reads=False),
        _time(op, model, inputs, cover_max_us=50.0),
        _time(op, model, inputs, flush_l2=False),
        _time(op, model, inputs, launch_cover=False),
        _time(op, _graphed(model, inputs), inputs, placements=1),
        _time(op, model, inputs, own_pool=True),
        _time(op, model, inputs, own_pool=False),
    ]
    held = [torch.empty(2**24, dtype=torch.float32, device="cuda") for _ in range(32)]  # 32 x 64 MB
    rows += [_time(op, model, inputs), *(_time(op, model, inputs, own_pool=on) for on in (True, False))]
    one = torch.zeros(1, device="cuda")
    for _ in range(100_000):
        one.add_(1.0)
    torch.cuda.synchronize()
    rows.append(_time(op, model, inputs))
    del held
    return tuple(rows)


def spread(rows: list[dict]) -> float:
    m = [r["median_us"] for r in rows]
    return round((max(m) - min(m)) / statistics.median(m), 4)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--processes", type=int, default=5, help="fresh processes per task (default 5)")
    ap.add_argument("--ops", nargs="+", choices=OPS, default=list(OPS), help="the tasks to probe (default all)")
    ap.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    args = ap.parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        print("timing_probe: no CUDA GPU visible", file=sys.stderr)
        return 2
    result = {}
    spawn = multiprocessing.get_context("spawn")
    for op in args.ops:
        rows = in_process(op)
        with spawn.Pool(1, maxtasksperchild=1) as pool:  # a new process for each timing
            timings = [pool.apply(one_process, (op,)) for _ in range(args.processes)]
        rows.update(zip(PROCESS_ROWS, map(list, zip(*timings))))
        result[op] = rows
        print(f"{op:<8} " + "  ".join(f"{k} {spread(v):6.1%} [{', '.join(str(r['median_us']) for r in v)}]"
                                      for k, v in rows.items()), flush=True)  # fmt: skip
        audits = [(k, r["cover_audit"], r["sm_clock_mhz"]) for k, v in rows.items() for r in v if r["cover_audit"]]
        print(f"{'':<8} covers: least {min(a['cover_min_us'] for _, a, _ in audits)} us, host at most "
              f"{max(a['host_max_us'] for _, a, _ in audits)} us, calls maybe uncovered "
              f"{sum(a['uncovered'] for _, a, _ in audits)}; SM clocks {sorted({c for *_, c in audits if c})} MHz",
              flush=True)  # fmt: skip
    for op, rows in result.items():  # the decision: one spread over every process and state, with and without
        for name, keys in (("pool", ("pool", "process_pool", "process_held_pool")),
                           ("no pool", ("no_pool", "process_no_pool", "process_held_no_pool"))):  # fmt: skip
            every = [r["median_us"] for k in keys for r in rows[k]]
            print(f"{op:<8} {name:<8} long-lived, fresh and fresh holding 2 GB together: spread "
                  f"{(max(every) - min(every)) / statistics.median(every):6.1%} [{min(every)}-{max(every)} us]",
                  flush=True)  # fmt: skip
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
