"""Wide correctness trials: inputs outside the benchmark's own draw, so a fast path right only there is caught.

The plain trials draw `get_inputs()` as the task wrote it, so a kernel specialised to that draw passes them: a softmax
that skips the max pass because randn never overflows exp, a kernel with the row length baked in. Two extra trials,
planned in the judge's process and run by the reference and the candidate alike (after the replay trials):
  scale: the task's inputs times WIDE_SCALE (a power of two: exact), e.g. |x| up to ~150 for randn, past exp's range;
  sizes: the task's size constants (module-level ints that only get_inputs reads) rebound to about half (16 -> 9,
         256 -> 129: odd, so alignment assumptions break too), then get_inputs drawn as usual.
Never failing an honest solution: a trial the reference itself cannot run (it raises, or its output goes non-finite
where the plain draw was finite: an op outside its domain) is dropped before any candidate sees it; the scale
trial's atol grows with the reference output's magnitude (`scaled_atol`), since an exact product's rounding error
grows with it; sizes are rebound only where the Model cannot have baked them in (names nothing but get_inputs reads).
Cost: two forwards per candidate, on inputs no larger than the task's.
"""

from __future__ import annotations

import ast

from kernelzero.syntax import parse

WIDE_SCALE = 32.0


def shrunk_sizes(source: str) -> dict[str, int]:
    """Size constants of a task that a trial may rebind, with their smaller values: module-level `NAME = <int>`
    (2 or more) read in get_inputs and by nothing else in the module (not Model, get_init_inputs or another
    assignment), so the reference Model is the same model at the new sizes."""
    try:
        tree = parse(source)
    except SyntaxError:
        return {}
    consts: dict[str, int] = {}
    get_inputs = None
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            v = node.value
            if isinstance(v, ast.Constant) and type(v.value) is int and v.value >= 2:
                consts[node.targets[0].id] = v.value
        elif isinstance(node, ast.FunctionDef) and node.name == "get_inputs":
            get_inputs = node
    if get_inputs is None:
        return {}
    read_by_inputs = {n.id for n in ast.walk(get_inputs) if isinstance(n, ast.Name)}
    elsewhere: set[str] = set()
    for node in tree.body:
        if node is get_inputs:
            continue
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load):
                elsewhere.add(sub.id)
            elif isinstance(sub, (ast.Global, ast.Nonlocal)):
                elsewhere.update(sub.names)
    return {k: v // 2 + 1 for k, v in consts.items() if k in read_by_inputs and k not in elsewhere}


def wide_plan(source: str, seeds: list[int]) -> list[dict]:
    """The wide trials for a task: a scale trial, and a sizes trial where the task has rebindable size constants.
    `seeds`: two fresh seeds (drawn with the other trials' seeds, unseen by candidates until the run)."""
    plan = [{"seed": seeds[0], "scale": WIDE_SCALE}]
    sizes = shrunk_sizes(source)
    if sizes:
        plan.append({"seed": seeds[1], "sizes": sizes})
    return plan


def describe(entry: dict) -> str:
    if "sizes" in entry:
        return "wide trial (sizes " + ", ".join(f"{k}={v}" for k, v in entry["sizes"].items()) + ")"
    return f"wide trial (inputs x{entry['scale']:g})"


def wide_inputs(torch, task_mod, entry: dict, device: str, make_inputs) -> list:
    """One wide trial's inputs: the task's sizes rebound while get_inputs draws (then restored), floating inputs
    scaled. `make_inputs` is the harness's (seeded, on the device)."""
    sizes = entry.get("sizes") or {}
    saved = {k: getattr(task_mod, k) for k in sizes}
    try:
        for k, v in sizes.items():
            setattr(task_mod, k, v)
        inputs = make_inputs(torch, task_mod, entry["seed"], device)
    finally:
        for k, v in saved.items():
            setattr(task_mod, k, v)
    scale = entry.get("scale")
    if scale:
        inputs = [x * scale if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in inputs]
    return inputs


def scaled_atol(atol: dict[str, float], ref_wide: list, ref_plain: list) -> dict[str, float]:
    """atol for a scale trial: times the growth of the reference's largest output (at least 1). An exact
    computation's rounding error grows with its outputs; atol alone would judge x32 inputs (x1024 for a product) by
    the absolute error allowed at x1."""
    import torch

    def largest(t) -> float:  # |t| at its largest, without a temporary the size of t (outputs reach 8 GB)
        lo, hi = torch.aminmax(t)
        return max(abs(float(lo)), abs(float(hi)))

    def peak(ts: list) -> float:
        return max((largest(t) for t in ts if isinstance(t, torch.Tensor) and t.numel() and t.is_floating_point()),
                   default=0.0)  # fmt: skip

    plain, wide = peak(ref_plain), peak(ref_wide)
    growth = max(1.0, wide / plain) if plain > 0 else 1.0
    return {k: v * growth for k, v in atol.items()}


def usable(torch, outputs: list, plain: list) -> bool:
    """Whether the reference's wide-trial outputs can judge a candidate: finite wherever the plain trial's were."""
    plain_finite = all(bool(torch.isfinite(t).all()) for t in plain if t.is_floating_point())
    wide_finite = all(bool(torch.isfinite(t).all()) for t in outputs if t.is_floating_point())
    return wide_finite or not plain_finite
