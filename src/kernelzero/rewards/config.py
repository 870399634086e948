"""The hyper-parameters of CA-GRPO (`GateConfig`, with the speedup shaping f), apart from its maths: no torch.

The Coder phase config and `RunConfig` hold a `GateConfig`, and reading or validating a config must not import torch
(`kernelzero train --help`, config files checked before a run). The maths that uses them is in
`kernelzero.rewards.cagrpo`, which re-exports both. The Proposer reward's config stays beside its code in
`kernelzero.rewards.proposer`, which has no torch import.
"""

from __future__ import annotations

from dataclasses import dataclass, field

SHAPINGS = ("identity", "clip", "log")


@dataclass(frozen=True)
class SpeedupShaping:
    """The f in r_i = c_i * (1 + T * beta * f(S_i))."""

    kind: str = "identity"
    """identity: f(S) = S (the paper). clip: f(S) = min(S, cap). log: f(S) = log(clamp(S, 1/cap, cap)), which is
    0 at parity, negative for slowdowns and symmetric in ratio."""
    cap: float = 10.0
    """Upper bound on S for `clip` and `log` (and 1/cap lower bound for `log`). Unused by `identity`."""

    def __post_init__(self) -> None:
        if self.kind not in SHAPINGS:
            raise ValueError(f"SpeedupShaping.kind must be one of {SHAPINGS}, got {self.kind!r}")
        if not self.cap > 1.0:
            raise ValueError(f"SpeedupShaping.cap must be > 1, got {self.cap!r}")


@dataclass(frozen=True)
class GateConfig:
    """CA-GRPO hyper-parameters (paper defaults)."""

    alpha: float = 0.5
    """Gate threshold on the group's accuracy: speed counts only when acc(G) >= alpha."""
    beta: float = 0.1
    """Weight of the shaped speedup; the trainer passes it to TRL as reward_weights=[1, beta]."""
    shaping: SpeedupShaping = field(default_factory=SpeedupShaping)
    """The f applied to raw speedups."""

    def __post_init__(self) -> None:
        if not 0.0 <= self.alpha <= 1.0:
            raise ValueError(f"GateConfig.alpha must be in [0, 1], got {self.alpha!r}")
        if self.beta < 0.0:
            raise ValueError(f"GateConfig.beta must be >= 0, got {self.beta!r}")


__all__ = ["SHAPINGS", "GateConfig", "SpeedupShaping"]
