"""The frontier map: a heat-map of Coder success over API pairs (PNG) and a table of the hardest APIs."""

from __future__ import annotations

import os
from pathlib import Path

from kernelzero.curriculum.frontier import Rate, hardest_apis


def frontier_heatmap(pairs: dict[tuple[str, str], Rate], path: str | os.PathLike, *, max_apis: int = 30,
                     title: str = "Coder success over API pairs") -> Path:  # fmt: skip
    """Write a symmetric APIs x APIs heat-map of pooled success (blank = no task holds the pair). At most
    `max_apis` APIs (the most sampled) so the labels stay readable."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    weight: dict[str, int] = {}
    for (a, b), r in pairs.items():
        weight[a] = weight.get(a, 0) + r.samples
        weight[b] = weight.get(b, 0) + r.samples
    apis = sorted(sorted(weight, key=lambda a: -weight[a])[:max_apis])
    pos = {a: i for i, a in enumerate(apis)}
    grid = np.full((len(apis), len(apis)), np.nan)
    for (a, b), r in pairs.items():
        if a in pos and b in pos and r.samples:
            grid[pos[a], pos[b]] = grid[pos[b], pos[a]] = r.rate
    size = max(4.0, 0.35 * len(apis) + 2)
    fig, ax = plt.subplots(figsize=(size + 1, size))
    im = ax.imshow(np.ma.masked_invalid(grid), vmin=0.0, vmax=1.0, cmap="RdYlGn")
    ax.set_xticks(range(len(apis)), apis, rotation=90, fontsize=7)
    ax.set_yticks(range(len(apis)), apis, fontsize=7)
    ax.set_title(title)
    fig.colorbar(im, ax=ax, label="success rate (correct / samples)")
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


def hardest_table(rates: dict[str, Rate], n: int = 10) -> str:
    """A plain-text table of the n hardest APIs: API, success rate, samples, tasks."""
    rows = hardest_apis(rates, n)
    width = max([len("api"), *(len(a) for a, _ in rows)])
    lines = [f"{'api':<{width}}  success  samples  tasks"]
    lines += [f"{a:<{width}}  {r.rate:7.2f}  {r.samples:7d}  {r.tasks:5d}" for a, r in rows]
    return "\n".join(lines)
