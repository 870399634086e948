"""The judge's output: a `Verdict` record with a closed status set, JSON round-trip, and the environment fingerprint."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field, fields
from typing import Any

# The closed set of outcomes. `ok` is the only status with correct=True.
STATUSES = (
    "ok",  # built, ran, passed every correctness check and guard
    "format_error",  # the completion holds no usable code (no ModelNew, syntax error)
    "compile_error",  # build or import of the candidate failed
    "runtime_error",  # the candidate raised while constructing ModelNew or in forward
    "incorrect",  # ran, but an output differs from the reference (value, shape, dtype or type)
    "timeout",  # a stage outran its wall-clock budget and the worker was killed
    "crashed",  # the worker died (signal, segfault, os._exit) or exited without an authenticated result
    "rejected",  # a reward-hacking guard fired; `guard` names it
    "infra_error",  # not the candidate's fault (lost worker, full disk, no GPU): leave out of any reward
)

# Statuses a trainer must not score: the failure says nothing about the candidate.
UNSCORED = frozenset({"infra_error"})


@dataclass
class Timing:
    """Runtime statistics of one timed module, in milliseconds over `n` timed calls."""

    median_ms: float
    iqr_ms: float  # inter-quartile range: the spread we report next to the median
    min_ms: float
    n: int


@dataclass
class Verdict:
    """What the judge decided about one candidate. Failures of untrusted code are values, never exceptions."""

    status: str
    correct: bool = False
    backend: str = ""
    device: str = ""
    timed: bool = False  # False on CPU (Triton interpreter): correctness only, no runtimes
    timed_by: str | None = None  # "calls" (eager calls between events) or "graphs" (replayed CUDA graphs; both sides)
    runtime: Timing | None = None  # the candidate
    ref_runtime: Timing | None = None  # the reference Model, eager
    compile_runtime: Timing | None = None  # torch.compile(Model)
    speedup_eager: float | None = None  # ref_runtime.median / runtime.median
    speedup_compile: float | None = None  # compile_runtime.median / runtime.median
    speed_noise: float | None = None
    """The relative spread of `speedup_eager`: the candidate's and the reference's IQR / median, summed. A speedup
    within it of 1.0 cannot be told from noise (`speed_noisy`): rewards then count it as 1.0."""
    fresh_ratio: float | None = None  # the fastest call on never-seen inputs over the timed median (`fresh_inputs`)
    guard: str | None = None  # the check or guard that decided a non-ok status
    feedback: str = ""  # short text fit to show a model: compiler lines, the mismatch, the exception
    trials: int = 0  # correctness trials that ran
    max_abs_err: float | None = None
    env: dict[str, Any] = field(default_factory=dict)  # environment fingerprint, see `fingerprint`
    stage_s: dict[str, float] = field(default_factory=dict)
    """Wall seconds per stage, for throughput work (never a reward): `build_farm`, `start`, `build`, `run`, `load`,
    `compare`, `time`, `timed_save`, `timed_check`; `wait_slot`, `wait_trials`, `wait_compare`, `wait_timing`,
    `wait_timed_check` (queued for a GPU slot or lock); `run.*`, `time.*` and `timed_save.*` the worker's own split
    (`run.first_call` holds Triton's JIT compile; `ref.run.trials.first_inputs` and `.first_call`, the reference's first
    trial)."""
    memory: dict[str, float] = field(default_factory=dict)
    """Peak memory in GB, for capacity planning (never a reward): `gpu` and `host` of the candidate's worker (device
    memory its allocator reserved; resident set plus the outputs it handed over), `ref_gpu` and `ref_host` of the
    task's reference worker; and `admitted_gpu`, `admitted_host`, what the pool reserved for the candidate."""
    task: str = ""
    candidate_hash: str = ""

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"Verdict.status must be one of {STATUSES}, got {self.status!r}")
        if self.correct != (self.status == "ok"):
            raise ValueError(f"Verdict.correct={self.correct} contradicts status={self.status!r}")

    @property
    def speed_noisy(self) -> bool:
        """Whether `speedup_eager` is closer to 1.0 than its own spread (log scale): too noisy to score speed."""
        s, noise = self.speedup_eager, self.speed_noise
        return s is not None and s > 0 and noise is not None and abs(math.log(s)) <= noise

    @property
    def scored(self) -> bool:
        """Whether a trainer may use this verdict in a reward (infra failures are left out, not scored 0)."""
        return self.status not in UNSCORED

    @property
    def scored_correct(self) -> bool | None:
        """c_i as every mean of correctness reads it (l(m), acc(G), pass rates): None when the verdict is not scored,
        so that an infra failure is left out of the mean instead of counted as wrong."""
        return self.correct if self.scored else None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Verdict:
        known = {f.name for f in fields(cls)}
        kw = {k: v for k, v in d.items() if k in known}
        for key in ("runtime", "ref_runtime", "compile_runtime"):
            if isinstance(kw.get(key), dict):
                kw[key] = Timing(**kw[key])
        return cls(**kw)

    @classmethod
    def from_json(cls, s: str) -> Verdict:
        return cls.from_dict(json.loads(s))

    @classmethod
    def fail(cls, status: str, feedback: str, guard: str | None = None, **kw: Any) -> Verdict:
        return cls(status=status, correct=False, feedback=_clip(feedback), guard=guard, **kw)


def _clip(text: str, max_lines: int = 25, max_chars: int = 2000) -> str:
    """Keep feedback short enough to put in a prompt: the first lines carry the useful compiler/exception text."""
    lines = text.strip().splitlines()
    out = "\n".join(lines[:max_lines])
    if len(lines) > max_lines:
        out += f"\n... ({len(lines) - max_lines} more lines)"
    return out[:max_chars]
