"""The study's controlled task family: compositions of 2-3 elementwise and last-dimension reduction APIs, and the
fixed split of API pairs into training and test pairs.

Why a family: the learning study must show that a small Coder trained from scratch improves on compositions it never
saw. That needs tasks inside a small model's reach (one fused pass over a 2-D fp32 tensor), many instances of each
composition (shapes and constants vary), and a split by *API pair*, not by task: a test pair never occurs in any
training task, so a test task is a new composition of ops that were each seen in training.

Grammar of a task (one chain over `x`, one statement per op, in KernelBench format):

    elementwise ops (each API once, random order) [then one of sum / mean / amax over dim=-1]
    elementwise ops, softmax over dim=-1, elementwise ops

A reduction is always last (a reduced row is a scalar: an activation after `sum` saturates to a constant); two row
ops never meet (softmax then sum is 1 everywhere). Binary ops take a second input tensor (`y`, `z`, `w`) or, for
add / sub / mul, a scalar constructor argument; clamp takes `low`, `high` constructor arguments. `amax` never meets
`clamp`: the maximum of a clamped row is the clamp's bound on nearly every row (a constant output); nor `relu`: the
maximum of a row of 64 or more normal draws is positive, so amax after relu is amax of the input, and the judge's
reduction canary calls such a task degenerate (2 of 256 training tasks on the CPU judge).

Everything is deterministic: `train_tasks(n, seed)` and `test_tasks(n, seed)` give the same tasks on every machine
(per-index `random.Random` seeded with a string), and a longer list extends a shorter one.
"""

from __future__ import annotations

import hashlib
import itertools
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from kernelzero.curriculum.validate import ValidationConfig, ValidationResult, Validator
from kernelzero.tasks import Task

UNARY = ("F.relu", "F.gelu", "torch.sigmoid", "torch.tanh", "torch.exp", "torch.abs")
BINARY = ("op.add", "op.mul", "op.sub", "torch.maximum")
CLAMP = "torch.clamp"
REDUCTIONS = ("torch.sum", "torch.mean", "torch.amax")
SOFTMAX = "F.softmax"
APIS = (*UNARY, *BINARY, CLAMP, *REDUCTIONS, SOFTMAX)
"""The family's vocabulary, as the extractor's canonical names (what `missing_apis` and the validator speak)."""
ROW_OPS = frozenset((*REDUCTIONS, SOFTMAX))
EXCLUDED_PAIRS = frozenset({frozenset({CLAMP, "torch.amax"}), frozenset({"F.relu", "torch.amax"})})
"""Pairs no task may hold (see the module docstring): amax of a clamped row is a constant output, amax after relu
the input's own amax."""

N_TEST_PAIRS = 20
"""How many of the family's 97 pairs are test pairs (about a fifth)."""
SPLIT_SALT = "kernelzero-study-split-v1"
"""Salt of the split's hash: changing it changes the split, so it is fixed once and named."""

# The task's statement for each API; `{t}` is the tensor operand, `{a}` / `{b}` constructor arguments.
_STATEMENT = {
    "F.relu": "x = F.relu(x)",
    "F.gelu": "x = F.gelu(x)",
    "torch.sigmoid": "x = torch.sigmoid(x)",
    "torch.tanh": "x = torch.tanh(x)",
    "torch.exp": "x = torch.exp(x)",
    "torch.abs": "x = torch.abs(x)",
    "op.add": "x = x + {t}",
    "op.mul": "x = x * {t}",
    "op.sub": "x = x - {t}",
    "torch.maximum": "x = torch.maximum(x, {t})",
    "torch.clamp": "x = torch.clamp(x, min=self.{a}, max=self.{b})",
    "torch.sum": "x = torch.sum(x, dim=-1)",
    "torch.mean": "x = torch.mean(x, dim=-1)",
    "torch.amax": "x = torch.amax(x, dim=-1)",
    "F.softmax": "x = F.softmax(x, dim=-1)",
}
_SCALAR_NAME = {"op.add": "shift", "op.mul": "scale", "op.sub": "offset"}
_EXTRA_INPUTS = ("y", "z", "w")

Pair = frozenset  # an unordered pair of API names


@dataclass(frozen=True)
class FamilyConfig:
    """Shapes of generated tasks: rows and columns are powers of two in these inclusive ranges (fp32 inputs)."""

    rows: tuple[int, int] = (64, 4096)
    """Smallest and largest row count."""
    cols: tuple[int, int] = (64, 1024)
    """Smallest and largest column count (the reduced dimension)."""

    def __post_init__(self) -> None:
        for name in ("rows", "cols"):
            lo, hi = getattr(self, name)
            if not (0 < lo <= hi and _pow2(lo) and _pow2(hi)):
                raise ValueError(f"FamilyConfig.{name} must be two powers of two lo <= hi, got {(lo, hi)!r}")


def _pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


@dataclass(frozen=True)
class Op:
    """One statement of a task's chain: its API, the input tensor it reads besides `x` (binary ops with a tensor
    operand), and the constructor arguments it reads (a binary op's scalar operand; clamp's `low`, `high`)."""

    api: str
    tensor: str | None = None
    params: tuple[str, ...] = ()


@dataclass(frozen=True)
class FamilyTask:
    """One task of the family: its name, API set (in chain order), KernelBench source, and the structured
    description the study's kernel writer reads (`ops`, the shape, the forward inputs, the constructor arguments).
    """

    name: str
    apis: tuple[str, ...]
    source: str
    ops: tuple[Op, ...] = field(repr=False)
    rows: int = 0
    cols: int = 0
    inputs: tuple[str, ...] = ("x",)
    """forward's arguments, in order: `x`, then one tensor per binary op with a tensor operand."""
    init: tuple[tuple[str, float], ...] = ()
    """Model's constructor arguments, in order, with the values `get_init_inputs` returns."""

    @property
    def pairs(self) -> frozenset[Pair]:
        return api_pairs(self.apis)

    def task(self) -> Task:
        """The project's Task record (origin `proposed`: the family stands in for the Proposer pipeline)."""
        return Task(name=self.name, source=self.source, origin="proposed", apis=self.apis)


def api_pairs(apis: Iterable[str]) -> frozenset[Pair]:
    """Every unordered pair of distinct APIs of a set."""
    return frozenset(Pair(p) for p in itertools.combinations(sorted(set(apis)), 2))


def compatible(apis: Iterable[str]) -> bool:
    """Whether the family can write a task on this API set: family APIs only, at most one row op, no excluded pair."""
    apis = set(apis)
    return apis <= set(APIS) and len(apis & ROW_OPS) <= 1 and not (api_pairs(apis) & EXCLUDED_PAIRS)


def _split_key(pair: Pair) -> str:
    return hashlib.sha256(f"{SPLIT_SALT}:{'+'.join(sorted(pair))}".encode()).hexdigest()


ALL_PAIRS: tuple[Pair, ...] = tuple(sorted((Pair(p) for p in itertools.combinations(APIS, 2) if compatible(p)),
                                           key=lambda p: sorted(p)))  # fmt: skip
TEST_PAIRS: frozenset[Pair] = frozenset(sorted(ALL_PAIRS, key=_split_key)[:N_TEST_PAIRS])
"""The held-out pairs: the N_TEST_PAIRS pairs of smallest salted SHA-256. A fixed rule, not a draw."""
TRAIN_PAIRS: frozenset[Pair] = frozenset(ALL_PAIRS) - TEST_PAIRS


def is_test_set(apis: Iterable[str]) -> bool:
    """Whether an API set holds a test pair (such a set belongs to the test split only)."""
    return bool(api_pairs(apis) & TEST_PAIRS)


def _sets(arity: int) -> list[tuple[str, ...]]:
    return [s for s in itertools.combinations(APIS, arity) if compatible(s)]


TRAIN_SETS: tuple[tuple[str, ...], ...] = tuple(s for s in _sets(2) + _sets(3) if not is_test_set(s))
"""Every API set (pairs, then triples) whose pairs are all training pairs."""
TEST_SETS: tuple[tuple[str, ...], ...] = tuple(s for s in _sets(2) + _sets(3) if is_test_set(s))
"""Every API set (pairs, then triples) holding at least one test pair."""


# ---------------------------------------------------------------------------------------------------- generation
def make_task(apis: Sequence[str], rng: random.Random, config: FamilyConfig | None = None) -> FamilyTask:
    """One task on an API set: the chain's order, the operands, the constants and the shape drawn from `rng`."""
    config = config or FamilyConfig()
    if not compatible(apis) or len(set(apis)) != len(apis):
        raise ValueError(f"the family has no task on {sorted(apis)!r} (see family.compatible)")
    pointwise = [a for a in apis if a not in ROW_OPS]
    rng.shuffle(pointwise)
    row = [a for a in apis if a in ROW_OPS]
    if not row:
        chain = pointwise
    elif row[0] == SOFTMAX:
        cut = rng.randint(0, len(pointwise))
        chain = [*pointwise[:cut], SOFTMAX, *pointwise[cut:]]
    else:
        chain = [*pointwise, row[0]]
    ops, inputs, init = [], ["x"], []
    for api in chain:
        if api in BINARY and (api == "torch.maximum" or rng.random() < 0.5):
            name = _EXTRA_INPUTS[len(inputs) - 1]
            inputs.append(name)
            ops.append(Op(api, tensor=name))
        elif api in BINARY:
            name = _SCALAR_NAME[api]
            value = rng.uniform(0.25, 2.0) if api == "op.mul" else rng.choice((-1, 1)) * rng.uniform(0.1, 1.5)
            init.append((name, round(value, 2)))
            ops.append(Op(api, params=(name,)))
        elif api == CLAMP:
            # bounds at least 0.25 from zero: clamp after exp or sigmoid (positive values) still leaves many inside
            init += [("low", round(-rng.uniform(0.25, 1.5), 2)), ("high", round(rng.uniform(0.25, 1.5), 2))]
            ops.append(Op(api, params=("low", "high")))
        else:
            ops.append(Op(api))
    rows = 2 ** rng.randint(config.rows[0].bit_length() - 1, config.rows[1].bit_length() - 1)
    cols = 2 ** rng.randint(config.cols[0].bit_length() - 1, config.cols[1].bit_length() - 1)
    source = task_source(ops, inputs, init, rows, cols)
    slug = "_".join(a.split(".")[-1] for a in chain)
    name = f"{'test' if is_test_set(apis) else 'train'}-{slug}-{hashlib.sha1(source.encode()).hexdigest()[:8]}"
    return FamilyTask(name, tuple(chain), source, tuple(ops), rows, cols, tuple(inputs), tuple(init))


def task_source(ops: Sequence[Op], inputs: Sequence[str], init: Sequence[tuple[str, float]], rows: int,
                cols: int) -> str:  # fmt: skip
    """The KernelBench source of a chain: Model with one statement per op, get_inputs, get_init_inputs."""
    body = []
    for op in ops:
        t = op.tensor or (f"self.{op.params[0]}" if op.params else "")
        a, b = (op.params + ("", ""))[:2]
        body.append("        " + _STATEMENT[op.api].format(t=t, a=a, b=b))
    names = [n for n, _ in init]
    ctor = ", ".join(["self", *names])
    assigns = "".join(f"\n        self.{n} = {n}" for n in names)
    described = ", then ".join(_describe(op) for op in ops)
    tensors = ", ".join(f"torch.randn({rows}, {cols})" for _ in inputs)
    values = ", ".join(repr(v) for _, v in init)
    return f'''import torch
import torch.nn as nn
import torch.nn.functional as F

APIS = {[op.api for op in ops]!r}


class Model(nn.Module):
    """{described}."""

    def __init__({ctor}):
        super().__init__(){assigns}

    def forward(self, {", ".join(inputs)}):
{chr(10).join(body)}
        return x


def get_inputs():
    return [{tensors}]


def get_init_inputs():
    return [{values}]
'''


def _describe(op: Op) -> str:
    name = op.api.split(".")[-1]
    if op.tensor:
        return f"{name} with {op.tensor}"
    if op.params:
        return f"{name} with {', '.join(op.params)}"
    return f"{name} over the last dimension" if op.api in ROW_OPS else name


def _tasks(split: str, sets: Sequence[tuple[str, ...]], n: int, seed: int, config: FamilyConfig | None
           ) -> list[FamilyTask]:  # fmt: skip
    """n distinct tasks, alternating pairs and triples; index i draws from `Random(f"{split}:{seed}:{i}")`, so the
    first k of n tasks are the k tasks of a shorter call. Pairs are taken in turn (every pair equally often);
    triples are drawn."""
    pairs = sorted((s for s in sets if len(s) == 2), key=sorted)
    triples = [s for s in sets if len(s) == 3]
    out: list[FamilyTask] = []
    seen: set[str] = set()
    i = 0
    while len(out) < n:
        rng = random.Random(f"{split}:{seed}:{i}")
        apis = pairs[(i // 2) % len(pairs)] if i % 2 == 0 else rng.choice(triples)
        t = make_task(apis, rng, config)
        if t.source not in seen:
            seen.add(t.source)
            out.append(t)
        i += 1
    return out


def train_tasks(n: int, seed: int = 0, config: FamilyConfig | None = None) -> list[FamilyTask]:
    """n distinct training tasks: API sets whose every pair is a training pair."""
    return _tasks("train", TRAIN_SETS, n, seed, config)


def test_tasks(n: int = 64, seed: int = 0, config: FamilyConfig | None = None) -> list[FamilyTask]:
    """n distinct test tasks (64 by default, the study's minimum): API sets holding at least one test pair."""
    return _tasks("test", TEST_SETS, n, seed, config)


test_tasks.__test__ = False  # a library function, not a pytest test: its name starts with `test`


def validate(tasks: Sequence[FamilyTask], validator: Validator | None = None) -> list[ValidationResult]:
    """The project's task validator on each task (its sandbox; CPU unless a validator says otherwise).

    Tasks are checked one by one, not as one batch: the similarity check maps every number to 0, so two instances
    of one composition (other shapes, other constants) are the same normalised source, and a batch would reject all
    but the first as `duplicate`. Instances of one composition are what the study wants; any other check applies.
    """
    validator = validator or Validator(ValidationConfig(device="cpu"))
    return validator.validate_many([(t.name, t.source, t.apis) for t in tasks], within_batch=False)
