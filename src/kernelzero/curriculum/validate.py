"""Task validation: is a proposed module a usable task? Static checks here, run-time checks in the judge's sandbox.

Order (cheapest first; the first failure is the verdict):
  static, in this process, nothing executed:  parse -> missing_api -> contaminated -> duplicate (vs the pool)
  sandbox (`validate` worker job):            runtime_error / crashed / timeout / protocol -> too_large
                                              -> too_slow (a forward stopped at `forward_limit_s`)
  on the saved outputs, in this process:      bad_output -> non_finite -> nondeterministic -> zero_output
                                              -> below_tolerance -> constant_output -> input_independent
                                              -> missing_api (an API forward never ran: `unrun_apis`) -> too_slow
  batch (validate_many):                      duplicate (vs an earlier valid task of the same batch)
The task's code never runs in the caller's process: the worker saves its outputs to a file and every decision on
them is taken here. `Validator.validate_many` runs tasks concurrently (one worker process each).
"""

from __future__ import annotations

import asyncio
import os
import secrets
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path

from kernelzero.apis import extract_apis, missing_apis
from kernelzero.apis.names import canonical
from kernelzero.curriculum.similarity import SimilarityIndex
from kernelzero.judge.sandbox.messages import Done, Failed, ProtocolError, Sized, ValidateOutputs, parse
from kernelzero.judge.sandbox.process import ChannelError, Sandbox
from kernelzero.roles.proposer import TaskBudget
from kernelzero.syntax import parse as parse_source
from kernelzero.tasks import TaskFormatError, check_source, load_tasks

# Every reason a task can be rejected, in check order, with what it means.
REASONS: dict[str, str] = {
    "parse": "not Python, or does not define class Model (with forward), get_inputs and get_init_inputs",
    "missing_api": "Model.__init__/forward do not use every API of the task's set, or forward never runs one",
    "contaminated": "near-copy of a KernelBench task",
    "duplicate": "near-duplicate of a task already in the pool",
    "runtime_error": "raised while importing, building Model, drawing inputs or in forward",
    "crashed": "the worker died without reporting (segfault, out of memory)",
    "timeout": "did not finish within the validation timeout",
    "protocol": "the worker's messages or outputs broke the validation protocol (task code forging them)",
    "too_large": "inputs or parameters over the budget",
    "bad_output": "forward returned something other than tensors",
    "non_finite": "NaN or inf in the output",
    "nondeterministic": "two forwards on the same inputs differ",
    "zero_output": "the output is all zeros",
    "below_tolerance": "every output value is within the correctness tolerance of 0 (returning zeros would pass)",
    "constant_output": "the output holds one value repeated",
    "input_independent": "the output does not change when the input does",
    "too_slow": "one eager forward over the time budget (or the forwards stopped once past it)",
}


@dataclass(frozen=True)
class ValidationConfig:
    """What a proposed task must satisfy; defaults are the Proposer prompt's own budget (`proposer.TaskBudget`)."""

    budget: TaskBudget = field(default_factory=TaskBudget)
    """Input/parameter element limits and the per-forward time limit (the prompt states the same numbers)."""
    device: str = "auto"
    """Where the task runs: cpu, cuda or auto (cuda when available)."""
    timeout_s: float = 120.0
    """Wall-clock limit of one validation worker (import, build, three forwards)."""
    memory_limit_gb: float = 16.0
    """Address-space limit of a CPU worker."""
    duplicate_threshold: float = 0.85
    """n-gram Jaccard similarity at or above which a task duplicates one in the pool."""
    contamination_threshold: float = 0.7
    """n-gram Jaccard similarity at or above which a task is a near-copy of a KernelBench task."""
    atol: float = 1e-4
    """Tolerance of the determinism, input-dependence and below-tolerance checks (the judge's fp32 atol/rtol)."""
    rtol: float = 1e-4
    workers: int | None = None
    """Validations at once (`validate_many`, `validate_async`; default: the CPU count)."""

    def __post_init__(self) -> None:
        if self.device not in ("auto", "cpu", "cuda"):
            raise ValueError(f"ValidationConfig.device must be auto, cpu or cuda, got {self.device!r}")
        for name in ("duplicate_threshold", "contamination_threshold"):
            if not 0.0 < getattr(self, name) <= 1.0:
                raise ValueError(f"ValidationConfig.{name} must be in (0, 1], got {getattr(self, name)!r}")
        if self.timeout_s <= 0:
            raise ValueError(f"ValidationConfig.timeout_s must be > 0, got {self.timeout_s!r}")


@dataclass(frozen=True)
class ValidationResult:
    """The verdict on one task: `reason` is None for a valid task, else a key of REASONS; `detail` says more.

    The one record of a validation, kept whole wherever it goes (the Proposer's reward, tasks.jsonl, the report):
    `reason` and `detail` stay separate fields, never one "reason: detail" string to split again."""

    name: str
    reason: str | None
    detail: str = ""
    apis: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()  # for missing_api: the APIs of the set the module does not use
    similar_to: str | None = None  # for duplicate / contaminated: the closest task
    similarity: float | None = None
    forward_ms: float | None = None
    input_elements: int | None = None
    param_elements: int | None = None

    @property
    def valid(self) -> bool:
        return self.reason is None

    def to_dict(self) -> dict:
        """JSON-ready fields, and `valid` for readers of the file (`from_dict` ignores it)."""
        return {**asdict(self), "valid": self.valid}

    @classmethod
    def from_dict(cls, d: dict) -> ValidationResult:
        kw = {f.name: d[f.name] for f in fields(cls) if f.name in d}
        return cls(**{**kw, "apis": tuple(kw.get("apis", ())), "missing": tuple(kw.get("missing", ()))})


class Validator:
    """Validates tasks against a pool (`duplicate`) and optionally a KernelBench checkout (`contaminated`)."""

    def __init__(self, config: ValidationConfig | None = None, *, pool: SimilarityIndex | None = None,
                 kernelbench: str | os.PathLike | None = None):  # fmt: skip
        self.config = config or ValidationConfig()
        self.pool = pool if pool is not None else SimilarityIndex()
        self.kernelbench = SimilarityIndex()
        if kernelbench is not None:
            for t in load_tasks(kernelbench):
                self.kernelbench.add(f"level{t.level}/{t.name}", t.source)
        self.device = self._resolve(self.config.device)
        # every sandboxed validation runs on one of these threads: `validate_many` and `validate_async` share the bound
        self._threads = ThreadPoolExecutor(max_workers=self.config.workers or os.cpu_count() or 2,
                                           thread_name_prefix="kz-validate")  # fmt: skip

    @staticmethod
    def _resolve(device: str) -> str:
        if device != "auto":
            return device
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"

    # ------------------------------------------------------------------ static
    def static(self, name: str, source: str, apis: Sequence[str]) -> ValidationResult | None:
        """The first static failure, or None when the source passes parse, API, KernelBench and pool checks."""
        apis = tuple(apis)
        try:
            check_source(source, name)
        except TaskFormatError as e:
            return ValidationResult(name, "parse", e.message, apis)
        canon = [canonical(a) or a if a.startswith("torch.") else a for a in apis]  # torch.nn.Linear -> nn.Linear
        unused = set(missing_apis(source, canon))
        missing = tuple(a for a, c in zip(apis, canon) if c in unused)
        if missing:
            return ValidationResult(name, "missing_api", "not used by Model: " + ", ".join(missing), apis, missing)
        for reason, index, threshold in (("contaminated", self.kernelbench, self.config.contamination_threshold),
                                         ("duplicate", self.pool, self.config.duplicate_threshold)):  # fmt: skip
            match = index.closest(source)
            if match is not None and match.similarity >= threshold:
                how = "same normalised AST as" if match.exact else f"similarity {match.similarity:.2f} to"
                return ValidationResult(name, reason, f"{how} {match.name}", apis, similar_to=match.name,
                                        similarity=match.similarity)  # fmt: skip
        return None

    # ------------------------------------------------------------------ full
    def validate(self, name: str, source: str, apis: Sequence[str]) -> ValidationResult:
        """Static checks, then the sandboxed run. Never raises for a bad task: every failure is a result."""
        return self.static(name, source, apis) or self._run(name, source, tuple(apis))

    async def validate_async(self, name: str, source: str, apis: Sequence[str]) -> ValidationResult:
        """`validate` on one of the validator's threads (at most `config.workers` at once, shared with
        `validate_many`): the Proposer trainer's `validate_fn`. The trainer gathers a batch's validations on its
        event loop, so a plain `validate` there ran them one after another (a batch of 32 took up to 278 s)."""
        return await asyncio.get_running_loop().run_in_executor(self._threads, self.validate, name, source, apis)

    def validate_many(self, items: Sequence[tuple[str, str, Sequence[str]]], *, within_batch: bool = True
                      ) -> list[ValidationResult]:  # fmt: skip
        """`validate` for (name, source, apis) items, concurrently, results in input order. With `within_batch`,
        a valid item that near-duplicates an earlier valid item of the batch becomes `duplicate` (the first
        stays), so a batch never adds two copies to the pool. The Proposer's repetition penalty is separate."""
        results = list(self._threads.map(lambda it: self.validate(*it), items))
        if not within_batch:
            return results
        seen = SimilarityIndex(self.pool.ngram)
        for i, ((name, source, _), r) in enumerate(zip(items, results)):
            if not r.valid:
                continue
            match = seen.closest(source)
            if match is not None and match.similarity >= self.config.duplicate_threshold:
                how = "same normalised AST as" if match.exact else f"similarity {match.similarity:.2f} to"
                results[i] = replace(r, reason="duplicate", detail=f"{how} {match.name} (same batch)",
                                     similar_to=match.name, similarity=match.similarity)  # fmt: skip
            else:
                seen.add(name, source)
        return results

    def _run(self, name: str, source: str, apis: tuple[str, ...]) -> ValidationResult:
        b = self.config.budget
        seeds = [secrets.randbelow(2**31) for _ in range(3)]
        job = {"kind": "validate", "device": self.device, "init_seed": seeds[0], "input_seed": seeds[1],
               "other_seed": seeds[2], "max_input_elements": b.max_input_elements,
               "max_param_elements": b.max_param_elements,
               "forward_limit_s": forward_limit_s(b.max_forward_ms_cpu)}  # fmt: skip
        sb = Sandbox(job=job, device=self.device, memory_limit_gb=self.config.memory_limit_gb)
        (sb.scratch / "task.py").write_text(source)
        sb.job["task_path"] = str(sb.scratch / "task.py")
        sized: Sized | None = None  # the task's sizes, once the worker measured them
        forwards_start: float | None = None  # when the worker began the three forwards (its real-size report)

        def result(reason: str | None, detail: str = "", **kw) -> ValidationResult:
            return ValidationResult(name, reason, detail, apis, input_elements=sized and sized.input_elements,
                                    param_elements=sized and sized.param_elements, **kw)  # fmt: skip

        try:
            sb.start()
            deadline = time.monotonic() + self.config.timeout_s
            while True:
                raw = sb.recv(deadline)
                if raw is None:
                    exit_ = sb.finish()
                    return result("crashed", f"worker exited (code {exit_.returncode}): {exit_.log_tail[-600:]}")
                msg = parse(raw, "validate")  # the task's code holds the channel's key: its messages can be forged
                if isinstance(msg, Failed):
                    if msg.stage == "budget":  # the worker stopped a forward at `forward_limit_s`
                        return result("too_slow", f"a forward was still running at its limit of "
                                      f"{forward_limit_s(b.max_forward_ms_cpu):.1f} s (budget "
                                      f"{b.max_forward_ms_cpu:.0f} ms); stopped")  # fmt: skip
                    return result("runtime_error", f"{msg.stage}: {msg.message[-1200:]}")
                if isinstance(msg, Sized):
                    if sized is not None:  # a forged report before the real one
                        raise ProtocolError("a second `sized` message", "the task's sizes were already reported")
                    sized = msg
                    if msg.input_elements > b.max_input_elements or msg.param_elements > b.max_param_elements:
                        return result("too_large", f"{msg.input_elements:,} input and {msg.param_elements:,} "
                                      f"parameter elements; budget {b.max_input_elements:,} and "
                                      f"{b.max_param_elements:,}")  # fmt: skip
                    if not msg.meta:  # the forwards start now. The worker stops each at forward_limit_s; this
                        # backstop holds where its alarm cannot interrupt (one long call into C)
                        forwards_start = time.monotonic()
                        deadline = min(deadline, forwards_start + 4 * forward_limit_s(b.max_forward_ms_cpu) + 30)
                elif isinstance(msg, ValidateOutputs):
                    if sized is None or sized.meta:  # the worker runs forwards only once real sizes are in budget
                        raise ProtocolError("an `outputs` message out of order", "before the task's sizes")
                    runs = _saved_runs(sb.load_output("out"), msg)
                    reason, detail = judge_outputs(runs, msg.non_tensor, self.config.atol, self.config.rtol)
                    unrun = unrun_apis(apis, msg.ran) if reason is None else ()
                    if unrun:  # built in __init__ (a LayerNorm), never called in forward: the task does not use it
                        return result("missing_api", "never run by forward: " + ", ".join(unrun), missing=unrun,
                                      forward_ms=msg.forward_ms)  # fmt: skip
                    ms = msg.forward_ms
                    if reason is None and ms > b.max_forward_ms_cpu:
                        reason, detail = "too_slow", f"forward took {ms:.0f} ms; budget {b.max_forward_ms_cpu:.0f} ms"
                    return result(reason, detail, forward_ms=ms)
                elif isinstance(msg, Done):
                    return result("crashed", "worker finished without reporting outputs")
        except TimeoutError:
            if forwards_start is not None:  # stopped at the forward budget, not at the worker's wall-clock limit
                spent = time.monotonic() - forwards_start
                return result("too_slow", f"the forwards did not finish within {spent:.1f} s (budget "
                              f"{b.max_forward_ms_cpu:.0f} ms per forward); stopped")  # fmt: skip
            return result("timeout", f"no result within {self.config.timeout_s:.0f} s")
        except ProtocolError as exc:
            return result("protocol", f"the worker sent {exc}")
        except ChannelError as exc:
            return result("crashed", f"channel: {exc}")
        finally:
            sb.finish()
            sb.cleanup()


def forward_limit_s(budget_ms: float) -> float:
    """Wall seconds one validation forward may run before the worker stops it (a `too_slow` task): twice the
    budget (call recording on the third forward, a loaded machine) plus 1 s; the first forward, which pays lazy
    initialisation, gets twice that. A task whose forward sleeps 30 s is stopped after 10 s at the 2 s budget,
    instead of after its three forwards (25-29 s)."""
    return 2 * budget_ms / 1e3 + 1.0


# Creation ops: an API of the set may legitimately run only in __init__ (weights drawn with torch.randn).
FACTORIES = {"randn", "rand", "randint", "randperm", "normal", "zeros", "ones", "empty", "full", "arange", "linspace",
             "logspace", "eye", "tensor", "as_tensor", "from_numpy", "zeros_like", "ones_like", "empty_like",
             "full_like", "rand_like", "randn_like"}  # fmt: skip


def run_name(api: str) -> str | None:
    """The name an API runs under in forward, as torch functions or aten ops are named (`nn.LayerNorm` ->
    `layer_norm`, `nn.BatchNorm2d` -> `batch_norm`, `F.gelu` / `torch.tanh` -> `gelu` / `tanh`), or None where no
    such name exists in torch (containers, nn.MultiheadAttention's private path): those are not checked at run time."""
    import re

    import torch
    import torch.nn.functional as F

    name = (canonical(api) or api).split(".")[-1]
    snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z][a-z])", "_", name).lower()  # LayerNorm -> layer_norm, ReLU -> relu
    for token in (name, name.lower(), snake, re.sub(r"\d+d$", "", snake)):  # batch_norm2d -> batch_norm
        if token and token not in FACTORIES and (hasattr(F, token) or hasattr(torch, token)):
            return token
    return None


def unrun_apis(apis: Sequence[str], ran: Sequence[str]) -> tuple[str, ...]:
    """The APIs of the set whose run name (`run_name`) no torch function or aten op of forward contains: built in
    __init__ or written in dead code, never executed. Pure: `ran` is what the worker's `call_recorder` saw."""
    names = [r.lower() for r in ran]
    out = []
    for api in apis:
        token = run_name(api)
        if token is not None and not any(token in n for n in names):
            out.append(api)
    return tuple(out)


def _saved_runs(data: object, msg: ValidateOutputs) -> list[list]:
    """The three forwards' outputs the worker sealed, as `msg` describes them; ProtocolError when the file holds
    anything else (task code can write and seal its own)."""
    import torch

    runs = data.get("runs") if isinstance(data, dict) else None
    if not (isinstance(runs, list) and len(runs) == len(msg.structures) == 3
            and all(isinstance(r, list) and all(isinstance(t, torch.Tensor) for t in r) for r in runs)):  # fmt: skip
        raise ProtocolError("an `outputs` message", "its file does not hold three forwards of tensors")
    return runs


def judge_outputs(runs: list[list], non_tensor: Sequence[int], atol: float, rtol: float) -> tuple[str | None, str]:
    """The output checks on the three forwards the worker saved (a, b = same inputs; c = other inputs).

    Pure: tensors in, (reason or None, detail) out. Checks in REASONS order."""
    import torch

    a, b, c = runs
    if non_tensor or not a:
        return "bad_output", f"forward returned non-tensor values at positions {list(non_tensor)}" if a else \
            "forward returned no tensors"  # fmt: skip
    floats = [t for t in a if t.is_floating_point() or t.is_complex()]
    for i, t in enumerate(a):
        if (t.is_floating_point() or t.is_complex()) and not bool(torch.isfinite(t).all()):
            n = int((~torch.isfinite(t)).sum())
            return "non_finite", f"output {i}: {n} of {t.numel()} values are NaN or inf"
    if not _same(a, b, atol, rtol):
        return "nondeterministic", "two forwards of the same model on the same inputs differ"
    if all(t.numel() == 0 or not bool(t.any()) for t in a):
        return "zero_output", "every output value is 0"
    if floats and len(floats) == len(a) and all(float(t.abs().max()) <= atol for t in a if t.numel()):
        return "below_tolerance", f"max |output| <= atol={atol:g} everywhere"
    if all(t.numel() > 1 and bool((t == t.reshape(-1)[0]).all()) for t in a):
        return "constant_output", f"every output holds one value ({float(a[0].reshape(-1)[0]):.6g})"
    if _same(a, c, atol, rtol):
        return "input_independent", "outputs on two different input draws agree within tolerance"
    return None, ""


def _same(xs: list, ys: list, atol: float, rtol: float) -> bool:
    import torch

    if len(xs) != len(ys):
        return False
    for x, y in zip(xs, ys):
        if x.shape != y.shape or x.dtype != y.dtype:
            return False
        if x.is_floating_point() or x.is_complex():
            if not torch.allclose(x, y, atol=atol, rtol=rtol, equal_nan=True):
                return False
        elif not torch.equal(x, y):
            return False
    return True


def read_apis_constant(source: str) -> tuple[str, ...] | None:
    """A hand-written task's declared API set: a module-level `APIS = [...]` of string literals, else None."""
    import ast

    try:
        tree = parse_source(source)
    except (SyntaxError, ValueError):
        return None
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "APIS" for t in node.targets):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                return None
            if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
                return tuple(value)
    return None


def validate_folder(folder: str | os.PathLike, validator: Validator, *, apis_from_name: bool = False
                    ) -> list[ValidationResult]:  # fmt: skip
    """Validate every `*.py` in a folder (sorted by name; a later near-copy of an earlier valid file is
    `duplicate`). A file's API set: with `apis_from_name` its stem split on `__`; else its `APIS` constant; else
    the APIs it is found to use."""
    items = []
    for p in sorted(Path(folder).glob("*.py")):
        source = p.read_text(encoding="utf-8")
        apis = tuple(p.stem.split("__")) if apis_from_name else read_apis_constant(source)
        if apis is None:
            try:
                apis = extract_apis(source)
            except SyntaxError:
                apis = ()
        items.append((p.stem, source, apis))
    return validator.validate_many(items)
