"""The API-set sampler: distinct pairs and triples of vocabulary APIs drawn from mined co-occurrence, by seed.

The paper prompts the Proposer with a pool of 4,000 API sets, half pairs and half triples, sampled from a
co-occurrence distribution. Ours, for `n` sets:

- pair weight `w(a, b) = (count(a, b) + smoothing) ** temperature`. Departure from a raw count: real code is
  dominated by a few pairs (`op.add` with `op.mul` alone: 1,444 of the ~7,000 classes mined), so counts are
  flattened (temperature 0.5) and every pair keeps a small chance (smoothing 0.02; over the packaged counts,
  pairs never seen together hold ~9% of the weight), else ops that real code uses alone (most losses, rare
  activations) could never be drawn;
- a triple is a pair drawn by `w`, plus a third API `c` drawn by `sqrt(w(a, c) * w(b, c))` (ops used with both);
- coverage first: each vocabulary API (in seeded order) that no set holds yet gets a set built around it, pairs
  and triples alternating, so the pool holds every API (guaranteed when `n` is at least the vocabulary size);
- then sets are drawn by weight until exactly `n // 2` pairs and `n - n // 2` triples exist; a set already drawn
  (or listed in `avoid`) is drawn again, so every set is distinct;
- the result is shuffled by the seed, so any prefix is a fair sample. Same inputs and seed, same output.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import accumulate, combinations
from math import comb, sqrt

from kernelzero.apis.mine import CoOccurrence
from kernelzero.apis.vocab import VOCABULARY, check_names


@dataclass(frozen=True)
class SamplerConfig:
    """How API sets are drawn; defaults reproduce the paper's pool of 4,000 (half pairs, half triples)."""

    n: int = 4000
    """Number of API sets."""
    seed: int = 0
    """Random seed: the same seed, counts and vocabulary give the same sets in the same order."""
    pair_fraction: float = 0.5
    """Share of pairs; the rest are triples (the paper: half and half)."""
    smoothing: float = 0.02
    """Pseudo-count added to every pair, so pairs never seen together keep a small chance."""
    temperature: float = 0.5
    """Exponent applied to pair counts: below 1 flattens the few very common pairs."""
    exclude: tuple[str, ...] = ()
    """APIs never to draw (any spelling of a vocabulary entry)."""
    cover: bool = True
    """Build one set around every API no set holds yet before drawing the rest (coverage pass)."""

    def __post_init__(self) -> None:
        if self.n < 0:
            raise ValueError(f"n must be >= 0, got {self.n}")
        if not 0.0 <= self.pair_fraction <= 1.0:
            raise ValueError(f"pair_fraction must be in [0, 1], got {self.pair_fraction}")
        if self.smoothing <= 0:
            raise ValueError(f"smoothing must be > 0 (else unseen APIs cannot be drawn), got {self.smoothing}")
        if self.temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {self.temperature}")


class _Weights:
    """Pair weights over the allowed APIs, with the draws the sampler needs."""

    def __init__(self, co: CoOccurrence, apis: list[str], config: SamplerConfig):
        self.apis = apis
        self.w = {
            (a, b): (co.pair(a, b) + config.smoothing) ** config.temperature for a, b in combinations(apis, 2)
        }  # keys in `apis` order: a before b
        self.pairs = list(self.w)
        self.cum = list(accumulate(self.w.values()))

    def get(self, a: str, b: str) -> float:
        return self.w.get((a, b)) or self.w[(b, a)]

    def draw_pair(self, rng: random.Random) -> tuple[str, str]:
        return rng.choices(self.pairs, cum_weights=self.cum)[0]

    def draw_partner(self, rng: random.Random, given: tuple[str, ...]) -> str:
        """An API not in `given`, weighted by the geometric mean of its pair weights with each given API."""
        others = [c for c in self.apis if c not in given]
        weights = [_geomean([self.get(g, c) for g in given]) for c in others]
        return rng.choices(others, weights=weights)[0]


def _geomean(xs: list[float]) -> float:
    return xs[0] if len(xs) == 1 else sqrt(xs[0] * xs[1])


def sample_api_sets(
    co: CoOccurrence, config: SamplerConfig = SamplerConfig(), avoid: Iterable[Iterable[str]] = ()
) -> list[tuple[str, ...]]:
    """`config.n` distinct API sets (each a sorted tuple of 2 or 3 vocabulary entries); see the module docstring.

    `avoid` lists sets that must not be drawn (e.g. sets already in a pool). Raises a one-line ValueError for an
    unknown excluded API or when that many distinct sets do not exist over the allowed APIs.
    """
    excluded = set(check_names(config.exclude, what="excluded API"))
    apis = [a for a in VOCABULARY if a not in excluded]
    n_pairs = int(config.n * config.pair_fraction)  # floor: n // 2 pairs at the default 0.5
    n_triples = config.n - n_pairs
    taken = {tuple(sorted(check_names(s, what="API in an avoided set"))) for s in avoid}
    free_pairs = comb(len(apis), 2) - sum(len(s) == 2 and not excluded & set(s) for s in taken)
    free_triples = comb(len(apis), 3) - sum(len(s) == 3 and not excluded & set(s) for s in taken)
    if n_pairs > free_pairs or n_triples > free_triples:
        raise ValueError(
            f"cannot draw {n_pairs} distinct pairs and {n_triples} triples from {len(apis)} allowed APIs "
            f"({free_pairs} pairs, {free_triples} triples available)"
        )
    rng = random.Random(config.seed)
    weights = _Weights(co, apis, config)
    out: list[tuple[str, ...]] = []
    quota = {2: n_pairs, 3: n_triples}

    def add(s: tuple[str, ...]) -> bool:
        key = tuple(sorted(s))
        if key in taken or quota[len(key)] == 0:
            return False
        taken.add(key)
        quota[len(key)] -= 1
        out.append(key)
        return True

    if config.cover:
        order = apis[:]
        rng.shuffle(order)
        covered: set[str] = set()
        for a in order:
            if a in covered or quota[2] + quota[3] == 0:
                continue
            size = 2 if quota[2] >= quota[3] and quota[2] > 0 else 3
            for _ in range(100):  # a fresh set holding `a` (a few retries if the draw repeats a set)
                s: tuple[str, ...] = (a,)
                while len(s) < size:
                    s += (weights.draw_partner(rng, s),)
                if add(s):
                    covered.update(s)
                    break
    budget = 100 * (config.n + 10)  # draws; a weight table this flat never needs more than a few per set
    while quota[2] > 0 and budget > 0:
        add(weights.draw_pair(rng))
        budget -= 1
    while quota[3] > 0 and budget > 0:
        a, b = weights.draw_pair(rng)
        add((a, b, weights.draw_partner(rng, (a, b))))
        budget -= 1
    if quota[2] or quota[3]:
        raise ValueError(f"gave up after many repeated draws: {quota[2]} pairs and {quota[3]} triples still missing")
    rng.shuffle(out)
    return out


@dataclass(frozen=True)
class SampleSummary:
    """What a pool of API sets holds: how many of each size and which vocabulary APIs it misses."""

    sets: int
    pairs: int
    triples: int
    distinct: int
    covered: int
    vocabulary: int
    missing: tuple[str, ...]


def summarize(sets: list[tuple[str, ...]], exclude: Iterable[str] = ()) -> SampleSummary:
    """Counts for a pool, against the vocabulary minus `exclude`."""
    allowed = [a for a in VOCABULARY if a not in set(check_names(exclude, what="excluded API"))]
    present = {a for s in sets for a in s}
    return SampleSummary(
        sets=len(sets),
        pairs=sum(len(s) == 2 for s in sets),
        triples=sum(len(s) == 3 for s in sets),
        distinct=len({tuple(sorted(s)) for s in sets}),
        covered=sum(a in present for a in allowed),
        vocabulary=len(allowed),
        missing=tuple(a for a in allowed if a not in present),
    )
