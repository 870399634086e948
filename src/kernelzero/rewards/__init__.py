"""Rewards as pure functions: CA-GRPO for the Coder (`cagrpo`) and the frontier reward for the Proposer (`proposer`).

Trainers call these; nothing here knows about TRL, processes or the judge.
"""

from kernelzero.rewards.cagrpo import (
    GateConfig,
    SpeedupShaping,
    gate_open_per_group,
    gate_reward_matrix,
    gated_group_rewards,
    group_accuracy,
    mask_groups,
    shape_speedup,
    shape_speedup_tensor,
    uninformative_groups,
)
from kernelzero.rewards.proposer import (
    ProposerRewardConfig,
    duplicate_clusters,
    frontier_reward,
    penalised_rewards,
    proposer_reward,
    repetition_penalties,
)

__all__ = [
    "GateConfig",
    "ProposerRewardConfig",
    "SpeedupShaping",
    "duplicate_clusters",
    "frontier_reward",
    "gate_open_per_group",
    "gate_reward_matrix",
    "gated_group_rewards",
    "group_accuracy",
    "mask_groups",
    "penalised_rewards",
    "proposer_reward",
    "repetition_penalties",
    "shape_speedup",
    "shape_speedup_tensor",
    "uninformative_groups",
]
