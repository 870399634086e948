"""The run configuration of `kernelzero train`: one `RunConfig` with the phase configs nested, presets, YAML/JSON I/O.

Defaults are the embedded smoke run (tiny model, CPU, Triton interpreter, one round of a few steps). `preset("paper")`
is the paper's scale (Qwen2.5-Coder-7B-Instruct, 4 rounds x 20 GRPO steps per role). A file holds any subset of the
fields, nested like the dataclasses; `load_config` starts from a preset and overrides field by field, and every
error names the field path and what it accepts. Neither importing this module nor building a `RunConfig` imports
torch or TRL (the phase configs live in `kernelzero.trainers.config`, free of both).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelzero.curriculum.validate import ValidationConfig
from kernelzero.judge.options import BACKENDS, JudgeOptions
from kernelzero.roles.coder import PROMPTS
from kernelzero.trainers.config import CoderPhaseConfig, ProposerPhaseConfig
from kernelzero.trainers.presets import coder_preset, proposer_preset

PRESETS = ("tiny", "paper")
EXECUTION_FIELDS = ("judge_workers", "judge_slots")
"""`RunConfig` fields that set how fast the judge works, never what it decides: a run (and a learning study, whose
`StudyConfig` has the same two) resumes with other values of them (`outcome_dict`)."""


def _coder_default() -> CoderPhaseConfig:
    # 2 steps x 8 rollouts (2 tasks x 4 per step): every seed task is met once, and the phase has a checkpoint to
    # resume from inside it. The completions table is not printed (verdicts.jsonl holds every rollout).
    return CoderPhaseConfig(max_steps=2, per_device_train_batch_size=8, max_completion_length=48,
                            log_completions=False)


def _proposer_default() -> ProposerPhaseConfig:
    return ProposerPhaseConfig(max_steps=1, max_completion_length=48, log_completions=False)


@dataclass
class LoopConfig:
    """What one round does besides the two GRPO phases: API sets, task generation, the pool, l(m)."""

    api_sets_per_round: int = 4
    """API sets sampled per round (the Proposer phase's prompts and the task batch's). The paper: 4,000 in all."""
    pair_fraction: float = 0.5
    """Share of pairs among the sampled API sets; the rest are triples."""
    api_sets: str | None = None
    """A file of API sets, one per line (a JSON list or names separated by commas/spaces), used in order (round r
    takes the next `api_sets_per_round`, wrapping) instead of sampling from the co-occurrence counts."""
    tasks_per_round: int = 4
    """Tasks the trained Proposer writes (one per API set, validated in the sandbox) into the pool each round."""
    coder_k: int = 2
    """k: Coder samples judged per valid proposed task to measure l(m) (the Proposer reward and the pool record)."""
    hard_per_round: int = 4
    """Hard tasks (attempted, never solved) recycled into each round's Coder phase."""
    coder_tasks_max: int = 16
    """Cap on the tasks of one Coder phase (new valid tasks first, then recycled hard ones)."""
    seed_tasks: str = "builtin"
    """Tasks for a Coder phase that has none from the pool: `builtin` (src/kernelzero/data/seed_tasks), a folder or
    a .jsonl corpus, or `none` (then the Coder phase is skipped)."""
    seed_tasks_always: bool = False
    """Add the seed tasks to every Coder phase, not only when the pool gives none. Seed tasks fill the room that
    `coder_tasks_max` leaves after the new and recycled tasks; when more seeds exist than fit, each round draws its
    own (seeded by the run's seed and the round)."""
    max_new_tokens: int = 256
    """Token cap of the trained Proposer's task generation and of the frozen Coder's l(m) samples."""
    temperature: float = 1.0
    """Sampling temperature of that generation."""
    kernelbench: str | None = None
    """KernelBench checkout to decontaminate proposed tasks against (None: no decontamination check)."""
    train_proposer: bool = True
    """Run the Proposer's GRPO phase each round. False keeps the Proposer frozen at its starting weights (the
    frozen-Proposer ablation): the round's API sets are still drawn and the frozen Proposer still writes the task
    batch, so only the co-evolution of the task distribution is taken away."""

    def __post_init__(self) -> None:
        for name in ("api_sets_per_round", "tasks_per_round", "coder_tasks_max"):
            if getattr(self, name) < 1:
                raise ValueError(f"loop.{name} must be >= 1, got {getattr(self, name)!r}")
        for name in ("coder_k", "hard_per_round"):
            if getattr(self, name) < 0:
                raise ValueError(f"loop.{name} must be >= 0, got {getattr(self, name)!r}")
        if not 0.0 <= self.pair_fraction <= 1.0:
            raise ValueError(f"loop.pair_fraction must be in [0, 1], got {self.pair_fraction!r}")


@dataclass
class RunConfig:
    """Everything `kernelzero train` needs. Phase `output_dir`s are set by the loop (run_dir/checkpoints/...)."""

    preset: str = "tiny"
    """The preset these values started from (recorded; `tiny` or `paper`)."""
    seed: int = 0
    """Seeds the API-set sampler, generation and both trainers (each round and phase derives its own)."""
    rounds: int = 1
    """Co-evolution rounds; each is a Proposer phase, a task batch, then a Coder phase."""
    backend: str = "triton"
    """Kernel language the Coder writes in this run: triton or cuda."""
    coder: CoderPhaseConfig = field(default_factory=_coder_default)
    """The Coder phase: CA-GRPO gate, steps, group size, model."""
    proposer: ProposerPhaseConfig = field(default_factory=_proposer_default)
    """The Proposer phase: rho, repetition penalty, steps, model."""
    loop: LoopConfig = field(default_factory=LoopConfig)
    """API sets, task batch, hard pool and l(m) sampling."""
    validation: ValidationConfig = field(default_factory=ValidationConfig)
    """Task validation in the sandbox (budget, thresholds, device)."""
    judge: JudgeOptions = field(default_factory=lambda: JudgeOptions(trials=2, compile_baseline=False))
    """The judge of every Coder sample (device auto: CUDA when present, else the Triton interpreter). No
    `torch.compile` baseline: the reward uses speedups against eager, and compiling every new task's reference costs
    tens of seconds before its first verdict (`kernelzero eval` reports both baselines)."""
    judge_workers: int | None = None
    """Candidates judged concurrently (default: the CPU count on CPU, 4 on GPU)."""
    judge_slots: int | None = None
    """Live candidate workers per GPU (`JudgePool`'s slots_per_gpu; default `judge.pool.default_slots_per_gpu`, which
    allows 16 GB of GPU memory a slot for KernelBench-size tasks: 4 on an 80 GB H100). Tasks of a few MB can take
    more: every slot mostly waits on CPU work (the Triton JIT), while timing is serialised anyway."""
    tensorboard: bool = True
    """Write TensorBoard events (the loop's own and TRL's) besides the JSONL metrics."""
    prompts: str = "full"
    """Both roles' prompts: `full` (rules and a worked example) or `brief` (the task or API set alone), for models
    cold-started from scratch on a task family (`roles.coder.PROMPTS`; the learning study's)."""

    def __post_init__(self) -> None:
        if self.preset not in PRESETS:
            raise ValueError(f"preset must be one of {', '.join(PRESETS)}, got {self.preset!r}")
        if self.rounds < 1:
            raise ValueError(f"rounds must be >= 1, got {self.rounds!r}")
        if self.backend not in BACKENDS:
            raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {self.backend!r}")
        if self.prompts not in PROMPTS:
            raise ValueError(f"prompts must be one of {', '.join(PROMPTS)}, got {self.prompts!r}")
        if self.backend not in self.coder.backends:
            self.coder = dataclasses.replace(self.coder, backends=(self.backend,))

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True, default=str)


# ---------------------------------------------------------------------------------------------------------- presets
def preset(name: str) -> RunConfig:
    """`tiny`: the defaults (CPU smoke run, minutes). `paper`: Qwen2.5-Coder-7B-Instruct for both roles, 4 rounds x
    20 GRPO steps per role, vLLM colocated, ZeRO-3, 512 API sets and 64 tasks per round, k = 8 for l(m); launch it
    with `accelerate launch --config_file configs/accelerate/zero3.yaml -m kernelzero.cli train --preset paper`."""
    if name == "tiny":
        return RunConfig()
    if name == "paper":
        return RunConfig(
            preset="paper",
            rounds=4,
            coder=coder_preset("runs/coder"),
            proposer=proposer_preset("runs/proposer"),
            loop=LoopConfig(api_sets_per_round=512, tasks_per_round=64, coder_k=8, hard_per_round=32,
                            coder_tasks_max=256, max_new_tokens=1024),  # fmt: skip
            judge=JudgeOptions(device="cuda", trials=5, compile_baseline=False),
            validation=ValidationConfig(device="cuda"),
        )
    raise ConfigError(f"preset must be one of {', '.join(PRESETS)}, got {name!r}")


# ---------------------------------------------------------------------------------------------------------- loading
class ConfigError(ValueError):
    """A configuration file or value that cannot be used; the message names the field path."""


_YAML_EXPONENT = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)[eE][-+]?\d+")
"""A number in exponent form that YAML 1.1 leaves a string: `1e-4`, `5E3`."""


def _convert(value: Any, tp: Any, path: str, current: Any) -> Any:
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        if not isinstance(value, dict):
            raise ConfigError(f"{path}: expected a mapping of {tp.__name__} fields, got {value!r}")
        return merge(current if isinstance(current, tp) else tp(), value, path)
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        return _convert(value, inner[0], path, current) if len(inner) == 1 else value
    if origin is tuple:
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{path}: expected a list, got {value!r}")
        return tuple(value)
    if origin is list:
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{path}: expected a list, got {value!r}")
        return list(value)
    if tp is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if tp is float and isinstance(value, str) and _YAML_EXPONENT.fullmatch(value.strip()):
        return float(value)  # PyYAML (YAML 1.1) reads `2e-4`, without a dot, as a string
    if tp in (int, float, str, bool) and not isinstance(value, tp) or (tp is int and isinstance(value, bool)):
        raise ConfigError(f"{path}: expected {tp.__name__}, got {value!r}")
    return value


def merge(base: Any, data: dict, path: str = "") -> Any:
    """A copy of dataclass `base` with `data`'s fields replaced (recursively); errors name the field path."""
    cls = type(base)
    fields = [f.name for f in dataclasses.fields(cls)]
    hints = typing.get_type_hints(cls)
    unknown = sorted(set(data) - set(fields))
    if unknown:
        where = f"{path}." if path else ""
        raise ConfigError(f"unknown field {where}{unknown[0]}; {cls.__name__} accepts: {', '.join(fields)}")
    kw = {}
    for name, value in data.items():
        current = getattr(base, name)
        sub = f"{path}.{name}" if path else name
        kw[name] = _convert(value, hints[name], sub, current)
    try:
        return dataclasses.replace(base, **kw)
    except (ValueError, TypeError) as e:
        msg = str(e)
        raise ConfigError(f"{path}: {msg}" if path and not msg.startswith(path) else msg) from None


def read_config_file(path: str | os.PathLike) -> dict:
    """The mapping in a .yaml/.yml/.json file."""
    p = Path(path)
    if p.suffix not in (".yaml", ".yml", ".json"):
        raise ConfigError(f"{p}: config files must end in .yaml, .yml or .json")
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        why = e.strerror if isinstance(e, OSError) else "not UTF-8 text"
        raise ConfigError(f"{p}: cannot read it ({why})") from None
    if p.suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:  # a parser's traceback is no answer to a typo: say where it is
            raise ConfigError(f"{p}:{e.lineno}:{e.colno}: not valid JSON: {e.msg}") from None
    else:
        import yaml

        try:
            data = yaml.safe_load(text) or {}
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            where = f"{p}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(p)
            problem = getattr(e, "problem", None) or str(e).splitlines()[0]
            raise ConfigError(f"{where}: not valid YAML: {problem}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{p}: expected a mapping of RunConfig fields at the top level")
    return data


def load_config(path: str | os.PathLike | None = None, preset_name: str | None = None) -> RunConfig:
    """The preset (the file's `preset` field, else `preset_name`, else tiny) overridden by the file's fields."""
    data = read_config_file(path) if path is not None else {}
    name = preset_name or data.get("preset") or "tiny"
    if preset_name and data.get("preset") not in (None, preset_name):
        raise ConfigError(f"--preset {preset_name} contradicts the file's preset: {data['preset']}")
    base = preset(name)
    data.pop("preset", None)
    return merge(base, data)


def outcome_dict(config: RunConfig) -> dict:
    """`config.to_dict()` without `EXECUTION_FIELDS` and the validator's workers (how many tasks it runs at once):
    what a resumed run must share with the one it resumes."""
    d = {k: v for k, v in config.to_dict().items() if k not in EXECUTION_FIELDS}
    d["validation"] = {k: v for k, v in d["validation"].items() if k != "workers"}
    return d


def config_from_dict(data: dict) -> RunConfig:
    """A RunConfig from `to_dict()` output (a run directory's config.json)."""
    data = dict(data)
    base = preset(data.pop("preset", "tiny"))
    return merge(base, data)


__all__ = ["PRESETS", "ConfigError", "LoopConfig", "RunConfig", "config_from_dict", "load_config", "merge", "preset"]
