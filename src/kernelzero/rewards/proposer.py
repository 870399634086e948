"""The Proposer's reward: R-Zero's uncertainty reward, a penalty for invalid tasks, and a near-duplicate penalty.

For a valid task m on which k Coder samples were judged, l(m) is their mean correctness and

    r_P(m) = 1 - 2 * |l(m) - 0.5|        (1 at the frontier l = 0.5, 0 when the Coder always or never succeeds)

An invalid task gets rho < 0. So that the Proposer cannot farm one frontier task, valid tasks that are near-duplicates
of others in the same batch pay `weight * (|C| - 1) / B`, where C is the task's duplicate cluster and B the batch
size, and the result is floored at 0 as in R-Zero (a duplicated valid task never scores below a unique invalid one).
Departure from R-Zero: it charges |C| / B, which also taxes unique tasks by 1/B; (|C| - 1) leaves them untouched.

Near-duplicate means: Jaccard similarity of token n-gram sets >= threshold, after dropping comments and docstrings
and renaming local identifiers, so renaming variables or reformatting does not make a task new. Clusters are the
connected components of that relation (single linkage).
"""

from __future__ import annotations

import builtins
import io
import keyword
import re
import tokenize
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

# Names kept verbatim by the normaliser: they say which APIs a task calls, which is what makes two tasks differ.
_KEPT_NAMES = frozenset(keyword.kwlist) | frozenset(dir(builtins)) | {"torch", "nn", "F", "self", "Model"}
_FALLBACK_TOKEN = re.compile(r"\w+|[^\w\s]")


@dataclass(frozen=True)
class ProposerRewardConfig:
    """Hyper-parameters of the Proposer reward."""

    rho: float = -0.5
    """Reward of an invalid task (must be < 0, below every valid task's reward)."""
    duplicate_threshold: float = 0.8
    """Jaccard similarity of normalised token n-grams at or above which two valid tasks are near-duplicates."""
    duplicate_weight: float = 1.0
    """Scale of the repetition penalty weight * (|C| - 1) / B; 0 turns it off."""
    ngram: int = 3
    """n of the token n-grams compared."""

    def __post_init__(self) -> None:
        if not self.rho < 0:
            raise ValueError(f"ProposerRewardConfig.rho must be < 0, got {self.rho!r}")
        if not 0.0 < self.duplicate_threshold <= 1.0:
            raise ValueError(
                f"ProposerRewardConfig.duplicate_threshold must be in (0, 1], got {self.duplicate_threshold!r}"
            )
        if self.duplicate_weight < 0:
            raise ValueError(f"ProposerRewardConfig.duplicate_weight must be >= 0, got {self.duplicate_weight!r}")
        if self.ngram < 1:
            raise ValueError(f"ProposerRewardConfig.ngram must be >= 1, got {self.ngram!r}")


def frontier_reward(success_rate: float) -> float:
    """r_P = 1 - 2 * |l - 0.5| for a Coder success rate l in [0, 1]."""
    if not 0.0 <= success_rate <= 1.0:
        raise ValueError(f"success rate must be in [0, 1], got {success_rate!r}")
    return 1.0 - 2.0 * abs(success_rate - 0.5)


def tally(correct: Sequence[bool | None]) -> tuple[int, int]:
    """(successes, scored samples) of judged samples; None entries (unscored: an infra failure says nothing about
    the candidate) are not counted at all."""
    scored = [c for c in correct if c is not None]
    return sum(bool(c) for c in scored), len(scored)


def mean_correct(correct: Sequence[bool | None]) -> float | None:
    """l(m), the mean correctness of the k Coder samples judged on a task; None entries (unscored) are left out, and
    with none scored l is None (unmeasured, not 0). CA-GRPO's acc(G) is the same mean over a group of rollouts."""
    successes, scored = tally(correct)
    return successes / scored if scored else None


def proposer_reward(valid: bool, success_rate: float | None, rho: float) -> float | None:
    """r_P for a valid task, rho for an invalid one, None when a valid task's success rate could not be measured
    (every Coder sample hit an infra failure): that task is left out of the reward, not scored."""
    if not valid:
        return rho
    if success_rate is None:
        return None
    return frontier_reward(success_rate)


def normalised_tokens(source: str) -> list[str]:
    """Tokens of a Python source without comments, docstrings or layout, local identifiers renamed to `ID`."""
    try:
        toks = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return _FALLBACK_TOKEN.findall(re.sub(r"#[^\n]*", "", source))
    out: list[str] = []
    prev2 = prev = ""
    statement_start = True
    for tok in toks:
        if tok.type in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
            statement_start = True
            continue
        if tok.type in (tokenize.COMMENT, tokenize.NL):
            continue
        if tok.type == tokenize.ENDMARKER:
            break
        if tok.type == tokenize.STRING and statement_start:  # a docstring (or another bare string statement)
            continue
        text = tok.string
        attribute = prev == "." and prev2 != "self"  # `torch.relu` names an API; `self.conv` is a local name
        if tok.type == tokenize.NAME and not attribute and text not in _KEPT_NAMES:
            text = "ID"
        out.append(text)
        prev2, prev = prev, tok.string
        statement_start = False
    return out


def ngram_set(tokens: Sequence[str], n: int) -> frozenset[tuple[str, ...]]:
    """The set of token n-grams (the whole sequence as one gram when it is shorter than n)."""
    if len(tokens) < n:
        return frozenset({tuple(tokens)})
    return frozenset(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


def jaccard(a: frozenset, b: frozenset) -> float:
    """|a & b| / |a | b|; 1.0 for two empty sets."""
    union = len(a | b)
    return len(a & b) / union if union else 1.0


def duplicate_clusters(sources: Sequence[str | None], threshold: float, ngram: int = 3) -> list[int | None]:
    """Cluster id per source (None for None entries, e.g. invalid tasks), near-duplicates sharing an id.

    Single-linkage over all pairs: O(B^2) similarity computations, fine for the Proposer's batch sizes (tens).
    """
    grams = {i: ngram_set(normalised_tokens(s), ngram) for i, s in enumerate(sources) if s is not None}
    parent = {i: i for i in grams}

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    keys = sorted(grams)
    for a_pos, a in enumerate(keys):
        for b in keys[a_pos + 1 :]:
            if jaccard(grams[a], grams[b]) >= threshold:
                parent[root(b)] = root(a)
    return [root(i) if i in grams else None for i in range(len(sources))]


def repetition_penalties(clusters: Sequence[int | None], weight: float) -> list[float]:
    """weight * (|C| - 1) / B per entry (0 for unclustered entries), B = len(clusters)."""
    sizes = Counter(c for c in clusters if c is not None)
    batch = len(clusters)
    return [0.0 if c is None else weight * (sizes[c] - 1) / batch for c in clusters]


def penalised_rewards(
    rewards: Sequence[float | None], valid_sources: Sequence[str | None], config: ProposerRewardConfig
) -> list[float | None]:
    """The batch's final Proposer rewards: max(0, r_P - penalty) for valid tasks; rho and None pass through.

    rewards: one per proposed task (from `proposer_reward`); valid_sources: the task source where the task was valid,
    else None. Both in batch order.
    """
    if len(rewards) != len(valid_sources):
        raise ValueError(f"{len(rewards)} rewards but {len(valid_sources)} sources")
    clusters = duplicate_clusters(valid_sources, config.duplicate_threshold, config.ngram)
    penalties = repetition_penalties(clusters, config.duplicate_weight)
    out: list[float | None] = []
    for r, src, pen in zip(rewards, valid_sources, penalties, strict=True):
        out.append(r if r is None or src is None else max(0.0, r - pen))
    return out
