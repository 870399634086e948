"""Frontier statistics, as pure functions: Coder success per API and per API pair, batch rewards.

Per API (and per unordered API pair) the success rate is pooled over every sample of every task whose set holds
that API (pair): successes / samples, so a task with more samples weighs more. The Proposer's batch rewards combine
validation with l(m) (`rewards.proposer.mean_correct`, over the scored samples only): r_P for valid tasks, rho for
invalid ones, minus the repetition penalty for near-duplicates within the batch (`kernelzero.rewards.proposer`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations

from kernelzero.rewards.proposer import ProposerRewardConfig, penalised_rewards, proposer_reward


@dataclass(frozen=True)
class Rate:
    """Pooled Coder success over tasks that share an API (or pair)."""

    successes: int
    samples: int
    tasks: int

    @property
    def rate(self) -> float:
        return self.successes / self.samples if self.samples else 0.0


def _pool(keyed: Iterable[tuple[tuple, int, int]]) -> dict[tuple, Rate]:
    acc: dict[tuple, list[int]] = {}
    for key, s, k in keyed:
        a = acc.setdefault(key, [0, 0, 0])
        a[0] += s
        a[1] += k
        a[2] += 1
    return {key: Rate(*v) for key, v in acc.items()}


def api_rates(records: Iterable[tuple[Sequence[str], int, int]]) -> dict[str, Rate]:
    """Per API: pooled success over (apis, successes, samples) records; records with 0 samples are skipped."""
    rates = _pool(((a,), s, k) for apis, s, k in records if k for a in sorted(set(apis)))
    return {key[0]: r for key, r in rates.items()}


def pair_rates(records: Iterable[tuple[Sequence[str], int, int]]) -> dict[tuple[str, str], Rate]:
    """Per unordered API pair (sorted tuple): pooled success over the records whose set holds both."""
    return _pool((pair, s, k) for apis, s, k in records if k for pair in combinations(sorted(set(apis)), 2))


def hardest_apis(rates: dict[str, Rate], n: int = 10, min_tasks: int = 1) -> list[tuple[str, Rate]]:
    """The n APIs with the lowest success rate (ties: more samples first, then by name), over >= min_tasks tasks."""
    ok = [(a, r) for a, r in rates.items() if r.tasks >= min_tasks]
    return sorted(ok, key=lambda ar: (ar[1].rate, -ar[1].samples, ar[0]))[:n]


def batch_rewards(valid: Sequence[bool], rates: Sequence[float | None], sources: Sequence[str],
                  config: ProposerRewardConfig | None = None) -> list[float | None]:  # fmt: skip
    """The Proposer's reward per task of one batch: max(0, r_P(l) - repetition penalty) for a valid task, rho for an
    invalid one, None for a valid task whose l could not be measured (left out of the update)."""
    config = config or ProposerRewardConfig()
    if not len(valid) == len(rates) == len(sources):
        raise ValueError(f"batch_rewards: {len(valid)} valid flags, {len(rates)} rates, {len(sources)} sources")
    raw = [proposer_reward(v, lm, config.rho) for v, lm in zip(valid, rates)]
    return penalised_rewards(raw, [s if v else None for v, s in zip(valid, sources)], config)
