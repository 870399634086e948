"""GPU timing of one module: CUDA events per call, L2 flushed between calls, rotated inputs, device-wide sync.

Runs inside a worker. The same function times the reference (eager and `torch.compile`) and the candidate, so the
two figures of a speedup are measured the same way. Each call is bracketed by a device-wide synchronize, and its
wall time is recorded beside its event time: work hidden on a side stream escapes the events but not the wall
clock, which is what the `side_stream` guard compares.
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass


@dataclass
class TimingConfig:
    warmup: int = 5
    min_calls: int = 20
    max_calls: int = 200
    budget_s: float = 2.0  # aim for this much timed GPU work per module, within [min_calls, max_calls]
    flush_l2: bool = True
    l2_flush_bytes: int = 256 * 2**20  # > 2x the H200's 60 MB L2


def summarize(times_ms: list[float]) -> dict:
    """Median, inter-quartile range and min of a list of per-call times (ms)."""
    ordered = sorted(times_ms)
    if len(ordered) >= 4:
        q = statistics.quantiles(ordered, n=4)
        iqr = q[2] - q[0]
    else:
        iqr = ordered[-1] - ordered[0]
    return {"median_ms": statistics.median(ordered), "iqr_ms": iqr, "min_ms": ordered[0], "n": len(ordered)}


def time_model(torch, bound, model, input_sets: list[list], cfg: dict | TimingConfig) -> dict:
    """Time `model(*inputs)` over rotated `input_sets`. Returns summaries of event and wall times (ms)."""
    cfg = cfg if isinstance(cfg, TimingConfig) else TimingConfig(**cfg)
    flush = torch.empty(cfg.l2_flush_bytes // 4, dtype=torch.float32, device="cuda") if cfg.flush_l2 else None
    with torch.no_grad():
        for i in range(cfg.warmup):
            model(*input_sets[i % len(input_sets)])
        bound.synchronize()
        # Estimate one call to size the run.
        start, end = bound.event(enable_timing=True), bound.event(enable_timing=True)
        start.record()
        model(*input_sets[0])
        end.record()
        bound.synchronize()
        est_ms = max(bound.elapsed(start, end), 1e-3)
        n = int(min(cfg.max_calls, max(cfg.min_calls, cfg.budget_s * 1e3 / est_ms)))
        event_ms, wall_ms = [], []
        for i in range(n):
            inputs = input_sets[i % len(input_sets)]
            if flush is not None:
                flush.zero_()
            bound.synchronize()
            start, end = bound.event(enable_timing=True), bound.event(enable_timing=True)
            t0 = bound.perf_counter()
            start.record()
            model(*inputs)
            end.record()
            bound.synchronize()  # device-wide: every stream, so hidden work lands in the wall time
            wall_ms.append((bound.perf_counter() - t0) * 1e3)
            event_ms.append(bound.elapsed(start, end))
    return {"events": summarize(event_ms), "wall": summarize(wall_ms), "config": asdict(cfg)}
