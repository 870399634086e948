"""The `kernelzero propose` pipeline: API sets -> Proposer completions -> tasks -> validation -> (Coder k) -> rewards.

`propose_batch` is the one path; the CLI only parses options and prints. A completion without a usable code block
is rejected as `parse` (the parser's reason in the detail). With a Coder, every valid task gets k judged samples
(`kernelzero.eval.solve`), l(m) and the Proposer reward; without one, only validation runs and rewards are rho for
invalid tasks and None (unmeasured) for valid ones.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kernelzero.curriculum.frontier import batch_rewards, success_rate
from kernelzero.curriculum.pool import atomic_write
from kernelzero.curriculum.validate import REASONS, ValidationResult, Validator
from kernelzero.eval.solve import solve
from kernelzero.generation.base import SamplingConfig
from kernelzero.rewards.proposer import ProposerRewardConfig
from kernelzero.roles.parsing import ParsedCode
from kernelzero.roles.proposer import parse_proposer_completion, proposer_messages
from kernelzero.tasks import Task, write_corpus


@dataclass
class Proposal:
    """One proposed task: its API set, source (None when the completion held no code), verdict and Coder record."""

    name: str
    apis: tuple[str, ...]
    source: str | None
    result: ValidationResult
    successes: int | None = None
    samples: int | None = None
    success_rate: float | None = None
    reward: float | None = None

    def task(self) -> Task:
        return Task(name=self.name, source=self.source or "", origin="proposed", apis=self.apis)


@dataclass
class ProposeSummary:
    proposals: list[Proposal]
    counts: Counter = field(default_factory=Counter)  # reason (or "valid") -> tasks

    def to_dict(self) -> dict:
        return {
            "total": len(self.proposals),
            "valid": self.counts.get("valid", 0),
            "reasons": {r: self.counts[r] for r in ("valid", *REASONS) if self.counts.get(r)},
            "tasks": [{**p.result.to_dict(), "successes": p.successes, "samples": p.samples,
                       "success_rate": p.success_rate, "reward": p.reward} for p in self.proposals],  # fmt: skip
        }


def read_api_sets(path: str | os.PathLike) -> list[tuple[str, ...]]:
    """API sets from a file: one per line, a JSON list or names separated by commas/spaces; `#` starts a comment."""
    sets = []
    for i, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        names = json.loads(line) if line.startswith("[") else line.replace(",", " ").split()
        if not names or not all(isinstance(x, str) for x in names):
            raise ValueError(f"{path}:{i}: expected API names, got {line!r}")
        sets.append(tuple(names))
    return sets


def propose_batch(
    policy,
    api_sets: Sequence[Sequence[str]],
    validator: Validator,
    *,
    sampling=None,
    name_prefix: str = "proposed",
    coder=None,
    k: int = 0,
    judge_fn: Callable | None = None,
    backend: str = "triton",
    reward_config: ProposerRewardConfig | None = None,
    on_stage: Callable[[str], None] | None = None,
) -> ProposeSummary:
    """Generate one task per API set, validate all (concurrently), optionally score valid ones with k Coder samples."""
    say = on_stage or (lambda _msg: None)
    sampling = sampling or SamplingConfig()
    say(f"generating {len(api_sets)} tasks with {policy.name}")
    completions = policy.generate([proposer_messages(list(s)) for s in api_sets], 1, sampling)
    proposals: list[Proposal | None] = []
    to_check: list[tuple[str, str, tuple[str, ...]]] = []
    for i, (apis, comps) in enumerate(zip(api_sets, completions)):
        name, apis = f"{name_prefix}_{i:04d}", tuple(apis)
        parsed = parse_proposer_completion(comps[0].text)
        if isinstance(parsed, ParsedCode):
            proposals.append(None)
            to_check.append((name, parsed.code, apis))
        else:
            proposals.append(Proposal(name, apis, None, ValidationResult(name, "parse", parsed.reason, apis)))
    say(f"validating {len(to_check)} parsed tasks")
    checked = iter(zip(to_check, validator.validate_many(to_check)))
    out: list[Proposal] = []
    for p in proposals:
        if p is None:
            (name, source, apis), result = next(checked)
            p = Proposal(name, apis, source, result)
        out.append(p)
    valid = [p for p in out if p.result.valid]
    if coder is not None and k > 0 and valid:
        say(f"judging {k} Coder samples on each of {len(valid)} valid tasks")
        for p in valid:
            res = solve(p.task(), coder, backend=backend, judge_fn=judge_fn, samples=k, sampling=sampling)
            correct = [None if r.verdict.status == "infra_error" else r.verdict.correct for r in res.rollouts]
            p.samples = sum(c is not None for c in correct)
            p.successes = sum(bool(c) for c in correct)
            p.success_rate = success_rate(correct)
    rewards = batch_rewards([p.result.valid for p in out], [p.success_rate for p in out],
                            [p.source or "" for p in out], reward_config)  # fmt: skip
    for p, r in zip(out, rewards):
        p.reward = r
    return ProposeSummary(out, Counter("valid" if p.result.valid else p.result.reason for p in out))


def write_outputs(summary: ProposeSummary, out: str | os.PathLike) -> tuple[Path, Path]:
    """The valid tasks as a JSONL corpus at `out`; the summary (counts per reason, every task's verdict, l(m) and
    reward) beside it as `<stem>.summary.json`. Both atomic."""
    path = Path(out)
    write_corpus([p.task() for p in summary.proposals if p.result.valid], path)
    side = path.with_name(path.stem + ".summary.json")
    atomic_write(side, json.dumps(summary.to_dict(), indent=1) + "\n")
    return path, side


def reasons_table(counts: Counter, total: int) -> str:
    """Counts per verdict, in REASONS order, as aligned text."""
    rows = [(r, counts[r]) for r in ("valid", *REASONS) if counts.get(r)]
    width = max([len("verdict"), *(len(r) for r, _ in rows)])
    lines = [f"{'verdict':<{width}}  tasks  share"]
    lines += [f"{r:<{width}}  {c:5d}  {c / total:5.0%}" for r, c in rows]
    return "\n".join(lines)
