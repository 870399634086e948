"""The study's report: `summary.json`, `report.md` (the arms table) and PNG curves, over every seed and arm found in
a study folder, read from the records the stages wrote (each eval's `summary.json`, each run's `metrics.jsonl`).

Figures are taken from the eval report's own summaries (`eval.report.summarize`: unbiased pass@1 over each task's
samples; fast_1 strict against eager, None when the judge could not time, as under the Triton interpreter), never
recomputed. Across seeds an arm reports the mean and the spread (max - min); a difference between two numbers
counts only where it exceeds the spread, and the table says whether the gain after RL does: strictly (beyond the
spreads after SFT and after RL) and paired (beyond the spread of the seeds' own gains).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from kernelzero.eval.evaluate import VERDICTS
from kernelzero.eval.evaluate import read_records as read_eval_records
from kernelzero.loop.records import VERDICTS_FILE, read_verdict_records
from kernelzero.loop.runlog import read_records

SMOKE_NOTE = ("SMOKE RUN: toy sizes on CPU (tiny model, a handful of tasks, the Triton interpreter, 1 round of a few "
              "steps). It checks that every stage runs; its numbers mean nothing.")  # fmt: skip


def _read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def eval_figures(eval_dir: Path) -> dict[str, float | None] | None:
    """pass@1 and fast_1 (strict, vs eager) of one eval folder, from its summary.json; None if not evaluated yet."""
    summary = _read(eval_dir / "summary.json")
    if summary is None:
        return None
    row = summary["rows"][-1]  # the "all" row
    speed = row["speed"].get("eager")
    # the eval report keys fast_p by its float thresholds (`eval.report.FAST_PS`): "1.0"
    fast_1 = speed["strict"][str(1.0)] if speed else None
    return {"pass@1": row["pass"]["1"], "fast_1": fast_1, "tasks": row["tasks"]}


def _spread(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    return {"mean": sum(values) / len(values), "spread": max(values) - min(values), "n": len(values)}


def _sft_evals(seed_dir: Path) -> dict[str, Path]:
    """Weights digest -> the finished evaluation after SFT of those weights: `seed-S/eval-sft` and any retired one
    (`seed-S/retired/*/eval-sft`, `study.weights.retire`); the current one wins a tie."""
    found = {}
    for ev in [*sorted(seed_dir.glob("retired/*/eval-sft")), seed_dir / "eval-sft"]:
        weights = ((_read(ev / "summary.json") or {}).get("meta") or {}).get("weights")
        if weights:
            found[weights] = ev
    return found


def coder_same_tasks(run_dir: Path) -> dict[str, dict[str, float | int]]:
    """The Coder's training pass rate on the same tasks as each round goes on: per round, over the tasks its Coder
    phase drew at two or more GRPO steps, the mean pass rate of each task's first step and of its last. A step's own
    pass rate moves with which tasks it drew (in the H100 pilot one step's was 0.08, the next 0.33) more than with
    what the model learned; a task against itself does not."""
    if not (run_dir / VERDICTS_FILE).is_file():
        return {}
    steps: dict[tuple[int, str], dict[int, list[bool]]] = {}  # (round, task) -> step -> correct per rollout
    for rec in read_verdict_records(run_dir):
        if rec.phase == "coder":
            steps.setdefault((rec.round, rec.task), {}).setdefault(rec.step, []).append(rec.verdict.correct)
    pairs: dict[int, list[tuple[float, float]]] = {}
    for (r, _), by_step in steps.items():
        if len(by_step) > 1:
            first, last = by_step[min(by_step)], by_step[max(by_step)]
            pairs.setdefault(r, []).append((sum(first) / len(first), sum(last) / len(last)))
    return {str(r): {"tasks": len(ps), "first": sum(a for a, _ in ps) / len(ps),
                     "last": sum(b for _, b in ps) / len(ps)} for r, ps in sorted(pairs.items())}  # fmt: skip


def coder_rejections(run_dir: Path) -> dict[str, Any]:
    """What the judge said to the Coder's training rollouts: how many, how many correct, and the rejected ones by
    guard. A guard that rejects a share of a model's honest kernels (a timing backstop misfiring under load) reads as
    a reward of 0 to GRPO; this table is where such a bias would show."""
    if not (run_dir / VERDICTS_FILE).is_file():
        return {}
    verdicts = [rec.verdict for rec in read_verdict_records(run_dir) if rec.phase == "coder"]
    return {"rollouts": len(verdicts), "correct": sum(v.correct for v in verdicts), "rejected": _by_guard(verdicts)}


def eval_rejections(eval_dirs: list[Path]) -> dict[str, Any]:
    """The same over the test samples of a run's evaluations (after SFT and after each round): a misfiring guard
    there moves pass@1 itself."""
    verdicts = [rec.verdict for d in eval_dirs for rec in read_eval_records(d / VERDICTS)]
    return {"samples": len(verdicts), "rejected": _by_guard(verdicts)}


def _by_guard(verdicts: list) -> dict[str, int]:
    """The rejected verdicts counted by the guard that decided them, most first."""
    return dict(Counter(v.guard or "unnamed" for v in verdicts if v.status == "rejected").most_common())


def speed_term(run_dir: Path) -> dict[str, float | None]:
    """Where CA-GRPO's speed term could act, as the trainer logged it: the mean over Coder steps of the share of
    groups whose gate opened and of the share whose correct rollouts the speed term told apart, the only groups in
    which speed moves an advantage under per-group scaling (`trainers.coder.speed_ranked_groups`). None where the run
    logged no such figure (runs before it: bench/study_speed_term.py recomputes it from their verdicts)."""
    figures = {}
    for name, key in (("gate_open", "coder/gate_open_share"), ("speed_ranked", "coder/speed_ranked_share")):
        ys = [y for y in _metric_series(run_dir, key) if y == y]  # NaN: a step with no scored group
        figures[name] = sum(ys) / len(ys) if ys else None
    return figures


def proposer_figures(seed_dir: Path, arm_dir: Path) -> dict[str, Any]:
    """The Proposer's valid share on the study's fixed API sets (`Study.evaluate_proposer`): after SFT, and after
    each round its Proposer trained (none for a frozen one)."""
    sft = _read(seed_dir / "proposer-eval-sft" / "summary.json")
    rounds = []
    for ev in sorted(arm_dir.glob("proposer-eval-round-*"), key=lambda p: int(p.name.rsplit("-", 1)[1])):
        summary = _read(ev / "summary.json")
        if summary is not None:
            rounds.append({"round": int(ev.name.rsplit("-", 1)[1]), "valid_share": summary["valid_share"]})
    return {"sft": None if sft is None else sft["valid_share"], "sets": None if sft is None else sft["sets"],
            "samples_per_set": None if sft is None else sft.get("samples_per_set", 1),  # 1 before the field
            "rounds": rounds}  # fmt: skip


def collect(out: Path) -> dict[str, Any]:
    """Every (arm, seed) run under `out` with its evaluations, and each arm's mean and spread."""
    runs: dict[str, Any] = {}
    for seed_dir in sorted(out.glob("seed-*")):
        m = re.fullmatch(r"seed-(\d+)", seed_dir.name)
        if not m:
            continue
        by_weights = _sft_evals(seed_dir)
        for arm_dir in sorted(p for p in seed_dir.iterdir() if (p / "run").is_dir()):
            start = (_read(arm_dir / "start.json") or {}).get("coder")
            # the evaluation of the very weights this arm started from, retired ones included: an SFT trained
            # again on another machine that did not reproduce retires the old evaluation, not the arms it started
            sft_dir = by_weights.get(start, seed_dir / "eval-sft")
            sft = eval_figures(sft_dir)
            evaluated = ((_read(sft_dir / "summary.json") or {}).get("meta") or {}).get("weights")
            rounds = []
            for ev in sorted(arm_dir.glob("eval-round-*"), key=lambda p: int(p.name.rsplit("-", 1)[1])):
                figures = eval_figures(ev)
                if figures is not None:
                    rounds.append({"round": int(ev.name.rsplit("-", 1)[1]), **figures})
            # False: the arm started from other SFT weights than the evaluated ones (an SFT trained again on another
            # machine that did not reproduce, `study.weights`): its gain would compare two models
            same = None if start is None or evaluated is None else start == evaluated
            runs[f"{arm_dir.name}/seed-{m.group(1)}"] = {
                "arm": arm_dir.name, "seed": int(m.group(1)), "sft": sft, "rounds": rounds, "same_start": same,
                "coder_same_tasks": coder_same_tasks(arm_dir / "run"),
                "coder_rejections": coder_rejections(arm_dir / "run"),
                "eval_rejections": eval_rejections([sft_dir, *arm_dir.glob("eval-round-*")]),
                "speed_term": speed_term(arm_dir / "run"),
                "proposer_training": proposer_training(arm_dir / "run"),
                "proposer": proposer_figures(seed_dir, arm_dir)}  # fmt: skip
    arms: dict[str, Any] = {}
    for run in runs.values():
        arms.setdefault(run["arm"], []).append(run)
    table = {}
    for arm, rs in arms.items():
        done = [r for r in rs if r["sft"] and r["rounds"] and r["same_start"] is not False]
        fast = [r["rounds"][-1]["fast_1"] for r in done if r["rounds"][-1]["fast_1"] is not None]
        rule = gain_rule([r["sft"]["pass@1"] for r in done], [r["rounds"][-1]["pass@1"] for r in done])
        table[arm] = {"seeds": sorted(r["seed"] for r in done), "sft_pass@1": rule["sft"],
                      "final_pass@1": rule["final"], "gain_pass@1": rule["gain"], "final_fast_1": _spread(fast),
                      "gain_exceeds_spread": rule["exceeds_spread"],
                      "gain_exceeds_gain_spread": rule["exceeds_gain_spread"]}  # fmt: skip
        # the Proposer's valid share on the fixed sets, by the same rules (a frozen Proposer has no rounds)
        trained = [r for r in rs if r["proposer"]["sft"] is not None and r["proposer"]["rounds"]]
        if trained:
            table[arm]["proposer"] = {"seeds": sorted(r["seed"] for r in trained),
                                      **gain_rule([r["proposer"]["sft"] for r in trained],
                                                  [r["proposer"]["rounds"][-1]["valid_share"] for r in trained])}
    main = table.get("main", {}).get("final_pass@1")
    for row in table.values():
        other = row["final_pass@1"]
        row["vs_main"] = None if main is None or other is None else {
            "diff": other["mean"] - main["mean"], "counts": (min(main["n"], other["n"]) > 1 and
                                                             abs(other["mean"] - main["mean"]) > max(main["spread"],
                                                                                                     other["spread"]))}
    return {"runs": runs, "arms": table}


def gain_rule(start: list[float], end: list[float]) -> dict[str, Any]:
    """Mean and spread of paired start and end figures (one per seed) and of each seed's gain, and whether the mean
    gain counts: strictly (beyond the spreads of the starts and of the ends) and paired (beyond the spread of the
    gains: seeds that start far apart and gain alike pass it, as that spread of starts cancels). One seed has no
    spread to exceed: never counted."""
    g, a, b = _spread([y - x for x, y in zip(start, end, strict=True)]), _spread(start), _spread(end)
    several = len(start) > 1
    return {"sft": a, "final": b, "gain": g,
            "exceeds_spread": several and g["mean"] > max(a["spread"], b["spread"]),
            "exceeds_gain_spread": several and g["mean"] > g["spread"]}  # fmt: skip


def proposer_training(run_dir: Path) -> dict[str, dict[str, float | int]]:
    """The Proposer phase's own figures per round, as the trainer logged them: the mean valid share and reward of the
    round's first half of steps and of its second half. Each step prompts other API sets (some far harder than
    others), so a step's figure moves with its sets: halves, not steps, and the fixed-set evaluation is the
    measure."""
    by_round: dict[int, list[dict]] = {}
    for row in read_records(run_dir / "metrics.jsonl"):
        if row.get("phase") == "proposer" and "proposer/valid_share" in row:
            by_round.setdefault(row["round"], []).append(row)
    out = {}
    for r, steps in sorted(by_round.items()):
        steps.sort(key=lambda row: row["step"])
        half = (len(steps) + 1) // 2
        out[str(r)] = {"steps": len(steps)}
        for name, part in (("first", steps[:half]), ("second", steps[half:])):
            for key in ("valid_share", "reward_mean"):
                ys = [row[f"proposer/{key}"] for row in part if isinstance(row.get(f"proposer/{key}"), int | float)]
                out[str(r)][f"{name}_{key}"] = sum(ys) / len(ys) if ys else None
    return out


def _fmt(x: dict | None, pct: bool = True) -> str:
    if x is None:
        return "n/a"
    mean = f"{100 * x['mean']:.1f}%" if pct else f"{x['mean']:.3f}"
    return mean if x["n"] == 1 else f"{mean} (spread {100 * x['spread']:.1f})"


def render(summary: dict[str, Any], figures: list[str]) -> str:
    lines = ["# Learning study", ""]
    if summary["smoke"]:
        lines += [f"**{SMOKE_NOTE}**", ""]
    lines += ["Test tasks: API pairs never seen in any training record. pass@1: unbiased, from 4 samples per task; "
              "fast_1: share of test tasks solved correctly and faster than eager (n/a: untimed judge). Mean over "
              "seeds, with the spread (max - min, points) where there are several; a difference counts only where it "
              "exceeds the spreads of both numbers (never with one seed). Paired: the mean of each seed's gain over "
              "its own SFT start against the spread of those gains.", "",
              "| arm | seeds | pass@1 after SFT | pass@1 after RL | gain | gain > spread | paired: gain > its spread | "
              "fast_1 after RL | pass@1 after RL vs main |", "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for arm, row in summary["arms"].items():
        seeds = ",".join(map(str, row["seeds"])) or "-"
        lines.append(f"| {arm} | {seeds} | {_fmt(row['sft_pass@1'])} | {_fmt(row['final_pass@1'])} | "
                     f"{_fmt(row['gain_pass@1'])} | {_yes(row['gain_exceeds_spread'])} | "
                     f"{_yes(row['gain_exceeds_gain_spread'])} | "
                     f"{_fmt(row['final_fast_1'])} | {_vs(row['vs_main'])} |")  # fmt: skip
    n = _rounds(summary)
    heads = "".join(f" round {r} |" for r in range(1, n + 1))
    lines += ["", "## Runs", "", f"| run | after SFT |{heads}", "|---|---|" + "---|" * n]
    for name, run in summary["runs"].items():
        cells = [f"{100 * r['pass@1']:.1f}%" for r in run["rounds"]] + ["n/a"] * (n - len(run["rounds"]))
        sft = f"{100 * run['sft']['pass@1']:.1f}%" if run["sft"] else "n/a"
        lines.append(f"| {name} | {sft} |" + "".join(f" {c} |" for c in cells))
    first = next((run["proposer"] for run in summary["runs"].values() if run.get("proposer", {}).get("sets")), None)
    if first:
        per_set = "One task" if first["samples_per_set"] == 1 else f"{first['samples_per_set']} tasks"
        lines += ["", f"## The Proposer's valid share on {first['sets']} fixed training API sets", "",
                  f"{per_set} per set at the evaluation's temperature, each through the task validator "
                  "(`seed-S/proposer-eval-sft`, `seed-S/ARM/proposer-eval-round-R`; a frozen Proposer is its SFT's).",
                  "", f"| run | after SFT |{heads}", "|---|---|" + "---|" * n]  # fmt: skip
        for name, run in summary["runs"].items():
            p = run["proposer"]
            cells = [f"{100 * r['valid_share']:.1f}%" for r in p["rounds"]] + ["n/a"] * (n - len(p["rounds"]))
            sft = "n/a" if p["sft"] is None else f"{100 * p['sft']:.1f}%"
            lines.append(f"| {name} | {sft} |" + "".join(f" {c} |" for c in cells))
        rules = [(arm, row["proposer"]) for arm, row in summary["arms"].items() if row.get("proposer")]
        if rules:
            lines += ["", "By the arms table's rules, after the last round against after SFT:", "",
                      "| arm | seeds | valid share after SFT | after RL | gain | gain > spread | "
                      "paired: gain > its spread |", "|---|---|---|---|---|---|---|"]  # fmt: skip
        for arm, p in rules:
            lines.append(f"| {arm} | {','.join(map(str, p['seeds']))} | {_fmt(p['sft'])} | {_fmt(p['final'])} | "
                         f"{_fmt(p['gain'])} | {_yes(p['exceeds_spread'])} | {_yes(p['exceeds_gain_spread'])} |")
    training = {name: run["proposer_training"] for name, run in summary["runs"].items() if run.get("proposer_training")}
    if training:
        lines += ["", "## The Proposer's training figures", "",
                  "Per round, the trainer's own valid share and reward (mean over the first half of the round's steps, "
                  "then the second half). Each step prompts other API sets, so these move with the sets drawn; the "
                  "fixed sets above are the measure.", "",
                  "| run | round | steps | valid share: first half | second half | reward: first half | second half |",
                  "|---|---|---|---|---|---|---|"]  # fmt: skip
        for name, rounds in training.items():
            for r, x in rounds.items():
                cells = [_pct(x[f"{h}_valid_share"]) for h in ("first", "second")]
                cells += ["n/a" if x[f"{h}_reward_mean"] is None else f"{x[f'{h}_reward_mean']:+.3f}"
                          for h in ("first", "second")]
                lines.append(f"| {name} | {r} | {x['steps']} | " + " | ".join(cells) + " |")
    lines += ["", "## The Coder's training pass rate on the same tasks", "",
              "Per round, over the tasks its Coder phase drew at two or more steps: the mean pass rate at each task's "
              "first step and at its last (a step's own rate moves with the tasks it drew).", "",
              "| run | round | tasks | first step | last step |", "|---|---|---|---|---|"]  # fmt: skip
    for name, run in summary["runs"].items():
        for r, x in run.get("coder_same_tasks", {}).items():
            lines.append(f"| {name} | {r} | {x['tasks']} | {100 * x['first']:.1f}% | {100 * x['last']:.1f}% |")
    lines += ["", "## The judge's rejections", "",
              "Over each run's Coder phases: rollouts, correct ones, and the rejected ones by guard (a rejection "
              "is a reward of 0); over its evaluations (after SFT and each round), the test samples rejected. A "
              "guard that misfires on honest kernels would show here.", "",
              "| run | rollouts | correct | rejected, by guard | evaluations' samples | rejected, by guard |",
              "|---|---|---|---|---|---|"]  # fmt: skip
    for name, run in summary["runs"].items():
        x, e = run.get("coder_rejections") or {}, run.get("eval_rejections") or {}
        if x or e:
            cells = [str(x.get("rollouts", "n/a")), str(x.get("correct", "n/a")), _guards(x),
                     str(e.get("samples", "n/a")), _guards(e)]  # fmt: skip
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", "## Where the speed term could act", "",
              "Mean over the Coder's steps: the share of GRPO groups whose gate opened, and the share in which the "
              "speed term told two correct rollouts apart. Only the latter moves an advantage (rewards are scaled per "
              "group, and a speed term shared by every correct rollout of a group divides out): where it stays near "
              "0, the arms that differ only in the speed term train alike.", "",
              "| run | gate open | speed-ranked |", "|---|---|---|"]  # fmt: skip
    for name, run in summary["runs"].items():
        t = run.get("speed_term") or {}
        cells = ["n/a" if t.get(k) is None else f"{100 * t[k]:.1f}%" for k in ("gate_open", "speed_ranked")]
        lines.append(f"| {name} | {cells[0]} | {cells[1]} |")
    other = [name for name, run in summary["runs"].items() if run.get("same_start") is False]
    if other:
        lines += ["", f"Left out of the arms table: {', '.join(other)} started from other SFT weights than the "
                  "evaluated ones (an SFT trained again that did not reproduce)."]  # fmt: skip
    lines += ["", "Every verdict: `corpus/verdicts.jsonl`, `seed-S/eval-*/verdicts.jsonl`, `seed-S/ARM/eval-round-R/"
              "verdicts.jsonl`, `seed-S/ARM/run/verdicts.jsonl`.", ""]  # fmt: skip
    for name in figures:
        lines += [f"![{name}](plots/{name})", ""]
    return "\n".join(lines)


def _guards(x: dict) -> str:
    return (", ".join(f"{g} {n}" for g, n in x["rejected"].items()) or "none") if x else "n/a"


def _yes(x: bool) -> str:
    return "yes" if x else "no"


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _vs(x: dict | None) -> str:
    if x is None:
        return "n/a"
    return f"{100 * x['diff']:+.1f} points ({'exceeds' if x['counts'] else 'within'} the spread)"


def _rounds(summary: dict[str, Any]) -> int:
    return max((len(r["rounds"]) for r in summary["runs"].values()), default=0)


def _metric_series(run_dir: Path, key: str) -> list[float]:
    values = (row.get(key) for row in read_records(run_dir / "metrics.jsonl"))
    return [float(v) for v in values if isinstance(v, int | float)]


def _running_mean(ys: list[float], n: int) -> list[float]:
    """Each value's mean with the up to n - 1 values before it."""
    return [sum(ys[max(0, i - n + 1) : i + 1]) / (i + 1 - max(0, i - n + 1)) for i in range(len(ys))]


def write_plots(out: Path, summary: dict[str, Any]) -> list[str]:
    """pass@1 per round (0 = after SFT) per run, and the loop's training curves (Coder pass rate and reward,
    Proposer validity and reward) per run."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plots = out / "plots"
    plots.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, run in summary["runs"].items():
        xs = ([0] if run["sft"] else []) + [r["round"] for r in run["rounds"]]
        ys = ([run["sft"]["pass@1"]] if run["sft"] else []) + [r["pass@1"] for r in run["rounds"]]
        ax.plot(xs, ys, marker="o", label=name)
    ax.set(xlabel="round (0 = after SFT)", ylabel="test pass@1", ylim=(0, 1), title="Test pass@1")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(plots / "pass_at_1.png", dpi=100)
    plt.close(fig)
    keys = ("coder/pass_rate", "coder/reward_mean", "proposer/valid_share", "proposer/reward_mean")
    fig, axes = plt.subplots(2, 2, figsize=(9, 6))
    for ax, key in zip(axes.flat, keys, strict=True):
        for name in summary["runs"]:
            arm, seed = name.split("/")
            ys = _metric_series(out / seed / arm / "run", key)
            # a step's figure depends on which few tasks it drew: the points, and their running mean over 5 steps
            line = ax.plot(range(len(ys)), ys, marker=".", linestyle="none", alpha=0.4)[0]
            ax.plot(range(len(ys)), _running_mean(ys, 5), color=line.get_color(), label=name)
        ax.set(title=key, xlabel="GRPO step (all rounds); line: mean of the last 5 steps")
    axes.flat[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(plots / "training.png", dpi=100)
    plt.close(fig)
    return ["pass_at_1.png", "training.png"]


def write_study_report(out: str | Path, smoke: bool) -> dict[str, Any]:
    """Write `summary.json`, `report.md` and `plots/` for the study folder `out`; return the summary."""
    out = Path(out)
    summary = {"smoke": smoke, "note": SMOKE_NOTE if smoke else None, **collect(out)}
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    figures = write_plots(out, summary)
    (out / "report.md").write_text(render(summary, figures), encoding="utf-8")
    return summary


__all__ = ["SMOKE_NOTE", "collect", "eval_figures", "write_study_report"]
