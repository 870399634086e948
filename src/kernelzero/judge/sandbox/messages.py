"""The worker protocol as types: each message a worker sends, per job kind, and `parse`, the one way a parent reads one.

Messages are signed (`process.Channel`), but the key lives in the worker, where task and candidate code run, so
either can send messages of its own. `parse` turns every shape the parent cannot read into a `ProtocolError`: an
event the job never sends, a field missing or of the wrong type, a field the worker never sends (a forged claim
such as `"valid": true`). Each reader makes that a verdict: the judge `rejected` (guard `channel`), the reference
the task's `infra_error`, validation `protocol`, the build farm a build left to the GPU worker. A well-formed
message is still the worker's word: the judge compares outputs in its own process and never trusts a claim of
correctness; sizes and times stay as forgeable as they always were.

Fields the parent reads are required; figures the worker adds for logs (seconds, pid) have defaults. Wire format
(`wire`, on the worker's side): a JSON object whose `event` names the message; the other keys are its fields.
"""

from __future__ import annotations

import math
import types
from dataclasses import MISSING, dataclass, field, fields
from typing import Annotated, Any, ClassVar, Union, get_args, get_origin, get_type_hints

from kernelzero.judge.sandbox.process import ChannelError


class ProtocolError(ChannelError):
    """An authenticated message the parent cannot read or did not expect. `str()` says which and why, for the
    verdict; `reason` is the why alone (from `parse`: "field `x`", "unexpected field `x`", ...)."""

    def __init__(self, what: str, reason: str):
        super().__init__(f"{what}: {reason}")
        self.reason = reason


def _non_negative(v: float) -> bool:
    return v >= 0


def _short(v: str) -> bool:
    return len(v) <= 4096


_SUMMARY = {"median_ms", "iqr_ms", "min_ms", "n"}  # `timing.summarize`'s keys, exactly `verdict.Timing`'s fields


def _summaries(v: dict, keys) -> bool:
    return all(
        isinstance(v.get(k), dict) and set(v[k]) == _SUMMARY
        and all(type(x) in (int, float) and math.isfinite(x) for x in v[k].values())
        for k in keys
    )  # fmt: skip


def _timing_stats(v: dict) -> bool:
    """`time_model`'s summaries: `events` and `wall` (and `span` and `fresh`, when sent) each exactly the summary's
    keys, finite numbers; `graphs`, when sent, a dict whose `events` are such a summary where its `status` is `ok`."""
    graphs = v.get("graphs", {})
    replayed = isinstance(graphs, dict) and (graphs.get("status") != "ok" or _summaries(graphs, ("events",)))
    return replayed and _summaries(v, ("events", "wall", *(k for k in ("span", "fresh") if k in v)))


Count = Annotated[int, _non_negative]
TimingStats = Annotated[dict[str, Any], _timing_stats]
Split = dict[str, float]  # the worker's own split of a stage's seconds (stage_s figures only)


# ------------------------------------------------------------------------------------------------ every job
@dataclass(frozen=True)
class Started:
    """The job arrived; sent before any task or candidate code runs."""

    event: ClassVar[str] = "started"
    pid: int | None = None
    veil: Annotated[str, _short] | None = None  # how the job's scratch was isolated: a mount point, or `none`
    seconds: Split = field(default_factory=dict)  # the CUDA start on a GPU: init and context, device channel


@dataclass(frozen=True)
class Done:
    """The job returned; the worker exits next."""

    event: ClassVar[str] = "done"


@dataclass(frozen=True)
class Failed:
    """Code under test raised at `stage` (import, init, compile, forward, timing, ...; `harness` for anything else)."""

    event: ClassVar[str] = "error"
    stage: str
    message: str
    type: str = ""  # the exception's class name


@dataclass(frozen=True)
class GuardHit:
    """A guard checked inside the worker fired (tensor_subclass, aliasing, input_mutation)."""

    event: ClassVar[str] = "guard"
    guard: str
    message: str


# ------------------------------------------------------------------------------------------------ reference
@dataclass(frozen=True)
class ReferenceSized:
    """The task's footprint on the `meta` device (`harness.meta_footprint`: in_bytes, out_bytes, param_bytes), or
    None where it cannot run there; the worker then waits for the parent's plan (`{"cmd": "run", ...}`)."""

    event: ClassVar[str] = "sized"
    footprint: dict[str, Count] | None = None
    seconds: Split = field(default_factory=dict)  # the task's import, the meta run


@dataclass(frozen=True)
class ReferenceOutputs:
    """The reference's trials, replays and wide trials are sealed in its `out` memfd."""

    event: ClassVar[str] = "outputs"
    structures: list[str]
    checksums: list[list[str]]  # per trial, per input: a fingerprint (`harness.checksum`)
    ops: dict[str, Count] = field(default_factory=dict)  # aten op -> elements touched
    degenerate: Annotated[str, _short] | None = None  # the canary that passes the check on every trial, if any
    gpu_peak: Count | None = None  # device bytes the worker's allocator reserved at its peak
    rss_peak: Count | None = None  # the worker's peak resident set, bytes
    seconds: Split = field(default_factory=dict)  # model, trials, replays, canaries, wide trials, seal


@dataclass(frozen=True)
class TimingReady:
    """Timing inputs drawn and `torch.compile` done: the parent may take the timing lock."""

    event: ClassVar[str] = "timing_ready"


@dataclass(frozen=True)
class ReferenceTiming:
    """Eager (and compiled) reference times; the timed outputs are sealed in the `timed` memfd."""

    event: ClassVar[str] = "timing"
    eager: TimingStats
    compile: TimingStats | None = None
    compile_error: str | None = None
    gpu_peak: Count | None = None


# ------------------------------------------------------------------------------------------------ candidate
@dataclass(frozen=True)
class CandidateBuilt:
    """The candidate imported and `ModelNew` built; the worker waits for the trial seeds."""

    event: ClassVar[str] = "built"
    seconds: float | None = None


@dataclass(frozen=True)
class CandidateOutputs:
    """The candidate's trials and replays are sealed in its `out` memfd."""

    event: ClassVar[str] = "outputs"
    structures: list[str]
    checksums: list[list[str]]
    ops: dict[str, Count] = field(default_factory=dict)
    launches: Count | None = None  # None where nothing could count them
    seconds: Split = field(default_factory=dict)
    gpu_peak: Count | None = None
    rss_peak: Count | None = None


@dataclass(frozen=True)
class Hung:
    """A forward has run `seconds`, its Triton compiles not counted, past the hang watch (`harness.ForwardWatch`,
    `JudgeOptions.hang_after_s`): the judge kills the worker."""

    event: ClassVar[str] = "hung"
    seconds: Annotated[float, _non_negative]


@dataclass(frozen=True)
class CandidateTiming:
    """The candidate's times; its timed outputs are still on the device until `save_timed`."""

    event: ClassVar[str] = "timing"
    candidate: TimingStats
    storage_bytes: Count = 0  # bytes the outputs' storages span (the roofline guard's floor)
    seconds: Split = field(default_factory=dict)
    idle_calls: Count | None = None  # timing-stage calls that completed none of its kernels (None: not counted)


@dataclass(frozen=True)
class TimedSaved:
    """The timed calls' outputs are sealed in the `timed` memfd."""

    event: ClassVar[str] = "timed_saved"
    seconds: Split = field(default_factory=dict)
    idle_calls: Count | None = None  # CUDA: audit calls on the timing inputs that launched none of its kernels
    gpu_peak: Count | None = None


# ------------------------------------------------------------------------------------------------ build farm
@dataclass(frozen=True)
class Prebuilt:
    """The build job imported the candidate; its load_inline calls are built in the job's build directory."""

    event: ClassVar[str] = "built"
    calls: list[str] = field(default_factory=list)  # each call's key
    modes: list[str] = field(default_factory=list)  # how each was built (`farm.BUILD_MODES`)


@dataclass(frozen=True)
class Unbuilt:
    """The candidate cannot be built on CPU (not a compile error): the GPU worker builds it."""

    event: ClassVar[str] = "unbuilt"
    message: str


@dataclass(frozen=True)
class Probed:
    """Whether this sandbox's compiler takes each precompiled header: name -> `used` or why not."""

    event: ClassVar[str] = "probed"
    headers: dict[str, str]


# ------------------------------------------------------------------------------------------------ validation
@dataclass(frozen=True)
class Sized:
    """A proposed task's sizes: on the `meta` device (then only when over budget) or on the real one."""

    event: ClassVar[str] = "sized"
    meta: bool
    input_elements: Count
    param_elements: Count


@dataclass(frozen=True)
class ValidateOutputs:
    """The three forwards of the validation job are sealed in its `out` memfd."""

    event: ClassVar[str] = "outputs"
    structures: list[str]  # per forward
    non_tensor: list[Count]  # positions of the first forward's outputs that are not tensors
    forward_ms: Annotated[float, _non_negative]
    ran: list[str] = field(default_factory=list)  # torch functions and aten ops the third forward ran (missing_api)


Message = (
    Started | Done | Failed | GuardHit
    | ReferenceSized | ReferenceOutputs | TimingReady | ReferenceTiming
    | CandidateBuilt | Hung | CandidateOutputs | CandidateTiming | TimedSaved
    | Prebuilt | Unbuilt | Probed
    | Sized | ValidateOutputs
)  # fmt: skip


def _table(*kinds: type) -> dict[str, type]:
    return {cls.event: cls for cls in (Started, Done, Failed, GuardHit, *kinds)}


# What each job kind's worker may send (an event means one message type within a job).
PROTOCOL: dict[str, dict[str, type]] = {
    "reference": _table(ReferenceSized, ReferenceOutputs, TimingReady, ReferenceTiming),
    "candidate": _table(CandidateBuilt, Hung, CandidateOutputs, CandidateTiming, TimedSaved),
    "build": _table(Prebuilt, Unbuilt),
    "probe_headers": _table(Probed),
    "validate": _table(Sized, ValidateOutputs),
}
# Per message type: field -> (type, required), read once from the dataclasses.
_FIELDS: dict[type, dict[str, tuple[Any, bool]]] = {
    cls: {f.name: (get_type_hints(cls, include_extras=True)[f.name], f.default is MISSING is f.default_factory)
          for f in fields(cls)}
    for table in PROTOCOL.values() for cls in table.values()
}  # fmt: skip


def parse(raw: Any, job: str) -> Message:
    """The typed message a worker of `job` kind sent as `raw` (decoded JSON); raises ProtocolError when it is not one.

    Checks that the event is one the job sends, every required field is there, each field has its type (ints are
    not bools, floats are finite, nested lists and dicts element by element) and no other field is."""
    if not isinstance(raw, dict) or not isinstance(raw.get("event"), str):
        raise ProtocolError("a malformed message", "not a dict with a string `event`")
    what = f"a malformed `{raw['event'][:40]}` message"
    cls = PROTOCOL[job].get(raw["event"])
    if cls is None:
        raise ProtocolError(what, f"not an event of a {job} job")
    spec = _FIELDS[cls]
    for name in raw:
        if name != "event" and name not in spec:
            raise ProtocolError(what, f"unexpected field `{str(name)[:40]}`")
    for name, (tp, required) in spec.items():
        if name in raw:
            if not _conforms(raw[name], tp):
                raise ProtocolError(what, f"field `{name}`")
        elif required:
            raise ProtocolError(what, f"field `{name}`")
    return cls(**{k: v for k, v in raw.items() if k != "event"})


def wire(msg: Message) -> dict[str, Any]:
    """What the worker sends for `msg` (`Channel.send`): its event and its fields, as `parse` reads them back."""
    return {"event": msg.event, **{f.name: getattr(msg, f.name) for f in fields(msg)}}


def _conforms(value: Any, tp: Any) -> bool:
    """Whether decoded JSON `value` is of annotation `tp` (the subset the messages use)."""
    origin, args = get_origin(tp), get_args(tp)
    if origin is Annotated:
        return _conforms(value, args[0]) and all(check(value) for check in tp.__metadata__)
    if origin in (Union, types.UnionType):
        return any(_conforms(value, a) for a in args)
    if origin is list:
        return isinstance(value, list) and all(_conforms(x, args[0]) for x in value)
    if origin is dict:
        key, item = args
        return isinstance(value, dict) and all(_conforms(k, key) and _conforms(x, item) for k, x in value.items())
    if tp is Any:
        return True
    if tp is type(None):
        return value is None
    if tp is float:
        return type(value) in (int, float) and math.isfinite(value)
    return type(value) is tp  # str, int, bool: exactly (True is not a count)
