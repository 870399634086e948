"""Where CA-GRPO's speed term could act in a study's Coder phases, recomputed from the record with the trainer's own
gate: per run, the share of GRPO groups whose gate opened and the share in which the speed term told two correct
rollouts apart (`trainers.coder.speed_ranked_groups`). Under per-group reward scaling (TRL's scale_rewards="group")
only the second moves an advantage: a speed term shared by every correct rollout of a group is one constant factor on
its rewards, which the group's std divides out.

Runs recorded before the Coder phase logged `coder/speed_ranked_share` have it only this way.

    python bench/study_speed_term.py bench/results/study_h100_f9025fb_queue.tgz

Prints one row per run: groups scored, gate open, speed-ranked, and of the groups with two or more correct rollouts
how many held a single distinct correct completion.
"""

from __future__ import annotations

import argparse
import json
import sys
import tarfile
import tempfile
from collections import defaultdict
from pathlib import Path


def run_figures(run_dir: Path) -> dict[str, float | int]:
    import torch

    from kernelzero.loop.records import read_verdict_records
    from kernelzero.rewards.cagrpo import GateConfig, gate_open_per_group, gate_reward_matrix
    from kernelzero.trainers.coder import speed_ranked_groups

    cfg = json.loads((run_dir / "config.json").read_text(encoding="utf-8"))["coder"]
    gate = GateConfig(alpha=cfg["gate"]["alpha"], beta=cfg["gate"]["beta"])  # the study runs f = identity
    groups: dict[tuple[int, int], dict[str, list]] = defaultdict(lambda: defaultdict(list))  # (round, step) -> task
    for rec in read_verdict_records(run_dir):
        if rec.phase == "coder":
            groups[(rec.round, rec.step)][rec.task].append(rec)
    scored = opened = ranked = multi = single = 0
    for batch in groups.values():
        size = {len(rs) for rs in batch.values()}
        if len(size) != 1:
            raise ValueError(f"{run_dir}: groups of unequal size in one batch: {sorted(size)}")
        rows = [rec for rs in batch.values() for rec in rs]  # each group's rows contiguous, as TRL gathers them
        nan = float("nan")
        raw = torch.tensor([[float(r.verdict.correct), r.verdict.speedup_eager or nan] for r in rows])  # (N, 2)
        g = size.pop()
        gate_open = gate_open_per_group(raw, g, gate.alpha)  # (B,)
        scored += len(batch)
        opened += int(gate_open.sum())
        ranked += int(speed_ranked_groups(gate_reward_matrix(raw, g, gate), gate_open, gate.beta).sum())
        for rs in batch.values():
            correct = [r.completion for r in rs if r.verdict.correct]
            if len(correct) >= 2:
                multi += 1
                single += len(set(correct)) == 1
    return {"groups": scored, "gate_open": opened, "speed_ranked": ranked, "two_correct": multi,
            "one_distinct_correct": single}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("record", type=Path, help="a study folder, or its pack (.tgz) as bench/results holds it")
    args = ap.parse_args(argv)
    if not args.record.exists():
        print(f"error: {args.record}: no such study folder or pack", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        root = args.record
        if root.is_file():
            with tarfile.open(root) as tar:
                tar.extractall(tmp, members=[m for m in tar if "/run/" in m.name], filter="data")
            root = Path(tmp)
        runs = sorted(p for p in root.glob("seed-*/*/run") if (p / "verdicts.jsonl").is_file())
        if not runs:
            print(f"error: {args.record}: no seed-S/ARM/run/verdicts.jsonl in it", file=sys.stderr)
            return 2
        print("| run | groups | gate open | speed-ranked | groups with 2+ correct | of them, one distinct completion |")
        print("|---|---|---|---|---|---|")
        for run in runs:
            f = run_figures(run)
            print(f"| {run.parent.name}/{run.parent.parent.name} | {f['groups']} | {f['gate_open']} | "
                  f"{f['speed_ranked']} | {f['two_correct']} | {f['one_distinct_correct']} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
