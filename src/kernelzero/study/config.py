"""The learning study's configuration: its sizes (`StudyConfig`, with the GPU and smoke presets) and its arms.

Every number that decides a result is fixed here before any run, the SFT stopping rule among them: SFT stops when
the validation loss (on held-out training-pair examples) has not improved by more than `sft_min_improvement` for
`sft_patience` evaluations in a row, or at `sft_max_steps`, and keeps the best checkpoint. RL is then measured from
that start, never from one stopped early by hand. No torch import: the CLI checks arguments against this module.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from kernelzero.loop.config import EXECUTION_FIELDS
from kernelzero.roles.coder import PROMPTS
from kernelzero.study.family import FamilyConfig
from kernelzero.study.models import StudyModelConfig, smoke_models

SFT_SCHEDULERS = ("constant_with_warmup", "cosine")
SFT_KEEP = ("best", "last")


@dataclass(frozen=True)
class Arm:
    """One arm: CA-GRPO's gate (alpha, beta of `rewards.config.GateConfig`) and whether the Proposer trains."""

    alpha: float
    """Gate threshold on the group's accuracy; 0 opens the gate for every group (speed always counts)."""
    beta: float
    """Weight of the speedup term; 0 is a correctness-only reward."""
    train_proposer: bool = True
    """False: the Proposer keeps its cold-started weights (`loop.train_proposer`)."""


ARMS = {
    "main": Arm(alpha=0.5, beta=0.1),  # CA-GRPO as in the paper
    "correctness_only": Arm(alpha=0.5, beta=0.0),
    "always_speed": Arm(alpha=0.0, beta=0.1),  # no gate: a correct rollout's speed counts in every group
    "frozen_proposer": Arm(alpha=0.5, beta=0.1, train_proposer=False),
}
"""The arms of the study, by their `--arm` name."""


@dataclass(frozen=True)
class StudyConfig:
    """Sizes and schedules of one study. Defaults are the H200 run, sized by estimate and not yet measured there
    (`kernelzero study --config FILE` changes any field); `smoke_config()` is the CPU smoke test."""

    smoke: bool = False
    """A smoke run: every stage at toy size on CPU; its numbers mean nothing (the report says so)."""
    device: str = "auto"
    """Judge, validator and trainers: auto (CUDA when present), cpu or cuda."""
    family: FamilyConfig = field(default_factory=FamilyConfig)
    """Task shapes."""
    train_tasks: int = 1024
    """Training-pair tasks whose writer solutions are judged for the Coder's corpus."""
    proposer_tasks: int = 512
    """Of those, how many are validated for the Proposer's cold-start set."""
    loop_tasks: int = 512
    """Training-pair tasks that fill each Coder phase besides the Proposer's: the family's next ones after the
    corpus's (`family.train_tasks` indices train_tasks .. train_tasks + loop_tasks), instances SFT never saw (about
    40% of them compositions or orders the corpus never names). RL is then rewarded for what carries over to new
    compositions, not for replaying the SFT corpus: in the first H100 run the loop drew the corpus's own tasks, the
    Coder's training pass rate stayed flat (round means 0.430, 0.443) and test pass@1 went 9.4% -> 10.5%, with 43%
    of test samples failing on a NameError (a new composition's function named as a memorised one)."""
    test_tasks: int = 64
    """Test-pair tasks of the evaluation (the study's minimum is 64)."""
    proposer_eval_sets: int = 64
    """The Proposer's evaluation: one task for each of this many fixed training API sets (`corpus/api_sets.txt`'s
    first), validated, after SFT and after each round. Its training batches draw other API sets at each step, whose
    difficulty moves their valid share more than the model does; fixed sets do not."""
    proposer_eval_samples: int = 1
    """Tasks per fixed API set in the Proposer's evaluation (each sampled apart, all validated). One per set moves
    9-25 points of valid share with the sampling seed alone (`bench/study_proposer_proxy.py`: 15.6-29.7% for one
    Proposer over five seeds), more than the 8-9 points 8 Proposer batches gained there; 4 halve that noise. The default
    is what studies ran with before this field existed (a folder pinned then resumes: `pin_config`)."""
    models: StudyModelConfig = field(default_factory=StudyModelConfig)
    """Tokenizer and decoder sizes."""
    prompts: str = "brief"
    """Both roles' prompts in SFT, evaluation and the loop (`roles.coder.PROMPTS`). `brief`: the task or API set
    alone. On 2 CPU cores a 1.3M-parameter Coder trained 500 steps on the full prompts (rules and a worked example,
    about 1,050 tokens) wrote no correct kernel (0 of 16 test samples, 0 of 16 rollouts in the loop); trained 1,200
    steps on brief prompts (about 150 tokens; three times the steps per minute) it wrote 9 of 32 unseen training-pair
    tasks and 6 of 32 test-pair tasks exactly as the writer does (greedy)."""
    val_fraction: float = 0.1
    """Share of each role's SFT examples held out for the validation loss of the stopping rule."""
    sft_lr: float = 1e-3
    sft_scheduler: str = "constant_with_warmup"
    """SFT's learning-rate schedule after its warm-up (transformers' names): `constant_with_warmup`, or `cosine`,
    decaying to 0 at `sft_max_steps` (a run the plateau rule stops early stops at a higher rate)."""
    sft_keep: str = "best"
    """Which SFT weights start RL. `best`: the checkpoint of the lowest validation loss, training stopped by the
    plateau rule (`sft_patience`); `last`: all `sft_max_steps` steps and their final weights, the validation loss
    only recorded. On the CPU proxy the validation loss was a poor guide: a cosine run's lowest-loss checkpoint
    (step 1,300, loss 0.040) wrote 18% of test tasks, its last (step 3,000, loss 0.045) 30% (bench/README)."""
    sft_batch: int = 16
    sft_max_steps: int = 3000
    sft_eval_every: int = 50
    """Steps between validation-loss evaluations (and checkpoints: the best one is kept)."""
    sft_patience: int = 4
    """Evaluations in a row without an improvement > sft_min_improvement that stop SFT."""
    sft_min_improvement: float = 0.01
    """Relative improvement of the best validation loss that counts (1%)."""
    eval_samples: int = 4
    """Samples per test task: pass@1 is the unbiased estimate from these."""
    eval_temperature: float = 1.0
    """Sampling temperature of the evaluations, and of everything the loop samples (both roles' GRPO rollouts, the
    Proposer's task batch, the frozen Coder's l(m) samples): the study measures the policy it trains."""
    eval_batch: int = 64
    max_new_tokens: int = 512
    """Token cap of every Coder and Proposer completion (a writer solution is about 300 tokens)."""
    rounds: int = 3
    """Co-evolution rounds."""
    coder_steps: int = 20
    """Coder GRPO steps per round (the paper's 20)."""
    coder_batch: int = 32
    """Coder completions per GRPO step (coder_batch / rl_generations tasks)."""
    proposer_steps: int = 10
    """Proposer GRPO steps per round: fewer than the Coder's, because every valid proposal costs coder_k Coder
    generations for l(m), one task at a time."""
    proposer_batch: int = 16
    """Proposer completions per GRPO step."""
    rl_generations: int = 8
    """Group size G of both roles."""
    rl_lr: float = 5e-5
    """GRPO learning rate of both roles: higher than a 7B model's 1e-6, as small models take larger steps. A CPU
    rehearsal (the 1.3M model, one seed, 2 rounds of 8 Coder steps x 16 rollouts) from test pass@1 0.047 after SFT:
    5e-5 ended at 0.094 (12 of 128 samples ok, against 6), 5e-4 at 0.031 (format errors 38 -> 59 of 128)."""
    rl_iterations: int = 1
    """GRPO's mu (TRL's `num_iterations`): optimizer updates per judged batch, each after the first with the clipped
    importance ratio against the sampling policy. Judging is nearly all of a step's cost (14.5 s a Coder step of 64
    rollouts on the H100, the update a fraction of a second), so mu > 1 takes more learning from each judged batch.
    `coder_steps` and `proposer_steps` count judged batches; the trainers run mu times as many updates."""
    rl_warmup_steps: int = 0
    """Linear learning-rate warm-up of each GRPO phase, in judged batches (every phase starts a fresh optimizer).
    Without it Adam's first update moves every weight by about the learning rate whatever the gradient's size (its
    moment estimates hold one noisy batch)."""
    api_sets_per_round: int = 16
    """API sets of a round (the Proposer phase's prompts and the task batch)."""
    proposer_sets_per_round: int | None = None
    """API sets the Proposer phase draws a round (None: `api_sets_per_round`; at least that many, whose first
    `api_sets_per_round` also make the task batch). The phase asks each set G times: `proposer_steps` x
    `proposer_batch` / G sets use each once. On CPU (`bench/study_proposer_proxy.py`) 16 batches of 32 over fresh sets
    ended at 33.8% valid (RL seeds 32.5-35.0%), the same 16 batches cycling 16 sets at 31.8% (26.6-36.9%)."""
    loop_skips_eval_sets: bool = False
    """The loop draws its API sets after the Proposer evaluation's (`corpus/api_sets.txt` past its first
    `proposer_eval_sets`, written to `loop_api_sets.txt`), so that evaluation asks for sets RL never prompted
    (SFT's tasks cover them all). False: from the file's start, as studies before this field did."""
    coder_k: int = 2
    """Frozen-Coder samples per valid proposed task for l(m)."""
    judge_trials: int = 3
    judge_workers: int | None = None
    judge_slots: int | None = None
    """Live candidate workers per GPU of every stage's judge (`RunConfig.judge_slots`; default: the pool's, 4 on an
    80 GB H100, 8 on an H200). The family's tasks are a few MB: on the H100, 4 slots kept each verdict waiting 2.6 s
    (median) for one while the 16 cores were 6-40% busy."""

    def __post_init__(self) -> None:
        if self.device not in ("auto", "cpu", "cuda"):
            raise ValueError(f"StudyConfig.device must be auto, cpu or cuda, got {self.device!r}")
        if self.prompts not in PROMPTS:
            raise ValueError(f"StudyConfig.prompts must be one of {', '.join(PROMPTS)}, got {self.prompts!r}")
        if not 0.0 < self.val_fraction < 1.0:
            raise ValueError(f"StudyConfig.val_fraction must be in (0, 1), got {self.val_fraction!r}")
        if self.sft_scheduler not in SFT_SCHEDULERS:
            raise ValueError(f"StudyConfig.sft_scheduler must be one of {', '.join(SFT_SCHEDULERS)}, "
                             f"got {self.sft_scheduler!r}")  # fmt: skip
        if self.sft_keep not in SFT_KEEP:
            raise ValueError(f"StudyConfig.sft_keep must be one of {', '.join(SFT_KEEP)}, got {self.sft_keep!r}")
        if self.rl_warmup_steps < 0:
            raise ValueError(f"StudyConfig.rl_warmup_steps must be >= 0, got {self.rl_warmup_steps!r}")
        if self.proposer_sets_per_round is not None and self.proposer_sets_per_round < self.api_sets_per_round:
            raise ValueError(f"StudyConfig.proposer_sets_per_round must be >= api_sets_per_round "
                             f"({self.api_sets_per_round}), got {self.proposer_sets_per_round!r}")  # fmt: skip
        for name in ("rounds", "train_tasks", "loop_tasks", "test_tasks", "eval_samples", "sft_patience",
                     "rl_iterations", "proposer_eval_sets", "proposer_eval_samples"):
            if getattr(self, name) < 1:
                raise ValueError(f"StudyConfig.{name} must be >= 1, got {getattr(self, name)!r}")


def pin_config(out: str | Path, config: StudyConfig) -> None:
    """Write `out/study_config.json`, or check that `config` is the one the folder was started with (ValueError
    naming the fields that differ): stages done with other sizes would be skipped as done, and the report would mix
    two studies in one table. The judge's workers and slots (`EXECUTION_FIELDS`) may differ: they set how fast,
    not what is judged; the file keeps the first values."""
    path = Path(out) / "study_config.json"
    mine = _as_json(config)
    if path.is_file():
        old = json.loads(path.read_text(encoding="utf-8"))
        # a field added to StudyConfig after the folder was started is the same study while it keeps its default,
        # which is what that study ran with: a new option never strands a study part-way (`field_mismatch`)
        diff = field_mismatch(old, config, tuple(sorted((set(old) | set(mine)) - set(EXECUTION_FIELDS))))
        if diff:
            raise ValueError(f"{out} holds a study with other settings ({', '.join(diff)}): use another --out, or "
                             "the same settings")  # fmt: skip
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(mine, indent=2) + "\n", encoding="utf-8")


CORPUS_FIELDS = ("smoke", "device", "family", "train_tasks", "proposer_tasks", "test_tasks", "judge_trials")
"""The fields the corpus stage depends on (its tasks, the judge that passed them): another study with these equal
may start from the same corpus (`kernelzero study --corpus-from`) and differ in everything after it."""


SFT_FIELDS = (*CORPUS_FIELDS, "models", "prompts", "val_fraction", "sft_lr", "sft_scheduler", "sft_keep",
              "sft_batch", "sft_max_steps", "sft_eval_every", "sft_patience", "sft_min_improvement")
"""The fields a seed's SFT depends on besides its seed: another study with these equal may start a seed from that
seed's SFT weights (`kernelzero study --sft-from`) and differ in the loop and what comes after it."""
EVAL_FIELDS = ("eval_samples", "eval_temperature", "eval_batch", "max_new_tokens")
"""The fields the Coder's evaluation depends on besides its weights and seed (the batch: rows share a generate
call's random stream)."""
PROPOSER_EVAL_FIELDS = ("proposer_eval_sets", "proposer_eval_samples", "eval_temperature", "eval_batch",
                        "max_new_tokens")  # fmt: skip
"""The fields the Proposer's evaluation depends on besides its weights and seed."""


def field_mismatch(theirs: dict, config: StudyConfig, fields: tuple[str, ...] = CORPUS_FIELDS) -> list[str]:
    """The `fields` in which a study config written as JSON (`study_config.json`) differs from `config` (a field
    that config predates counts at its default, as in `pin_config`)."""
    mine, default = _as_json(config), _as_json(StudyConfig())
    return [k for k in fields if theirs.get(k, default.get(k)) != mine.get(k)]


def _as_json(config: StudyConfig) -> dict:
    """`config` as `study_config.json` holds it (tuples as lists, other values as their strings)."""
    return json.loads(json.dumps(asdict(config), default=str))


def smoke_config(rounds: int = 1) -> StudyConfig:
    """Every stage at toy size on CPU (Triton interpreter, tiny model, a handful of tasks): a few minutes on 2 cores."""
    return StudyConfig(smoke=True, device="cpu", family=FamilyConfig(rows=(64, 64), cols=(64, 64)), train_tasks=4,
                       proposer_tasks=4, loop_tasks=4, test_tasks=2, proposer_eval_sets=2, proposer_eval_samples=2,
                       models=smoke_models(),
                       val_fraction=0.25,
                       sft_lr=3e-3, sft_batch=2, sft_max_steps=4, sft_eval_every=2, sft_patience=2, eval_samples=4,
                       eval_batch=8, max_new_tokens=24, rounds=rounds, coder_steps=1, coder_batch=4, proposer_steps=1,
                       proposer_batch=4, rl_generations=2, api_sets_per_round=2, loop_skips_eval_sets=True,
                       coder_k=1, judge_trials=1, judge_workers=2)  # fmt: skip


__all__ = ["ARMS", "CORPUS_FIELDS", "EVAL_FIELDS", "PROPOSER_EVAL_FIELDS", "SFT_FIELDS", "Arm", "StudyConfig",
           "field_mismatch", "pin_config", "smoke_config"]
