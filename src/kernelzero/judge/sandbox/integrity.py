"""The harness's integrity inside the candidate's worker: its functions sealed before candidate code runs, and the
reflection a candidate needs to reach them (garbage-collector scans, code-object swaps) refused while it runs.

Everything here is defence in depth behind the static rules (`guards.check_introspection`, `check_monkeypatch`) and
behind the design (reference in its own worker, comparison in the parent, sealed memfds): in-process Python can
always be reached by in-process Python, so these guards name the known moves, they do not make the worker a vault.
- guard `introspection`: a CPython audit hook (it cannot be removed once added) refuses `gc.get_objects`,
  `gc.get_referrers` and `gc.get_referents` whenever the candidate's file is on the stack (its import or its
  forward), and writes to a function's `__code__` / `__defaults__` / `__kwdefaults__` made by the candidate's own
  lines (the standard library sets `__defaults__` itself: namedtuple, in imports a forward may trigger). gc is how a
  candidate finds the expected output, the harness's clock holders, the kept outputs of timed calls and the job dict;
  a code swap rewrites a harness function in place while every identity check still holds.
- guard `harness_patch`: `HarnessSeal` records every function of the harness's modules (module level and methods)
  with its code object and defaults before the candidate is imported; a rebound name, a replaced code object or a
  reloaded module (`importlib.reload` rebinds every name) found later is rejected.
"""

from __future__ import annotations

import sys
import types

from kernelzero.judge.sandbox.harness import GuardViolation

# Reading every live object, or one object's referrers/referents: the harness's own state is among them.
_GC_EVENTS = {"gc.get_objects", "gc.get_referrers", "gc.get_referents"}
_FUNCTION_ATTRS = {"__code__", "__defaults__", "__kwdefaults__"}
SEALED_MODULES = ("kernelzero.judge.timing", "kernelzero.judge.guards", "kernelzero.judge.sandbox.harness",
                  "kernelzero.judge.sandbox.judge_jobs", "kernelzero.judge.sandbox.messages",
                  "kernelzero.judge.sandbox.process", "kernelzero.judge.sandbox.integrity",
                  "kernelzero.judge.sandbox.pack", "kernelzero.judge.build.farm")  # fmt: skip


class IntrospectionWatch:
    """Guard `introspection` (runtime): gc scans and code-object swaps made by the candidate's code are refused and
    recorded (a refusal swallowed by the candidate still becomes a verdict at `check`)."""

    def __init__(self, candidate_path: str) -> None:
        self.path = candidate_path
        self.hits: list[str] = []
        self.armed = False
        self.error = GuardViolation  # held here: a reloaded harness module would define another class

    def _from_candidate(self, anywhere: bool) -> bool:
        """Whether the audited call was made by the candidate's lines (`anywhere`: or by code they called)."""
        frame = sys._getframe(2)
        while frame is not None:
            if frame.f_code.co_filename == self.path:
                return True
            if not anywhere:
                return False
            frame = frame.f_back
        return False

    def install(self) -> None:
        watch = self

        def hook(event: str, args: tuple) -> None:
            if not watch.armed:
                return
            if event in _GC_EVENTS:
                what, anywhere = event, True
            elif (event == "object.__setattr__" and len(args) >= 2 and args[1] in _FUNCTION_ATTRS
                  and isinstance(args[0], types.FunctionType)):  # fmt: skip
                what, anywhere = f"{getattr(args[0], '__qualname__', '?')}.{args[1]} = ...", False
            else:
                return
            if watch._from_candidate(anywhere):
                watch.hits.append(what)
                raise PermissionError(f"{what}: reflection on the judge's process is not allowed")

        sys.addaudithook(hook)
        self.armed = True

    def check(self) -> None:
        if self.hits:
            raise self.error(
                "introspection",
                f"the solution scanned the garbage collector or rewrote a function's "
                f"code ({'; '.join(self.hits[:3])}): a solution computes its outputs, it does not "
                "reach into the judge's objects",
            )


class HarnessSeal:
    """Guard `harness_patch` (runtime): the harness's functions, names and code objects as they were before the
    candidate was imported. `extra` adds (owner, attribute) pairs patched by the harness itself (the launch
    counter's `run` wrappers on Triton's classes)."""

    def __init__(self, extra: tuple = ()) -> None:
        self.items: list[tuple] = []
        self.error = GuardViolation  # held here: a reloaded harness module would define another class
        for name in SEALED_MODULES:
            mod = sys.modules.get(name)
            if mod is None:
                continue
            for attr, obj in list(vars(mod).items()):
                self._add(mod, attr, obj)
                if isinstance(obj, type) and obj.__module__ == name:
                    for a, member in list(vars(obj).items()):
                        self._add(obj, a, member)
        for owner, attr in extra:
            self._add(owner, attr, owner.__dict__.get(attr))

    def _add(self, owner, attr: str, obj) -> None:
        fn = obj.__func__ if isinstance(obj, (staticmethod, classmethod)) else obj
        if isinstance(fn, types.FunctionType):
            self.items.append((owner, attr, obj, fn, fn.__code__, fn.__defaults__, fn.__kwdefaults__))

    def broken(self) -> str | None:
        """The first sealed function that changed, as `module.name`, or None."""
        for owner, attr, obj, fn, code, defaults, kwdefaults in self.items:
            if (
                owner.__dict__.get(attr) is not obj
                or fn.__code__ is not code
                or fn.__defaults__ is not defaults
                or (fn.__kwdefaults__ is not kwdefaults)
            ):
                return f"{getattr(owner, '__name__', owner)}.{attr}"
        return None

    def check(self) -> None:
        changed = self.broken()
        if changed is not None:
            raise self.error(
                "harness_patch",
                f"the solution changed the judge's own code ({changed}: a function "
                "rebound, its code object replaced or its module reloaded)",
            )


class Integrity:
    """Both guards, as the candidate job uses them: armed before the candidate's import, checked at each stage."""

    def __init__(self, candidate_path: str, extra: tuple = ()) -> None:
        self.seal = HarnessSeal(extra)
        self.watch = IntrospectionWatch(candidate_path)
        self.watch.install()

    def check(self) -> None:
        self.watch.check()
        self.seal.check()
