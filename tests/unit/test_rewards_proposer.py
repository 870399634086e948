"""The Proposer reward: frontier reward, rho for invalid tasks, near-duplicate clusters and the repetition penalty."""

import pytest

from kernelzero.rewards.proposer import (
    ProposerRewardConfig,
    duplicate_clusters,
    frontier_reward,
    jaccard,
    ngram_set,
    normalised_tokens,
    penalised_rewards,
    proposer_reward,
    repetition_penalties,
)

TASK_A = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    """Conv then GELU."""

    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3)

    def forward(self, x):
        return torch.nn.functional.gelu(self.conv(x))

def get_inputs():
    return [torch.randn(8, 16, 32, 32)]

def get_init_inputs():
    return [16]
'''
# TASK_A with variables renamed, a comment and a different docstring: the same task.
TASK_A_RENAMED = (
    TASK_A.replace("self.conv", "self.layer")
    .replace("(self, x)", "(self, inp)")
    .replace("(self.conv(x))", "(self.layer(inp))")
    .replace("Conv then GELU.", "A convolution followed by an activation.")
    .replace("super().__init__()", "super().__init__()  # init the parent")
)
TASK_B = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.logsumexp(torch.matmul(a, b), dim=-1)

def get_inputs():
    return [torch.randn(64, 128), torch.randn(128, 256)]

def get_init_inputs():
    return []
"""


@pytest.mark.parametrize(("level", "r"), [(0.5, 1.0), (0.0, 0.0), (1.0, 0.0), (0.25, 0.5), (0.75, 0.5), (0.625, 0.75)])
def test_frontier_reward_peaks_at_half(level, r):
    assert frontier_reward(level) == pytest.approx(r)


def test_frontier_reward_rejects_rates_outside_unit_interval():
    with pytest.raises(ValueError):
        frontier_reward(1.25)


def test_invalid_tasks_get_rho_and_unmeasured_tasks_are_unscored():
    assert proposer_reward(False, 0.5, rho=-0.5) == -0.5
    assert proposer_reward(False, None, rho=-1.0) == -1.0
    assert proposer_reward(True, None, rho=-0.5) is None
    assert proposer_reward(True, 0.25, rho=-0.5) == 0.5
    with pytest.raises(ValueError, match="rho"):
        ProposerRewardConfig(rho=0.0)


def test_normaliser_drops_comments_docstrings_and_local_names_but_keeps_apis():
    toks = normalised_tokens(TASK_A)
    assert "Conv2d" in toks and "gelu" in toks and "torch" in toks
    assert "conv" not in toks and "x" not in toks and '"""Conv then GELU."""' not in toks
    assert normalised_tokens(TASK_A) == normalised_tokens(TASK_A_RENAMED)


def test_similarity_separates_renamed_copies_from_different_tasks():
    a, a2, b = (ngram_set(normalised_tokens(s), 3) for s in (TASK_A, TASK_A_RENAMED, TASK_B))
    assert jaccard(a, a2) == 1.0
    assert jaccard(a, b) < 0.5


def test_clusters_skip_invalid_entries_and_link_near_duplicates():
    clusters = duplicate_clusters([TASK_A, None, TASK_B, TASK_A_RENAMED], threshold=0.8)
    assert clusters[1] is None
    assert clusters[0] == clusters[3] != clusters[2]


def test_repetition_penalty_charges_only_the_extra_copies():
    # batch of 4: a cluster of 3 (each pays 2/4 * weight) and a singleton (pays 0); None pays 0
    assert repetition_penalties([0, 0, 0, 5], weight=1.0) == [0.5, 0.5, 0.5, 0.0]
    assert repetition_penalties([0, None, 0, 3], weight=0.5) == [0.125, 0.0, 0.125, 0.0]


def test_penalised_rewards_floor_at_zero_and_pass_rho_and_none_through():
    cfg = ProposerRewardConfig(rho=-0.5, duplicate_threshold=0.8, duplicate_weight=1.0)
    rewards = [1.0, 0.25, -0.5, 0.5, None]
    sources = [TASK_A, TASK_A_RENAMED, None, TASK_B, TASK_B.replace("dim=-1", "dim=1")]
    # A and A' form a cluster of 2 in a batch of 5: penalty 1/5 each; B and B' too (B' unscored but valid)
    out = penalised_rewards(rewards, sources, cfg)
    assert out == pytest.approx([0.8, 0.05, -0.5, 0.3, None])
    off = penalised_rewards(rewards, sources, ProposerRewardConfig(duplicate_weight=0.0))
    assert off == pytest.approx(rewards)
