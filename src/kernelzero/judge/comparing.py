"""Mixed into `Judge`: the candidate's outputs against the reference's (trials, replays, wide trials, timed outputs).

Each check takes the reference (`core.Reference`) and what the candidate's worker sealed; a failure is raised
through the caller's `fail(status, feedback, guard)` or returned as (guard, feedback), never swallowed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kernelzero.judge.check import compare
from kernelzero.judge.sandbox.process import ChannelError, Sandbox
from kernelzero.judge.wide import describe, scaled_atol

if TYPE_CHECKING:
    from kernelzero.judge.core import Reference


def out_of_memory(feedback: str) -> bool:
    """Whether a failure's text is the device running out of memory (torch's allocator, or `cuMemCreate` and the
    other driver calls of `sandbox/devmem.py`)."""
    text = feedback.lower()
    return "out of memory" in text or "outofmemoryerror" in text


def _lists_of_lists(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, list) for x in v)


class Comparing:
    """The comparisons of a candidate's stages (attributes are the Judge's: `options`, `compare_device`)."""

    def _compare_trials(self, ref: Reference, outputs: list, replay: list, fail: Callable) -> float:
        """Trials, then replay trials, against the reference; raises `fail(...)`; returns the worst abs error."""
        o = self.options
        worst = 0.0
        for trial, (r, out) in enumerate(zip(ref.outputs, outputs)):
            res = compare(r, out, o.atol, o.rtol, self.compare_device)
            if not res.ok:
                status = "rejected" if res.guard == "tensor_subclass" else "incorrect"
                raise fail(status, f"trial {trial + 1}/{len(ref.outputs)}: {res.feedback}", res.guard)
            worst = max(worst, res.max_abs_err)
        for k, (r, out) in enumerate(zip(ref.replay_outputs, replay)):
            res = compare(r, out, o.atol, o.rtol, self.compare_device)
            if not res.ok:  # right on fresh inputs, wrong on the same buffer with new contents: a cache
                raise fail("rejected", f"replay {k + 1}/{len(ref.replay)} (an input buffer reused with new "
                           f"contents) gave a stale or wrong output: {res.feedback}", "replay")  # fmt: skip
        return worst

    def _compare_wide(self, ref: Reference, wide: Any, fail: Callable) -> None:
        """The wide trials (judge/wide.py) against the reference: a fast path right only on the benchmark's own value
        range or sizes is `incorrect` here. Raises `fail(...)`."""
        o = self.options
        if not _lists_of_lists(wide) or len(wide) != len(ref.wide_outputs):
            raise fail("rejected", f"the outputs file does not hold {len(ref.wide_outputs)} wide trials", "channel")
        for entry, r, out in zip(ref.wide, ref.wide_outputs, wide):
            atol = scaled_atol(o.atol, r, ref.outputs[0]) if entry.get("scale") else o.atol
            res = compare(r, out, atol, o.rtol, self.compare_device)
            if not res.ok:
                status = "rejected" if res.guard == "tensor_subclass" else "incorrect"
                raise fail(status, f"{describe(entry)}: {res.feedback}", res.guard)

    def _check_timed_outputs(self, sb: Sandbox, ref: Reference) -> tuple[str, str] | None:
        """Guard `replay`, timed calls: outputs made while the clock ran (flush buffer live, timing inputs) must
        match the reference's on the same inputs. Stops a module that is honest until it senses it is timed.
        Returns (guard, feedback) on a violation."""
        try:
            timed = sb.load_output("timed", self.compare_device)
        except ChannelError as exc:
            return "channel", str(exc)
        except Exception as exc:
            if out_of_memory(f"{type(exc).__name__}: {exc}"):  # the judge's copy, not the candidate's doing
                return "out_of_memory", f"the judge ran out of GPU memory loading the timed outputs: {exc}"
            return "tensor_subclass", f"timed outputs did not load as plain tensors: {exc}"
        if not isinstance(timed, list) or not all(isinstance(t, (list, tuple)) and len(t) == 2
                                                  and isinstance(t[1], list) for t in timed):  # fmt: skip
            return "channel", "the timed outputs file does not hold (structure, outputs) pairs"
        if len(timed) != len(ref.timed_outputs):
            return "replay", f"{len(timed)} timed outputs kept, expected {len(ref.timed_outputs)}"
        for j, ((structure, out), (ref_structure, expected)) in enumerate(zip(timed, ref.timed_outputs)):
            res = compare(expected, out, self.options.atol, self.options.rtol, self.compare_device)
            if structure != ref_structure or not res.ok:
                why = f"output structure {structure} != {ref_structure}" if structure != ref_structure else res.feedback
                guard = "tensor_subclass" if res.guard == "tensor_subclass" else "replay"
                return guard, f"a timed call on input set {j + 1} returned a wrong output: {why}"
        return None
