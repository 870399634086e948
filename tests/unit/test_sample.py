"""The API-set sampler: exact pair/triple counts, full coverage, distinct sets, reproducibility, exclusions."""

from collections import Counter

import pytest

from kernelzero.apis.mine import CoOccurrence, load_cooccurrence
from kernelzero.apis.sample import SamplerConfig, sample_api_sets, summarize
from kernelzero.apis.vocab import VOCABULARY


@pytest.fixture(scope="module")
def packaged():
    return load_cooccurrence()


@pytest.fixture(scope="module")
def pool(packaged):
    return sample_api_sets(packaged, SamplerConfig(n=4000, seed=0))


def test_paper_pool_shape(pool):
    sm = summarize(pool)
    assert (sm.sets, sm.pairs, sm.triples, sm.distinct) == (4000, 2000, 2000, 4000)
    assert (sm.covered, sm.vocabulary, sm.missing) == (len(VOCABULARY), len(VOCABULARY), ())
    assert all(s == tuple(sorted(s)) and len(set(s)) == len(s) for s in pool)
    assert all(a in VOCABULARY for s in pool for a in s)


def test_same_seed_same_output_other_seed_differs(packaged, pool):
    assert sample_api_sets(packaged, SamplerConfig(n=4000, seed=0)) == pool
    other = sample_api_sets(packaged, SamplerConfig(n=4000, seed=1))
    assert other != pool
    assert summarize(other).covered == len(VOCABULARY)


def test_odd_n_and_pair_fraction(packaged):
    for n in (301, 303):
        sm = summarize(sample_api_sets(packaged, SamplerConfig(n=n, seed=3)))
        assert (sm.pairs, sm.triples) == (n // 2, n - n // 2)
    sm = summarize(sample_api_sets(packaged, SamplerConfig(n=200, seed=3, pair_fraction=0.0)))
    assert (sm.pairs, sm.triples) == (0, 200)


def test_exclusions_in_any_spelling(packaged):
    sets = sample_api_sets(packaged, SamplerConfig(n=400, seed=0, exclude=("nn.ReLU", "op.add")))
    present = {a for s in sets for a in s}
    assert "F.relu" not in present and "op.add" not in present
    assert summarize(sets, exclude=("F.relu", "op.add")).covered == len(VOCABULARY) - 2
    with pytest.raises(ValueError, match="unknown excluded API 'F.nope'"):
        sample_api_sets(packaged, SamplerConfig(n=4, exclude=("F.nope",)))


def test_avoid_sets_are_never_drawn(packaged):
    first = sample_api_sets(packaged, SamplerConfig(n=200, seed=0))
    second = sample_api_sets(packaged, SamplerConfig(n=200, seed=0), avoid=first)
    assert not set(first) & set(second)


def tiny_counts(strong=1000):
    apis = {a: 0 for a in VOCABULARY}
    apis.update({"op.add": strong, "op.mul": strong})
    return CoOccurrence(apis, {("op.add", "op.mul"): strong}, classes=strong)


def test_weights_follow_counts():
    # One pair seen 1000 times and nothing else; with little smoothing and raw counts (temperature 1) it carries
    # ~99% of the weight, so free draws (no coverage pass) pick it first and build most triples around it.
    sharp = dict(cover=False, seed=5, smoothing=0.001, temperature=1.0)
    assert ("op.add", "op.mul") in sample_api_sets(tiny_counts(), SamplerConfig(n=2, pair_fraction=1.0, **sharp))
    triples = sample_api_sets(tiny_counts(), SamplerConfig(n=100, pair_fraction=0.0, **sharp))
    assert sum({"op.add", "op.mul"} <= set(t) for t in triples) > 90
    # With the default flattening the same pair is much less dominant: fewer triples hold it.
    flat = sample_api_sets(tiny_counts(), SamplerConfig(n=100, pair_fraction=0.0, cover=False, seed=5))
    assert sum({"op.add", "op.mul"} <= set(t) for t in flat) < 50


def test_impossible_requests_fail_in_one_line(packaged):
    allowed = ("op.add", "op.mul", "op.sub")
    exclude = tuple(a for a in VOCABULARY if a not in allowed)
    with pytest.raises(ValueError, match=r"cannot draw 2 distinct pairs and 2 triples from 3 allowed APIs"):
        sample_api_sets(packaged, SamplerConfig(n=4, exclude=exclude))
    sets = sample_api_sets(packaged, SamplerConfig(n=4, exclude=exclude, pair_fraction=0.75))
    assert Counter(len(s) for s in sets) == {2: 3, 3: 1}
    with pytest.raises(ValueError, match="smoothing must be > 0"):
        SamplerConfig(smoothing=0)
