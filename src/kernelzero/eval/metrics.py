"""Benchmark metrics as pure functions: unbiased pass@k, fast_p, geometric-mean speedup, per-level tables.

Definitions follow the sources everyone compares against:
- pass@k is the Codex paper's unbiased estimator (Chen et al. 2021), `1 - C(n-c, k) / C(n, k)`, computed as a
  product so large n never overflows;
- fast_p and the geometric mean are KernelBench's (`src/kernelbench/score.py`): fast_p is the share of ALL tasks
  whose solution is correct AND has speedup strictly above p (an incorrect or missing solution counts as a miss;
  `n` may exceed the records given, for tasks with no record at all), and the geometric mean is over correct
  solutions only, 0.0 when none is correct.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

DEFAULT_PS = (0.0, 1.0, 1.5, 2.0)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from n samples of which c are correct: 1 - C(n-c, k) / C(n, k)."""
    if not 0 <= c <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n (got c={c}, n={n})")
    if not 1 <= k <= n:
        raise ValueError(f"pass@k needs 1 <= k <= n (got k={k}, n={n}); draw at least k samples per task")
    if n - c < k:
        return 1.0  # every k-subset holds a correct sample
    # C(n-c, k) / C(n, k) = prod_{i=n-c+1}^{n} (1 - k / i)
    miss = 1.0
    for i in range(n - c + 1, n + 1):
        miss *= 1.0 - k / i
    return 1.0 - miss


def mean_pass_at_k(results: Iterable[tuple[int, int]], k: int) -> float:
    """pass@k averaged over tasks, from (n, c) per task; a one-line ValueError if there are no tasks."""
    scores = [pass_at_k(n, c, k) for n, c in results]
    if not scores:
        raise ValueError("pass@k over no tasks is undefined")
    return sum(scores) / len(scores)


def _check_lengths(correct: Sequence, speedups: Sequence) -> None:
    if len(correct) != len(speedups):
        raise ValueError(f"correct and speedups differ in length ({len(correct)} vs {len(speedups)})")


def _speedup(s: float | None, i: int) -> float:
    if s is None or not math.isfinite(s) or s <= 0:
        raise ValueError(f"record {i}: a correct solution needs a finite speedup > 0, got {s!r}")
    return float(s)


def fast_p(correct: Sequence[bool], speedups: Sequence[float | None], p: float, n: int | None = None) -> float:
    """Share of all `n` tasks (default: the records given) solved correctly with speedup strictly above p.

    KernelBench's fastp: `sum(correct & (speedup > p)) / n`, 0.0 when n is 0. Speedups of incorrect solutions
    are ignored (they may be None).
    """
    _check_lengths(correct, speedups)
    total = len(correct) if n is None else n
    if total < len(correct):
        raise ValueError(f"n={total} is smaller than the {len(correct)} records given")
    if total == 0:
        return 0.0
    hits = sum(1 for i, (ok, s) in enumerate(zip(correct, speedups)) if ok and _speedup(s, i) > p)
    return hits / total


def geomean_speedup(correct: Sequence[bool], speedups: Sequence[float | None]) -> float:
    """Geometric mean of the speedups of correct solutions; 0.0 when none is correct (KernelBench's convention)."""
    _check_lengths(correct, speedups)
    logs = [math.log(_speedup(s, i)) for i, (ok, s) in enumerate(zip(correct, speedups)) if ok]
    return math.exp(sum(logs) / len(logs)) if logs else 0.0


@dataclass(frozen=True)
class LevelRow:
    """One row of a per-level table. `label`: "level N", "no level" (records without one), or "all" (every record)."""

    label: str
    level: int | None
    tasks: int
    correct: int
    accuracy: float  # correct / tasks
    geomean_speedup: float  # over correct solutions; 0.0 when none
    fast: dict[float, float] = field(default_factory=dict)  # p -> fast_p


def _get(record: Any, key: str) -> Any:
    if isinstance(record, Mapping):
        if key not in record:
            raise ValueError(f"record has no {key!r} field: {dict(record)!r}"[:200])
        return record[key]
    if not hasattr(record, key):
        raise ValueError(f"record {type(record).__name__} has no {key!r} attribute")
    return getattr(record, key)


def level_table(records: Iterable[Any], ps: Sequence[float] = DEFAULT_PS, total: bool = True) -> list[LevelRow]:
    """Rows per level (ascending; level None sorts last) and, with `total`, a final row over all records.

    Each record is a mapping or an object with `level`, `correct` and `speedup` (speedup may be None when the
    solution is not correct). One record per task: fast_p's denominator is the number of records in the row.
    """
    rows_in: list[tuple[int | None, bool, float | None]] = [
        (_get(r, "level"), bool(_get(r, "correct")), _get(r, "speedup")) for r in records
    ]
    levels = sorted({lv for lv, _, _ in rows_in}, key=lambda lv: (lv is None, lv or 0))

    def row(label: str, level: int | None, group: list[tuple[int | None, bool, float | None]]) -> LevelRow:
        correct = [ok for _, ok, _ in group]
        speedups = [s for _, _, s in group]
        return LevelRow(
            label=label,
            level=level,
            tasks=len(group),
            correct=sum(correct),
            accuracy=sum(correct) / len(group) if group else 0.0,
            geomean_speedup=geomean_speedup(correct, speedups),
            fast={p: fast_p(correct, speedups, p) for p in ps},
        )

    out = [row("no level" if lv is None else f"level {lv}", lv, [r for r in rows_in if r[0] == lv]) for lv in levels]
    if total:
        out.append(row("all", None, rows_in))
    return out
