"""Pins the private TRL surface the trainers override, so a TRL upgrade that moves it fails here, loudly."""

import inspect

import trl
from trl import GRPOTrainer

from kernelzero.trainers.coder import CoderGRPOTrainer
from kernelzero.trainers.proposer import ProposerGRPOTrainer


def test_trl_version_is_the_pinned_one():
    assert trl.__version__ == "1.16.0", "the CA-GRPO hook overrides a private TRL method: re-check it, then re-pin"


def test_calculate_rewards_signature_is_pinned():
    sig = inspect.signature(GRPOTrainer._calculate_rewards)
    assert list(sig.parameters) == ["self", "inputs", "prompts", "completions", "completion_ids_list"]
    for ours in (CoderGRPOTrainer, ProposerGRPOTrainer):
        assert inspect.signature(ours._calculate_rewards) == sig


def test_calculate_rewards_still_gathers_and_feeds_the_advantages():
    # Our override relies on two facts of TRL 1.16: the base method returns the matrix gathered over processes, and
    # its caller turns exactly that matrix into advantages with the reward weights.
    base = inspect.getsource(GRPOTrainer._calculate_rewards)
    assert "rewards_per_func = gather(rewards_per_func)" in base
    caller = inspect.getsource(GRPOTrainer._generate_and_score_completions)
    assert "rewards_per_func = self._calculate_rewards(inputs, prompts, completions, completion_ids_list)" in caller
    assert "rewards_per_func * self.reward_weights" in caller
    assert "unscorable_mask = torch.isnan(rewards_per_func).all(dim=1)" in caller


def test_activation_checkpointing_reaches_trl_under_this_transformers_name(tmp_path):
    """`checkpointing_kwarg` names the switch as the installed transformers wants it; TRL reads
    `args.gradient_checkpointing` either way, so both values must arrive there."""
    from trl import GRPOConfig

    from kernelzero.trainers.config import checkpointing_kwarg

    for on in (True, False):
        args = GRPOConfig(output_dir=str(tmp_path), use_cpu=True, bf16=False, report_to="none",
                          **checkpointing_kwarg(on))  # fmt: skip
        assert args.gradient_checkpointing is on
