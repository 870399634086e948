"""Proposals: the record of one proposed task, its name, and the pipeline API sets -> Proposer completions -> tasks
-> validation -> (Coder k) -> rewards.

`Proposal` is the one record of a proposed task wherever it is made (the Proposer trainer's reward function, the
loop's task batch, `kernelzero propose`) and `proposed_task_name` the one way to name it. `propose_batch` is the CLI's
path; the loop calls its stages (`propose`, `measure`, `reward_batch`). A completion without a usable code block is
rejected as `parse` (the parser's reason in the detail). With a Coder, every valid task gets k judged samples
(`coder_samples`: a batch's tasks in one generation and one judging batch), l(m) and the Proposer reward; without
one, only validation runs and rewards are rho for invalid tasks and None (unmeasured) for valid ones.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kernelzero.curriculum.frontier import batch_rewards
from kernelzero.curriculum.pool import atomic_write
from kernelzero.curriculum.validate import REASONS, ValidationResult, Validator
from kernelzero.eval.solve import JudgeFn, SolveResult, serial_judge, solve_many
from kernelzero.generation.base import Policy, SamplingConfig
from kernelzero.rewards.proposer import ProposerRewardConfig, mean_correct, tally
from kernelzero.roles.coder import Judged, JudgeManyFn
from kernelzero.roles.parsing import ParsedCode
from kernelzero.roles.proposer import parse_proposer_completion, proposer_messages
from kernelzero.tasks import Task, write_corpus


def proposed_task_name(text: str) -> str:
    """The name of a proposed task: `proposed-` and 12 hex digits of the SHA-1 of its source (of the completion
    itself when it held no code). One text has one name wherever and whenever it is proposed, so names never collide
    in the pool: a task proposed again is the same task, and the validator rejects it as a duplicate."""
    return f"proposed-{hashlib.sha1(text.encode()).hexdigest()[:12]}"


@dataclass
class Proposal:
    """One proposed task and what became of it: the API set it was written for, its source (None when the completion
    held no code), the validator's verdict, the frozen Coder's record on it (l(m)) and its reward."""

    name: str
    apis: tuple[str, ...]
    source: str | None
    validation: ValidationResult
    successes: int | None = None
    """Correct Coder samples; None until measured (an invalid task never is)."""
    samples: int | None = None
    """Scored Coder samples (one with an infra failure is not counted)."""
    success_rate: float | None = None
    """l(m) over the scored samples; None until measured, or when no sample could be scored."""
    reward: float | None = None
    """The Proposer's reward in its batch: r_P after the repetition penalty, rho when invalid, None when unmeasured."""
    judged: list[Judged] = field(default_factory=list, repr=False, compare=False)
    """The Coder samples themselves; in memory only (verdicts.jsonl holds them, each under its own key)."""

    @property
    def valid(self) -> bool:
        return self.validation.valid

    def task(self) -> Task:
        return Task(name=self.name, source=self.source or "", origin="proposed", apis=self.apis)

    def record_samples(self, judged: Sequence[Judged]) -> None:
        """Keep the k judged Coder samples of this task and l(m) over them."""
        correct = [j.verdict.scored_correct for j in judged]
        self.judged = list(judged)
        self.successes, self.samples = tally(correct)
        self.success_rate = mean_correct(correct)

    def to_dict(self) -> dict:
        """JSON-ready fields (`judged` excepted), and `valid` for readers of the file (`from_dict` ignores it)."""
        return {"name": self.name, "apis": list(self.apis), "source": self.source, "valid": self.valid,
                "validation": self.validation.to_dict(), "successes": self.successes, "samples": self.samples,
                "success_rate": self.success_rate, "reward": self.reward}  # fmt: skip

    @classmethod
    def from_dict(cls, d: dict) -> Proposal:
        return cls(name=d["name"], apis=tuple(d["apis"]), source=d["source"],
                   validation=ValidationResult.from_dict(d["validation"]), successes=d["successes"],
                   samples=d["samples"], success_rate=d["success_rate"], reward=d["reward"])  # fmt: skip


@dataclass
class ProposeSummary:
    """One `propose_batch`: its proposals, in API-set order."""

    proposals: list[Proposal]

    @property
    def counts(self) -> Counter:
        """Tasks per rejection reason, valid ones under "valid"."""
        return Counter("valid" if p.valid else p.validation.reason for p in self.proposals)

    def to_dict(self) -> dict:
        counts = self.counts
        return {
            "total": len(self.proposals),
            "valid": counts.get("valid", 0),
            "reasons": {r: counts[r] for r in ("valid", *REASONS) if counts.get(r)},
            "tasks": [p.to_dict() for p in self.proposals],
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


def propose(policy, api_sets: Sequence[Sequence[str]], validator: Validator, *, sampling: SamplingConfig | None = None,
            on_stage: Callable[[str], None] | None = None, brief: bool = False,
            within_batch: bool = True) -> list[Proposal]:  # fmt: skip
    """One task per API set from `policy`, validated (concurrently; with `within_batch`, a near-copy of an earlier
    task of the batch is a `duplicate`). Not yet measured or rewarded. `brief`: the Proposer's brief prompt
    (`roles.coder.PROMPTS`)."""
    say = on_stage or (lambda _msg: None)
    say(f"generating {len(api_sets)} tasks with {policy.name}")
    chats = [proposer_messages(list(s), brief=brief) for s in api_sets]
    completions = policy.generate(chats, 1, sampling or SamplingConfig())
    proposals: list[Proposal | None] = []
    to_check: list[tuple[str, str, tuple[str, ...]]] = []
    for apis, comps in zip(api_sets, completions, strict=True):
        apis, parsed = tuple(apis), parse_proposer_completion(comps[0].text)
        if isinstance(parsed, ParsedCode):
            proposals.append(None)
            to_check.append((proposed_task_name(parsed.code), parsed.code, apis))
        else:
            name = proposed_task_name(comps[0].text)
            proposals.append(Proposal(name, apis, None, ValidationResult(name, "parse", parsed.reason, apis)))
    say(f"validating {len(to_check)} parsed tasks")
    checked = iter(zip(to_check, validator.validate_many(to_check, within_batch=within_batch), strict=True))
    out: list[Proposal] = []
    for p in proposals:
        if p is None:
            (name, source, apis), result = next(checked)
            p = Proposal(name, apis, source, result)
        out.append(p)
    return out


def coder_samples(tasks: Sequence[Task], coder: Policy, *, k: int, backend: str, judge_many: JudgeManyFn,
                  sampling: SamplingConfig | Sequence[SamplingConfig],
                  brief: bool = False) -> list[list[Judged]]:  # fmt: skip
    """k samples of the frozen Coder on each task, each judged, in task order: what l(m) is measured on. One turn of
    `solve_many`: one `generate` over every task's chat (n = k; tasks share a call where their sampling configs are
    equal) and one `judge_many` batch over all the answers, so the Coder generates once and a pool judges every
    task's samples at once instead of task after task."""
    results = solve_many(list(tasks), coder, backend=backend, judge_many=judge_many, samples=k, sampling=sampling,
                         brief=brief)  # fmt: skip
    return [_judged(res) for res in results]


def measure(proposals: Sequence[Proposal], coder: Policy, *, k: int, backend: str, judge_fn: JudgeFn,
            sampling: Callable[[int], SamplingConfig], judge_many: JudgeManyFn | None = None,
            brief: bool = False) -> None:  # fmt: skip
    """k judged Coder samples and l(m) for every valid proposal; `sampling(i)` samples the i-th proposal's.

    With `judge_many` (a pool), every valid proposal's samples are judged in one batch, all in flight at once; else
    one `judge_fn` call at a time. Each proposal's samples come from a `generate` call of its own unless their
    configs are equal (`solve_many`), so a per-proposal seed samples exactly as it did proposal by proposal."""
    valid = [(i, p) for i, p in enumerate(proposals) if p.valid]
    judged = coder_samples([p.task() for _, p in valid], coder, k=k, backend=backend,
                           judge_many=judge_many or serial_judge(judge_fn), sampling=[sampling(i) for i, _ in valid],
                           brief=brief)  # fmt: skip
    for (_, p), samples in zip(valid, judged, strict=True):
        p.record_samples(samples)


def _judged(result: SolveResult) -> list[Judged]:
    return [Judged(r.completion.text, r.code, r.verdict) for r in result.rollouts]


def reward_batch(proposals: Sequence[Proposal], config: ProposerRewardConfig | None = None) -> None:
    """Set every proposal's reward within its batch (`frontier.batch_rewards`)."""
    rewards = batch_rewards([p.valid for p in proposals], [p.success_rate for p in proposals],
                            [p.source or "" for p in proposals], config)  # fmt: skip
    for p, r in zip(proposals, rewards, strict=True):
        p.reward = r


def propose_batch(
    policy,
    api_sets: Sequence[Sequence[str]],
    validator: Validator,
    *,
    sampling: SamplingConfig | None = None,
    coder: Policy | None = None,
    k: int = 0,
    judge_fn: JudgeFn | None = None,
    judge_many: JudgeManyFn | None = None,
    backend: str = "triton",
    reward_config: ProposerRewardConfig | None = None,
    on_stage: Callable[[str], None] | None = None,
    brief: bool = False,
) -> ProposeSummary:
    """Generate one task per API set, validate all (concurrently), optionally score valid ones with k Coder samples
    (judged in one batch with `judge_many`, see `measure`; `brief`: both roles' brief prompts, `roles.coder.PROMPTS`).
    """
    say = on_stage or (lambda _msg: None)
    sampling = sampling or SamplingConfig()
    proposals = propose(policy, api_sets, validator, sampling=sampling, on_stage=on_stage, brief=brief)
    valid = [p for p in proposals if p.valid]
    if coder is not None and k > 0 and valid:
        if judge_fn is None:
            raise ValueError("propose_batch: a Coder to measure l(m) with needs a judge_fn")
        say(f"judging {k} Coder samples on each of {len(valid)} valid tasks")
        measure(proposals, coder, k=k, backend=backend, judge_fn=judge_fn, sampling=lambda _i: sampling,
                judge_many=judge_many, brief=brief)  # fmt: skip
    reward_batch(proposals, reward_config)
    return ProposeSummary(proposals)


def write_outputs(summary: ProposeSummary, out: str | os.PathLike) -> tuple[Path, Path]:
    """The valid tasks as a JSONL corpus at `out`; the summary (counts per reason, every task's verdict, l(m) and
    reward) beside it as `<stem>.summary.json`. Both atomic."""
    path = Path(out)
    write_corpus([p.task() for p in summary.proposals if p.valid], path)
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
