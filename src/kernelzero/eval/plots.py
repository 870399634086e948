"""The eval report's figures: speedup distribution, per-task outcome grid, pass@k by turn (matplotlib, Agg)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kernelzero.eval.evaluate import MISSING_GUARD, EvalRecord

# One colour per outcome, greens for good, reds for broken, grey for not the candidate's doing.
STATUS_COLORS = {
    "ok": "#2ca02c",
    "incorrect": "#ff7f0e",
    "runtime_error": "#d62728",
    "compile_error": "#8c564b",
    "format_error": "#9467bd",
    "timeout": "#e377c2",
    "crashed": "#7f0000",
    "rejected": "#000000",
    "infra_error": "#bbbbbb",
    "missing": "#ffffff",
}
PLOTS = ("speedups.png", "outcomes.png", "pass_by_turn.png")


def write_plots(out_dir: Path, records: Sequence[EvalRecord], outcomes: Sequence[Any], summary: dict) -> list[Path]:
    """Draw the figures that have something to show; return their paths. An untimed run (CPU) has no speedups, so
    it gets no speedups.png (an empty frame only said so in a picture; the report says it in words)."""
    import matplotlib

    matplotlib.use("Agg")
    out = Path(out_dir)
    paths = []
    series = {b: [o.best[b][0] for o in outcomes if o.best.get(b)] for b in ("eager", "compile")}
    if any(series.values()):
        _speedups(out / PLOTS[0], series)
        paths.append(out / PLOTS[0])
    else:
        (out / PLOTS[0]).unlink(missing_ok=True)  # drawn by an earlier run of the same directory: no longer true
    _outcome_grid(out / PLOTS[1], records)
    _pass_by_turn(out / PLOTS[2], summary)
    return [*paths, out / PLOTS[1], out / PLOTS[2]]


def _speedups(path: Path, series: dict[str, list[float]]) -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    lo = min(min(v) for v in series.values() if v)
    hi = max(max(v) for v in series.values() if v)
    lo, hi = min(lo, 0.5), max(hi, 2.0)
    bins = [lo * (hi / lo) ** (i / 30) for i in range(31)]
    for b, vals in series.items():
        if vals:
            ax.hist(vals, bins=bins, alpha=0.6, label=f"vs {b} (n={len(vals)})")
    ax.set_xscale("log")
    ax.axvline(1.0, color="k", lw=1, ls="--")
    ax.set_xlabel("speedup of each task's fastest correct attempt (log scale)")
    ax.set_ylabel("tasks")
    ax.legend()
    ax.set_title("Speedup distribution")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _outcome_grid(path: Path, records: Sequence[EvalRecord]) -> None:
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    tasks = list(dict.fromkeys(r.task for r in records))
    cols = sorted({(r.turn, r.sample) for r in records})
    names = list(STATUS_COLORS)
    grid = [[math.nan] * len(cols) for _ in tasks]
    ti, ci = {t: i for i, t in enumerate(tasks)}, {c: i for i, c in enumerate(cols)}
    for r in records:
        status = "missing" if r.verdict.guard == MISSING_GUARD else r.verdict.status
        grid[ti[r.task]][ci[(r.turn, r.sample)]] = names.index(status)
    fig, ax = plt.subplots(figsize=(max(5, 0.35 * len(cols) + 3), max(2.5, 0.3 * len(tasks) + 1.5)))
    ax.imshow(
        grid,
        cmap=ListedColormap(list(STATUS_COLORS.values())),
        vmin=-0.5,
        vmax=len(names) - 0.5,
        aspect="auto",
        interpolation="nearest",
    )
    ax.set_yticks(range(len(tasks)), tasks, fontsize=7)
    ax.set_xticks(range(len(cols)), [f"t{t}s{s}" for t, s in cols], fontsize=7, rotation=90)
    ax.set_xlabel("turn, sample")
    seen = sorted({int(v) for row in grid for v in row if not math.isnan(v)})
    ax.legend(
        handles=[Patch(facecolor=STATUS_COLORS[names[i]], edgecolor="k", label=names[i]) for i in seen],
        bbox_to_anchor=(1.01, 1),
        loc="upper left",
        fontsize=7,
    )
    ax.set_title("Outcome of every attempt")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _pass_by_turn(path: Path, summary: dict) -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    turns = list(range(1, summary["turns"] + 1))
    for label, vals in pass_series(summary):
        ax.plot(turns, [100 * v for v in vals], marker="o", label=label)
    ax.set_xticks(turns)
    ax.set_xlabel("turn")
    ax.set_ylabel("pass@k (%)")
    ax.set_ylim(-2, 102)
    ax.legend(fontsize=7)
    ax.set_title("pass@k by refinement turn")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def pass_series(summary: dict) -> list[tuple[str, list[float]]]:
    """The pass@k-by-turn lines to draw, each once: a level row is left out when it is the only level (the "all"
    row is then the same tasks), and series with equal values share one line and one label ("pass@1 = pass@2").
    Drawn one over another, equal series looked like one line with a legend of several."""
    rows = summary["rows"]
    if len(rows) == 2 and rows[-1]["label"] == "all":
        rows = rows[-1:]
    merged: dict[tuple[float, ...], list[str]] = {}
    for row in rows:
        for k, vals in row["pass_by_turn"].items():
            if vals is not None:
                merged.setdefault(tuple(vals), []).append(f"{row['label']} pass@{k}")
    return [(" = ".join(labels), list(vals)) for vals, labels in merged.items()]
