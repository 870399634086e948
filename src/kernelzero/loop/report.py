"""The run report: `report.md` and its PNG plots, rebuilt from a run directory's records alone (`kernelzero report`).

Plots (run_dir/plots/): rewards.png (Coder reward and pass rate, Proposer reward, per step, rounds marked),
pass_rate_rounds.png (Coder pass rate per round), gate_open.png (share of groups whose CA-GRPO gate is open),
task_validity.png (share of proposed tasks that were valid, per round, Proposer phase and task batch), frontier.png
(Coder success over API pairs, `curriculum.report`), hardest_apis.png (the APIs with the lowest success).
"""

from __future__ import annotations

import json
import os
from collections import Counter, defaultdict
from pathlib import Path

from kernelzero.curriculum.frontier import api_rates, hardest_apis, pair_rates
from kernelzero.curriculum.heatmap import frontier_heatmap, hardest_table
from kernelzero.curriculum.pool import TaskPool
from kernelzero.loop.records import read_task_records, read_verdict_records
from kernelzero.loop.runlog import read_json, read_records
from kernelzero.rewards.proposer import mean_correct, tally


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: Path) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    _plt().close(fig)
    return f"plots/{path.name}"


def _series(metrics: list[dict], phase: str, key: str) -> tuple[list[int], list[float], list[int]]:
    """(x, y, round) over the phase's steps in run order; x counts steps across rounds."""
    rows = sorted((m for m in metrics if m["phase"] == phase), key=lambda m: (m["round"], m["step"]))
    xs, ys, rs = [], [], []
    for i, m in enumerate(rows):
        v = m.get(key)
        if v is not None:
            xs.append(i)
            ys.append(float(v))
            rs.append(m["round"])
    return xs, ys, rs


def _round_marks(ax, rs: list[int], xs: list[int]) -> None:
    for i in range(1, len(rs)):
        if rs[i] != rs[i - 1]:
            ax.axvline(xs[i] - 0.5, color="grey", lw=0.8, ls="--")


def write_report(run_dir: str | os.PathLike) -> Path:
    """Write run_dir/report.md and run_dir/plots/*.png; returns the report's path."""
    run = Path(run_dir)
    plots = run / "plots"
    plt = _plt()
    config = read_json(run / "config.json", {})
    state = read_json(run / "state.json", {})
    metrics = list(read_records(run / "metrics.jsonl"))
    tasks = list(read_task_records(run))
    verdicts = list(read_verdict_records(run))
    pool = TaskPool()
    if state.get("pool"):
        pool.load_state_dict(state["pool"])
    images: list[tuple[str, str]] = []

    # rewards and pass rate per step
    fig, ax = plt.subplots(figsize=(7, 3.5))
    # distinct markers and dashes: series that coincide (a smoke run's zeros) stay visible on top of each other
    series = (("coder", "coder/reward_mean", "Coder reward (mean)", {"marker": "o", "ms": 8}),
              ("coder", "coder/pass_rate", "Coder pass rate", {"marker": "s", "ls": "--"}),
              ("proposer", "proposer/reward_mean", "Proposer reward (mean)", {"marker": "^"}))  # fmt: skip
    for phase, key, label, style in series:
        xs, ys, rs = _series(metrics, phase, key)
        if xs:
            ax.plot(xs, ys, label=label, **style)
            if phase == "coder":
                _round_marks(ax, rs, xs)
    ax.set_xlabel("step (within role, across rounds; dashed: new round)")
    ax.set_ylabel("value")
    ax.legend(fontsize=8)
    ax.set_title("Rewards and pass rate per step")
    images.append(("Rewards and pass rate per step", _save(fig, plots / "rewards.png")))

    # pass rate per round (from the verdicts themselves)
    outcomes: dict[int, list[bool | None]] = defaultdict(list)
    for v in verdicts:
        if v.phase == "coder":
            outcomes[v.round].append(v.verdict.scored_correct)
    per_round = {r: tally(cs) for r, cs in outcomes.items() if tally(cs)[1]}  # (successes, scored) per round
    fig, ax = plt.subplots(figsize=(5, 3))
    rounds = sorted(per_round)
    bars = ax.bar([str(r) for r in rounds], [mean_correct(outcomes[r]) for r in rounds])
    ax.bar_label(bars, labels=[f"{per_round[r][0]}/{per_round[r][1]}" for r in rounds])  # a zero bar is invisible
    ax.set_ylim(0, 1.1)
    ax.set_xlabel("round")
    ax.set_ylabel("Coder pass rate")
    ax.set_title("Coder pass rate per round")
    images.append(("Coder pass rate per round", _save(fig, plots / "pass_rate_rounds.png")))

    # gate-open share, and the share of groups whose advantages the speed term moved (runs before it logged none)
    fig, ax = plt.subplots(figsize=(6, 3))
    xs, ys, rs = _series(metrics, "coder", "coder/gate_open_share")
    ax.plot(xs, ys, marker="o", label="gate open")
    ranked_xs, ranked_ys, _ = _series(metrics, "coder", "coder/speed_ranked_share")
    if ranked_xs:
        ax.plot(ranked_xs, ranked_ys, marker="x", label="speed ranks correct rollouts")
        ax.legend(fontsize=7)
    _round_marks(ax, rs, xs)
    ax.set_ylim(-0.05, 1.05)
    ax.set_xlabel("Coder step")
    ax.set_ylabel("share of groups")
    ax.set_title("CA-GRPO gate open (acc(G) >= alpha)")
    images.append(("Gate-open share per Coder step", _save(fig, plots / "gate_open.png")))

    # validity of proposed tasks
    validity: dict[tuple[int, str], list[int]] = defaultdict(lambda: [0, 0])
    reasons: Counter = Counter()
    for t in tasks:
        validity[(t.round, t.phase)][0] += t.proposal.valid
        validity[(t.round, t.phase)][1] += 1
        if not t.proposal.valid:
            reasons[t.proposal.validation.reason] += 1
    fig, ax = plt.subplots(figsize=(6, 3))
    labels = [f"r{r} {p}" for r, p in sorted(validity)]
    bars = ax.bar(labels, [validity[k][0] / validity[k][1] for k in sorted(validity)])
    ax.bar_label(bars, labels=[f"{validity[k][0]}/{validity[k][1]} valid" for k in sorted(validity)])
    ax.set_ylim(0, 1.1)
    ax.set_ylabel("valid share")
    ax.set_title("Validity of proposed tasks (Proposer phase rollouts, task batch)")
    images.append(("Validity of proposed tasks", _save(fig, plots / "task_validity.png")))

    # frontier and hardest APIs
    records = pool.records()
    pairs, apis = pair_rates(records), api_rates(records)
    if pairs:
        frontier_heatmap(pairs, plots / "frontier.png")
        images.append(("Frontier: Coder success over API pairs", "plots/frontier.png"))
    hardest = hardest_apis(apis, 15)
    if hardest:
        fig, ax = plt.subplots(figsize=(6, 0.3 * len(hardest) + 1.2))
        ax.barh([a for a, _ in hardest][::-1], [r.rate for _, r in hardest][::-1])
        ax.set_xlim(0, 1)
        ax.set_xlabel("Coder success rate (pooled samples)")
        ax.set_title("Hardest APIs")
        images.append(("Hardest APIs", _save(fig, plots / "hardest_apis.png")))

    # report.md
    statuses = Counter(v.verdict.status for v in verdicts if v.phase == "coder")
    done = state.get("completed", [])
    lines = [f"# KernelZero run: {run.name}", ""]
    if config.get("preset") == "tiny" and (config.get("coder") or {}).get("model") is None:
        lines += ["> Smoke-scale run (tiny random model, CPU, Triton interpreter): it exercises the machinery, its "
                  "numbers mean nothing. A real run: `kernelzero train --preset paper` on a GPU node "
                  "(docs/loop.md).", ""]  # fmt: skip
    lines += [
        f"- preset `{config.get('preset')}`, seed {config.get('seed')}, rounds {config.get('rounds')} "
        f"({'finished' if state.get('finished') else 'in progress'}; last unit: {done[-1] if done else 'none'})",
        f"- tasks.jsonl: {len(tasks)} proposed tasks, {sum(t.proposal.valid for t in tasks)} valid; "
        f"rejections: {', '.join(f'{k} {n}' for k, n in reasons.most_common()) or 'none'}",
        f"- verdicts.jsonl: {len(verdicts)} judged solutions; Coder phase statuses: "
        f"{', '.join(f'{k} {n}' for k, n in statuses.most_common()) or 'none'}",
        f"- pool: {len(pool)} tasks, {len(pool.hard())} hard",
        "",
        "## Rounds",
        "",
        "| round | proposed (batch) | valid | Coder tasks | seed fallback | Coder pass rate |",
        "|---|---|---|---|---|---|",
    ]
    for r, info in sorted(state.get("rounds", {}).items(), key=lambda kv: int(kv[0])):
        s, n = per_round.get(int(r), (0, 0))
        rate = f"{mean_correct(outcomes[int(r)]):.3f} ({s}/{n})" if n else "-"
        lines.append(f"| {r} | {info.get('proposed', '-')} | {info.get('valid', '-')} | "
                     f"{len(info.get('coder_tasks', []))} | {'yes' if info.get('seed_fallback') else 'no'} | {rate} |")
    lines += [""]
    for title, rel in images:
        lines += [f"## {title}", "", f"![{title}]({rel})", ""]
    if apis:
        lines += ["## Hardest APIs (table)", "", "```", hardest_table(apis, 15), "```", ""]
    last = [m for m in metrics if m["phase"] == "round"]
    if last:
        lines += ["## Round metrics", "", "```", *(json.dumps(m, sort_keys=True) for m in last), "```", ""]
    out = run / "report.md"
    out.write_text("\n".join(lines), encoding="utf-8")
    return out


