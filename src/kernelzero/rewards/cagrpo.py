"""CA-GRPO, the Coder's correctness-gated reward, per group and over a gathered reward matrix.

For a group G of rollouts on one task, with c_i in {0, 1} and S_i the measured speedup over the eager reference:

    acc(G) = mean_i c_i            (over scored rollouts only: infra failures are left out, never counted as 0)
    T(G)   = acc(G) >= alpha
    r_i    = c_i * (1 + T(G) * beta * f(S_i))

Speed only counts once at least `alpha` of the group is correct, so the policy is never pulled toward fast-but-wrong
kernels. `gated_group_rewards` is the scalar reference, written to read like the paper; `gate_reward_matrix` is the
vectorised form the trainer applies to TRL's gathered (N, 2) matrix of [correct, speedup] columns, combined by TRL
with reward_weights [1, beta]. A test checks the two agree.

Departures from the paper, each named where it happens:
- f is configurable (`SpeedupShaping`): identity (the paper), clip, or log with a cap. An unclipped 50x "speedup" from
  a timing fluke would otherwise dominate every other rollout's advantage.
- Unscored rollouts (verdict `infra_error`, NaN in TRL's matrix) are excluded from acc(G) and stay NaN, so TRL leaves
  them out of the group baseline and gives them zero advantage.
- A correct rollout without a measured speedup (a CPU judge that checks but cannot time) gets no speed bonus.

The hyper-parameters (`GateConfig`, `SpeedupShaping`) live in `kernelzero.rewards.config`, free of torch, and are
re-exported here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from kernelzero.rewards.config import SHAPINGS, GateConfig, SpeedupShaping
from kernelzero.rewards.proposer import mean_correct


def shape_speedup(speedup: float, shaping: SpeedupShaping) -> float:
    """f(S) for one speedup (S > 0)."""
    if shaping.kind == "identity":
        return speedup
    if shaping.kind == "clip":
        return min(speedup, shaping.cap)
    return math.log(min(max(speedup, 1.0 / shaping.cap), shaping.cap))


def shape_speedup_tensor(speedup: torch.Tensor, shaping: SpeedupShaping) -> torch.Tensor:
    """f(S) elementwise; NaN stays NaN."""
    if shaping.kind == "identity":
        return speedup
    if shaping.kind == "clip":
        return speedup.clamp(max=shaping.cap)
    return speedup.clamp(min=1.0 / shaping.cap, max=shaping.cap).log()


def gated_group_rewards(
    correct: Sequence[bool | None], speedup: Sequence[float | None], config: GateConfig
) -> list[float | None]:
    """r_i for one group; None for unscored rollouts (correct is None). The scalar reference for the matrix form."""
    if len(correct) != len(speedup):
        raise ValueError(f"correct has {len(correct)} entries but speedup has {len(speedup)}")
    acc = mean_correct(correct)  # acc(G) over the scored rollouts; None when none was scored
    gate_open = acc is not None and acc >= config.alpha
    rewards: list[float | None] = []
    for c, s in zip(correct, speedup, strict=True):
        if c is None:
            rewards.append(None)
        elif not c:
            rewards.append(0.0)
        elif gate_open and s is not None:
            rewards.append(1.0 + config.beta * shape_speedup(s, config.shaping))
        else:
            rewards.append(1.0)
    return rewards


def gate_reward_matrix(raw: torch.Tensor, group_size: int, config: GateConfig) -> torch.Tensor:
    """Apply the gate to TRL's gathered reward matrix.

    raw: (N, 2) float, columns [correct, speedup], N = num_groups * group_size, each group's rows contiguous
         (TRL's RepeatSampler and `gather` guarantee this). correct is 0, 1 or NaN (unscored); speedup is the raw
         S_i, NaN where unknown. Returns (N, 2): column 0 unchanged, column 1 = c_i * T(G) * f(S_i), with 0 for a
         correct row whose speedup is unknown, and NaN exactly on the unscored rows. With weights [1, beta] TRL's
         weighted sum is then r_i = c_i * (1 + T(G) * beta * f(S_i)).
    """
    if raw.dim() != 2 or raw.shape[1] != 2:
        raise ValueError(f"expected an (N, 2) [correct, speedup] matrix, got shape {tuple(raw.shape)}")
    n = raw.shape[0]
    if group_size < 1 or n % group_size != 0:
        raise ValueError(f"{n} rows do not split into groups of {group_size}")
    correct, speedup = raw[:, 0], raw[:, 1]  # (N,), (N,)
    scored = ~torch.isnan(correct)  # (N,)
    if not torch.all((correct[scored] == 0) | (correct[scored] == 1)):
        raise ValueError("the correct column must hold 0, 1 or NaN")

    gate_rows = gate_open_per_group(raw, group_size, config.alpha).repeat_interleave(group_size)  # (N,)

    bonus = shape_speedup_tensor(speedup, config.shaping)  # (N,)
    bonus = torch.nan_to_num(bonus, nan=0.0)  # correct but untimed: no bonus
    keep = gate_rows & (correct == 1)  # (N,)
    gated_speedup = torch.where(keep, bonus, torch.zeros_like(bonus))  # (N,)
    gated_speedup = torch.where(scored, gated_speedup, torch.full_like(bonus, float("nan")))  # (N,)
    return torch.stack([correct, gated_speedup], dim=1)  # (N, 2)


def gate_open_per_group(raw: torch.Tensor, group_size: int, alpha: float) -> torch.Tensor:
    """T(G) per group as a bool (B,) tensor, from the correct column of an (N, 2) matrix; False for all-NaN groups."""
    correct = raw[:, 0].view(-1, group_size)  # (B, G)
    scored = ~torch.isnan(correct)  # (B, G)
    n_scored = scored.double().sum(dim=1)  # (B,)
    # float64 so that acc == alpha compares exactly as in the scalar reference (e.g. 7/10 against 0.7).
    acc = torch.where(scored, correct, torch.zeros_like(correct)).double().sum(dim=1) / n_scored.clamp(min=1)
    return (n_scored > 0) & (acc >= alpha)


def uninformative_groups(raw: torch.Tensor, group_size: int) -> torch.Tensor:
    """DAPO's dynamic-sampling filter: groups whose scored rollouts are all correct or all wrong, as a bool (B,).

    Decided on correctness, not on the shaped reward: an all-correct group still differs in speed, but normalising
    those small timing differences by their own small std turns measurement noise into unit-size advantages.
    Groups with fewer than two scored rollouts are uninformative too.
    """
    correct = raw[:, 0].view(-1, group_size)  # (B, G)
    scored = ~torch.isnan(correct)  # (B, G)
    n_scored = scored.sum(dim=1)  # (B,)
    n_correct = torch.where(scored, correct, torch.zeros_like(correct)).sum(dim=1)  # (B,)
    return (n_scored < 2) | (n_correct == 0) | (n_correct == n_scored)


def mask_groups(matrix: torch.Tensor, group_mask: torch.Tensor, group_size: int) -> torch.Tensor:
    """Set every row of the masked groups to NaN. matrix: (N, K); group_mask: (B,) bool. Returns (N, K).

    TRL treats an all-NaN row as unscorable: left out of the group baseline and given zero advantage.
    """
    rows = group_mask.repeat_interleave(group_size)  # (N,)
    return torch.where(rows.unsqueeze(1), torch.full_like(matrix, float("nan")), matrix)


__all__ = ["SHAPINGS", "GateConfig", "SpeedupShaping", "gate_open_per_group", "gate_reward_matrix",
           "gated_group_rewards", "mask_groups", "shape_speedup", "shape_speedup_tensor",
           "uninformative_groups"]  # fmt: skip
