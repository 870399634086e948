"""The eval report: per-level figures from eval records (pass@k, fast_p strict and noise-aware, geomean, statuses).

Every figure is a call into `kernelzero.eval.metrics` on per-task outcomes, so the report and the metrics module cannot
disagree. Definitions (also printed under the tables):
- a *sample* is one refinement chain; it counts as correct by turn t when any of its turns <= t passed. pass@k is
  the unbiased estimator over each task's n chains at the last turn (and per turn, for the pass@k-by-turn figure);
- a task's *solution*, for fast_p and the geometric mean, is its fastest correct attempt over all samples and turns;
- **strict** fast_p is KernelBench's: correct and speedup > p. **noise-aware** fast_p also needs the speedup to clear
  p by more than the timing noise: speedup > p * (1 + IQR_c/median_c + IQR_r/median_r), candidate and reference
  (eager or torch.compile) runtimes. A verdict without timing statistics gets no noise margin;
- untimed runs (CPU, Triton interpreter) report every speedup figure as n/a; pass@k is still computed;
- tasks whose verdicts carry `env["degenerate_task"]` (the judge's canaries) are listed, and the tables are repeated
  without them; tasks with no solution file (`--solutions`) count as not solved and are listed.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelzero.eval import metrics
from kernelzero.eval.evaluate import CONFIG, MISSING_GUARD, VERDICTS, EvalRecord, read_records
from kernelzero.eval.plots import write_plots
from kernelzero.judge.verdict import Timing, Verdict

FAST_PS = (0.0, 1.0, 2.0)
BASELINES = {"eager": ("speedup_eager", "ref_runtime"), "compile": ("speedup_compile", "compile_runtime")}
SUMMARY = "summary.json"
REPORT = "report.md"
FIGURE_TITLES = {"speedups.png": "Speedup distribution", "outcomes.png": "Outcome of every attempt",
                 "pass_by_turn.png": "pass@k by refinement turn"}  # fmt: skip


def degenerate_canary(verdict: Verdict) -> str | None:
    """The canary that flagged the task (the judge puts its name, e.g. "zeros", in `env["degenerate_task"]`); "flagged"
    for a bare True; None when unflagged or when env has any other shape (read defensively)."""
    env = getattr(verdict, "env", None)
    value = env.get("degenerate_task") if isinstance(env, Mapping) else None
    if value is True:
        return "flagged"
    return value if isinstance(value, str) and value else None


def noise(cand: Timing | None, ref: Timing | None) -> float:
    """Combined relative IQR of candidate and reference runtimes; 0.0 when either has no usable statistics."""
    if cand is None or ref is None or not (cand.median_ms > 0 and ref.median_ms > 0):
        return 0.0
    return cand.iqr_ms / cand.median_ms + ref.iqr_ms / ref.median_ms


@dataclass
class TaskOutcome:
    """What one task's records come to. `best[b]` = (speedup, noise-discounted speedup) of its fastest correct
    attempt against baseline b, None when no correct attempt was timed against it."""

    task: str
    level: int | None
    n: int  # samples (chains)
    correct_by_turn: list[int]  # chains correct by turn t, t = 1..T
    best: dict[str, tuple[float, float] | None] = field(default_factory=dict)
    degenerate: str | None = None  # the canary that flagged the task
    missing: bool = False

    @property
    def solved(self) -> bool:
        return self.correct_by_turn[-1] > 0


def task_outcomes(records: Sequence[EvalRecord], turns: int | None = None) -> list[TaskOutcome]:
    """One outcome per task, in first-seen order. `turns` defaults to the largest turn in the records."""
    turns = turns or max((r.turn for r in records), default=1)
    by_task: dict[str, list[EvalRecord]] = {}
    for r in records:
        by_task.setdefault(r.task, []).append(r)
    out = []
    for tid, recs in by_task.items():
        samples = sorted({r.sample for r in recs})
        first_ok = {
            s: min((r.turn for r in recs if r.sample == s and r.verdict.correct), default=None) for s in samples
        }
        by_turn = [sum(1 for t0 in first_ok.values() if t0 is not None and t0 <= t) for t in range(1, turns + 1)]
        best: dict[str, tuple[float, float] | None] = {}
        for b, (attr, ref_attr) in BASELINES.items():
            timed = [
                (s, s / (1 + noise(r.verdict.runtime, getattr(r.verdict, ref_attr))))
                for r in recs
                if r.verdict.correct and _finite(s := getattr(r.verdict, attr))
            ]
            best[b] = max(timed, default=None)
        out.append(
            TaskOutcome(
                task=tid,
                level=recs[0].level,
                n=len(samples),
                correct_by_turn=by_turn,
                best=best,
                degenerate=next((c for r in recs if (c := degenerate_canary(r.verdict))), None),
                missing=any(r.verdict.guard == MISSING_GUARD for r in recs),
            )
        )
    return out


def _finite(s: Any) -> bool:
    return isinstance(s, int | float) and math.isfinite(s) and s > 0


def level_row(label: str, outs: Sequence[TaskOutcome], ks: Sequence[int], timed: dict[str, bool]) -> dict[str, Any]:
    """One table row: pass@k (final turn and per turn), strict and noise-aware fast_p, geomean, per baseline."""
    row: dict[str, Any] = {
        "label": label,
        "tasks": len(outs),
        "solved": sum(o.solved for o in outs),
        "samples": sorted({o.n for o in outs}),
        "pass": {},
        "pass_by_turn": {},
        "speed": {},
    }
    turns = max((len(o.correct_by_turn) for o in outs), default=1)
    for k in ks:
        if outs and all(o.n >= k for o in outs):
            per_turn = [metrics.mean_pass_at_k([(o.n, o.correct_by_turn[t]) for o in outs], k) for t in range(turns)]
            row["pass"][str(k)], row["pass_by_turn"][str(k)] = per_turn[-1], per_turn
        else:
            row["pass"][str(k)], row["pass_by_turn"][str(k)] = None, None
    for b in BASELINES:
        if not timed[b]:
            row["speed"][b] = None
            continue
        # A correct task whose attempts were never timed cannot be called fast: it counts as a miss here.
        correct = [o.best[b] is not None for o in outs]
        strict = [o.best[b][0] if o.best[b] else None for o in outs]
        aware = [o.best[b][1] if o.best[b] else None for o in outs]
        row["speed"][b] = {
            "strict": {str(p): metrics.fast_p(correct, strict, p) for p in FAST_PS},
            "noise_aware": {str(p): metrics.fast_p(correct, aware, p) for p in FAST_PS},
            "geomean": metrics.geomean_speedup(correct, strict),
        }
    return row


def _level_label(level: int | None) -> str:
    return "no level" if level is None else f"level {level}"


def summarize(records: Sequence[EvalRecord], ks: Sequence[int], meta: dict[str, Any] | None = None) -> dict[str, Any]:
    """The JSON-ready summary behind the markdown report and `--compare`."""
    outs = task_outcomes(records)
    timed = {b: any(_finite(getattr(r.verdict, attr)) for r in records) for b, (attr, _) in BASELINES.items()}
    levels = sorted({o.level for o in outs}, key=lambda lv: (lv is None, lv or 0))

    def rows(group: list[TaskOutcome]) -> list[dict[str, Any]]:
        per = [level_row(_level_label(lv), [o for o in group if o.level == lv], ks, timed) for lv in levels]
        return [r for r in per if r["tasks"]] + [level_row("all", group, ks, timed)]

    statuses = []
    for lv in [*levels, "all"]:
        recs = [r for r in records if lv == "all" or r.level == lv]
        counts = Counter("missing" if r.verdict.guard == MISSING_GUARD else r.verdict.status for r in recs)
        guards = Counter(r.verdict.guard or "?" for r in recs if r.verdict.status == "rejected")
        statuses.append(
            {
                "label": "all" if lv == "all" else _level_label(lv),
                "attempts": len(recs),
                "counts": dict(counts),
                "rejected_by_guard": dict(guards),
            }
        )
    degenerate = [f"{o.task} ({o.degenerate})" for o in outs if o.degenerate]
    return {
        "meta": meta or {},
        "ks": list(ks),
        "turns": max((r.turn for r in records), default=1),
        "timed": timed,
        "rows": rows(outs),
        "rows_without_degenerate": rows([o for o in outs if not o.degenerate]) if degenerate else None,
        "statuses": statuses,
        "degenerate": degenerate,
        "missing": [o.task for o in outs if o.missing],
        "unsolved": [o.task for o in outs if not o.solved],
    }


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _table(head: Sequence[str], body: Sequence[Sequence[str]]) -> list[str]:
    return [
        "| " + " | ".join(head) + " |",
        "|" + "|".join("---" for _ in head) + "|",
        *("| " + " | ".join(r) + " |" for r in body),
    ]


def rows_markdown(rows: Sequence[dict[str, Any]], ks: Sequence[int]) -> list[str]:
    """The correctness table, then one speed table per baseline (strict and noise-aware fast_p side by side)."""
    lines = _table(
        ["level", "tasks", "samples/task", "solved", *(f"pass@{k}" for k in ks)],
        [
            [
                r["label"],
                str(r["tasks"]),
                ",".join(map(str, r["samples"])),
                str(r["solved"]),
                *(_pct(r["pass"][str(k)]) for k in ks),
            ]
            for r in rows
        ],
    )
    for b, title in (("eager", "PyTorch eager"), ("compile", "torch.compile")):
        head = ["level"] + [f"fast_{p:g} {kind}" for p in FAST_PS for kind in ("strict", "noise-aware")] + ["geomean"]
        body = []
        for r in rows:
            s = r["speed"][b]
            cells = [_pct(s[kind][str(p)]) if s else "n/a" for p in FAST_PS for kind in ("strict", "noise_aware")]
            body.append([r["label"], *cells, f"{s['geomean']:.2f}x" if s else "n/a"])
        lines += ["", f"Speed vs {title}:", "", *_table(head, body)]
    return lines


def render_markdown(summary: dict[str, Any], figures: Sequence[str] = ()) -> str:
    """The whole report as markdown (what `report.md` holds and the CLI prints). `figures`: image files beside
    the report, shown at its end (report.md has them; the terminal copy leaves them out)."""
    m, ks = summary["meta"], summary["ks"]
    lines = [f"# KernelZero eval: {m.get('model', '?')} on {m.get('tasks', '?')}", ""]
    facts = [f"{k}: {m[k]}" for k in ("backend", "mode", "samples", "turns", "device", "gpu", "date") if m.get(k)]
    lines += [", ".join(facts), ""] if facts else []
    if not any(summary["timed"].values()):
        lines += ["Untimed run (no GPU): every speedup figure is n/a; pass@k is computed.", ""]
    lines += ["## Results (all tasks)", "", *rows_markdown(summary["rows"], ks), ""]
    if summary["rows_without_degenerate"] is not None:
        lines += ["## Results without degenerate tasks", "", *rows_markdown(summary["rows_without_degenerate"], ks), ""]
    if summary["turns"] > 1:
        last = summary["rows"][-1]
        body = [
            [
                str(t + 1),
                *(_pct(last["pass_by_turn"][str(k)][t]) if last["pass_by_turn"][str(k)] else "n/a" for k in ks),
            ]
            for t in range(summary["turns"])
        ]
        lines += [f"## pass@k by turn ({last['label']})", "", *_table(["turn", *(f"pass@{k}" for k in ks)], body), ""]
    kinds = sorted({s for st in summary["statuses"] for s in st["counts"]})
    body = [
        [
            st["label"],
            str(st["attempts"]),
            *(str(st["counts"].get(s, 0)) for s in kinds),
            ", ".join(f"{g}: {n}" for g, n in sorted(st["rejected_by_guard"].items())) or "-",
        ]
        for st in summary["statuses"]
    ]
    lines += ["## Status counts (every attempt)", "", *_table(["level", "attempts", *kinds, "rejected by guard"], body)]
    lines += ["", f"Degenerate tasks (judge canaries): {', '.join(summary['degenerate']) or 'none found'}"]
    if summary["missing"]:
        lines += [
            f"Missing solutions ({len(summary['missing'])}, counted as not solved): " + ", ".join(summary["missing"])
        ]
    lines += [
        "",
        "Definitions: pass@k is unbiased over each task's samples (a sample is a refinement chain, correct "
        "if any turn passed). fast_p uses each task's fastest correct attempt; *strict* is KernelBench's "
        "(speedup > p), *noise-aware* needs speedup > p x (1 + relative IQR of candidate + reference). "
        "geomean is over correct tasks.",
    ]
    if figures:
        lines += ["", "## Figures", ""]
        for name in figures:
            lines += [f"![{FIGURE_TITLES.get(name, name)}]({name})", ""]
    return "\n".join(lines) + "\n"


def write_report(
    out_dir: str | Path, records: Sequence[EvalRecord], ks: Sequence[int], meta: dict[str, Any], plots: bool = True
) -> dict[str, Any]:
    """Write `summary.json`, `report.md` and (with `plots`) the PNGs it shows into `out_dir`; return the summary."""
    out = Path(out_dir)
    summary = summarize(records, ks, meta)
    (out / SUMMARY).write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    figures = [p.name for p in write_plots(out, records, task_outcomes(records), summary)] if plots else []
    (out / REPORT).write_text(render_markdown(summary, figures), encoding="utf-8")
    return summary


def is_eval_dir(path: str | Path) -> bool:
    """Whether `path` is an output folder of `kernelzero eval` (its pinned settings and its verdicts)."""
    return (Path(path) / CONFIG).is_file() and (Path(path) / VERDICTS).is_file()


def rebuild_report(out_dir: str | Path, ks: Sequence[int] | None = None, plots: bool = True) -> dict[str, Any]:
    """Rewrite an eval folder's report from its records alone (`kernelzero report EVAL_DIR`): the k of pass@k and
    the facts of its header come from its last summary, else from its pinned settings (k = 1)."""
    out = Path(out_dir)
    old = json.loads((out / SUMMARY).read_text(encoding="utf-8")) if (out / SUMMARY).is_file() else {}
    meta = old.get("meta") or json.loads((out / CONFIG).read_text(encoding="utf-8"))
    records = read_records(out / VERDICTS)
    if not records:
        raise ValueError(f"{out / VERDICTS} holds no records yet: nothing to report")
    ks = list(ks or old.get("ks") or [1])
    n = min(o.n for o in task_outcomes(records))
    if any(k > n for k in ks):
        raise ValueError(f"pass@k needs k <= the samples per task ({n}), got k = {', '.join(map(str, ks))}")
    return write_report(out, records, ks, meta, plots=plots)


def compare(dir_a: str | Path, dir_b: str | Path) -> str:
    """Two runs' summaries side by side, one line per (level, figure), as a markdown table."""
    runs = []
    for d in (dir_a, dir_b):
        p = Path(d) / SUMMARY
        if not p.is_file():
            raise FileNotFoundError(f"{p}: no eval summary (run `kernelzero eval --out {d}` first)")
        runs.append(json.loads(p.read_text(encoding="utf-8")))
    a, b = runs

    def figures(s: dict[str, Any]) -> dict[tuple[str, str], str]:
        f: dict[tuple[str, str], str] = {}
        for r in s["rows"]:
            f[(r["label"], "tasks")] = str(r["tasks"])
            f[(r["label"], "solved")] = str(r["solved"])
            for k, v in r["pass"].items():
                f[(r["label"], f"pass@{k}")] = _pct(v)
            for base, sp in r["speed"].items():
                for p in FAST_PS:
                    for kind in ("strict", "noise_aware"):
                        f[(r["label"], f"fast_{p:g} {kind.replace('_', '-')} vs {base}")] = (
                            _pct(sp[kind][str(p)]) if sp else "n/a"
                        )
                f[(r["label"], f"geomean vs {base}")] = f"{sp['geomean']:.2f}x" if sp else "n/a"
        return f

    fa, fb = figures(a), figures(b)
    keys = list(dict.fromkeys([*fa, *fb]))
    name = [f"{Path(d).name} ({s['meta'].get('model', '?')})" for d, s in ((dir_a, a), (dir_b, b))]
    body = [[lv, fig, fa.get((lv, fig), "-"), fb.get((lv, fig), "-")] for lv, fig in keys]
    return "\n".join(_table(["level", "figure", *name], body)) + "\n"
