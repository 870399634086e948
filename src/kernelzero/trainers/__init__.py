"""TRL trainers for both roles and the phase runners the co-evolution loop calls.

`run_coder_phase` (CA-GRPO, `coder`), `run_proposer_phase` (frontier reward, `proposer`), `run_sft` (cold start,
`sft`). Each takes a dataclass config whose defaults run the tiny model on CPU, saves checkpoints under its
`output_dir` and resumes from them. Real-run presets: `presets`; launch commands: docs/training.md.
"""

from kernelzero.trainers.coder import (
    CoderGRPOTrainer,
    CoderPhaseConfig,
    CoderRewardRecord,
    build_coder_trainer,
    coder_answer,
    coder_dataset,
    coder_prompt,
    coder_step_metrics,
    run_coder_phase,
)
from kernelzero.trainers.coder_rewards import JudgeFn, VerdictLedger, make_coder_reward_funcs
from kernelzero.trainers.common import GRPOPhaseConfig, PhaseResult, resolve_resume
from kernelzero.trainers.proposer import (
    ProposalOutcome,
    ProposerGRPOTrainer,
    ProposerPhaseConfig,
    ProposerRewardRecord,
    build_proposer_trainer,
    run_proposer_phase,
)
from kernelzero.trainers.sft import SFTPhaseConfig, SolutionPair, build_sft_trainer, builtin_pairs, run_sft

__all__ = [
    "CoderGRPOTrainer",
    "CoderPhaseConfig",
    "CoderRewardRecord",
    "GRPOPhaseConfig",
    "JudgeFn",
    "PhaseResult",
    "ProposalOutcome",
    "ProposerGRPOTrainer",
    "ProposerPhaseConfig",
    "ProposerRewardRecord",
    "SFTPhaseConfig",
    "SolutionPair",
    "VerdictLedger",
    "build_coder_trainer",
    "build_proposer_trainer",
    "build_sft_trainer",
    "builtin_pairs",
    "coder_answer",
    "coder_dataset",
    "coder_prompt",
    "coder_step_metrics",
    "make_coder_reward_funcs",
    "resolve_resume",
    "run_coder_phase",
    "run_proposer_phase",
    "run_sft",
]
