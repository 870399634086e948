"""The front check: a CUDA candidate's undeclared identifiers found in seconds, before the build farm's full build.

A build of a KernelBench-style `load_inline` call parses all of torch (tens of seconds of nvcc and host compiles),
and a compile error pays that once per build trick tried (farm.py). The front check reads the call from the
candidate's source without running it (`read_call`: literals only) and compiles the split's torch-free device TU
(split.py) with nvcc's device front end only (`-fdevice-syntax-only -cubin`, the build's own nvcc flags): about a
second. Only when nvcc finds an undefined identifier there, the plain build's `.cu` is looked at: its headers
(torch's, CUDA's, the candidate's leading includes) preprocessed once with their macros (`HeaderFacts`, kept per
header prefix), or, where the candidate's code could make identifiers the headers do not hold (an include after
code, `##`, a pasting macro of the headers such as TORCH_CHECK), the candidate's whole `.cu` preprocessed (`nvcc
-E`). Each both in the host pass and with `__CUDA_ARCH__` defined for the device pass, at once. It runs in a
sandbox like every build (the source is untrusted; only flags that load nothing are passed on).

Contract: `compile_error` only when the farm's build would certainly fail; it is then the farm's result at once, with
the compiler's message. Everything else (`passed`, `unsure`, `skipped`) lets the normal build run exactly as before.
The one error it concludes on is `identifier "X" is undefined` in the candidate's device code, and only when X
appears in both preprocessed texts of the plain `.cu` exactly as often as on the lines nvcc flagged (or, from the
headers' facts: the headers never name X, the candidate's code names it only there, and no macro on those lines
or pasting macro anywhere in its code could change that: `conclude_from_headers`). Then:
- the split builds (`split+bind`, `split+pch`, `split`) compile this very device TU with these flags,
  so they fail on the same error;
- the plain build fails too: its TU declares X nowhere (a declaration needs the name in the preprocessed text: not
  in torch's or CUDA's headers, not in the candidate's host code), and the flagged code is compiled there (in the
  preprocessed text, the same item word for word: split.py moves whole items, and code with conditional or #line
  directives, or `__CUDA_ARCH__`, is not checked), so it reports the same undefined identifier.
Before the device TU, once the farm has precompiled torch/extension.h for the host flags, the split's host TU (the
candidate's host code, each launch a stub call with the kernel's parameter types) is compiled with g++
`-fsyntax-only` against that header, the plain build's own: a token missing between two statements, or a tensor
passed where a pointer is expected, on the candidate's own lines and through no macro, is certain too
(`conclude_host`, then g++'s message is the answer and the device TU is not checked): the plain build compiles the
same tokens against the same header, and neither error depends on anything else. Any other error (their meaning can
depend on the headers around them), a fatal error, a timeout or a compiler that cannot be run is `unsure`. In a
batch the farm's checks share a few slots (`FrontSlots`), the host TUs' checks taken first: cheaper, and certain alone.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import re
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext, suppress
from dataclasses import dataclass
from pathlib import Path

from kernelzero.judge.build.front_call import nvcc_command, plan, read_call
from kernelzero.judge.build.headers import host_compile
from kernelzero.judge.build.split import CURRENT_STREAM, split_call
from kernelzero.judge.sandbox.process import _PRELUDE, Sandbox
from kernelzero.judge.sandbox.spawn import spawner

_UNDEFINED = re.compile(r'^(?P<file>\S+?)\((?P<line>\d+)\): error: identifier "(?P<name>\w+)" is undefined$')
_ERROR = re.compile(r"\berror\b")
_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(?P<name>\w+)(?P<body>.*)$", re.M)
_IDENT = re.compile(r"[A-Za-z_]\w*")
_COUNT = re.compile(r"^\d+ errors? detected in the compilation of ")


HOST_CUT = "the host TU parsed without an error; the check stopped before GCC's template instantiation"
# Appended to the host TU the farm checks: g++, stopping at the first error, reports this assertion once everything
# before it has parsed without one, and so stops before the deferred instantiation of torch's templates (~4.5 s of a
# 5 s check; 0.13 s instead on the dev box). Not `#error`: g++ lexes the whole file first and would report it first.
HOST_END = "kz-front: the end of the candidate's host code"
_HOST_END_DECL = f'\nstatic_assert(false, "{HOST_END}");\n'
HOST_WALL_FACTOR = 20  # a cut host check's wall-clock backstop: this many times its CPU seconds
_CC1_KILLED = "signal terminated program cc1plus"  # g++'s driver, when its compiler proper was killed
_GXX_ERROR = re.compile(r"\b(fatal )?error:")


def host_cut_command(command: list[str], cpu_s: float) -> list[str]:
    """`command` (g++) with each of its processes limited to `cpu_s` CPU seconds (RLIMIT_CPU: whole seconds, killed
    at the limit), behind a wall-clock backstop. CPU seconds, not wall seconds: under a batch's builds the check gets
    a fraction of a core, and a 1 s wall cut on the H200 stopped g++ before it had parsed the candidate's code (9 of
    19 host-code errors went on to full builds); the parse takes the same ~0.1-0.3 CPU seconds under any load."""
    cpu = max(1, math.ceil(cpu_s))
    return ["timeout", "-s", "KILL", str(cpu * HOST_WALL_FACTOR), "sh", "-c", f'ulimit -t {cpu}; exec "$@"', "kz-host",
            *command]  # fmt: skip


def _error_lines(log: str) -> list[str]:
    """g++'s error lines (fatal ones included), in the order it reported them."""
    return [line for line in log.splitlines() if _GXX_ERROR.search(line)]


def host_parsed(rc: int, log: str) -> bool:
    """Whether a check of the host TU with `_HOST_END_DECL` appended, run by `host_cut_command`, stopped with the
    candidate's code parsed and no error found in it: its first error the end marker's, or the run cut (the compiler
    proper killed at its CPU limit, which the driver reports before exiting 1, or the whole check at the backstop,
    137). A candidate that writes the marker or the driver's words itself reads as parsed: the full build then
    decides, the safe side."""
    if rc == 128 + signal.SIGKILL or (rc != 0 and _CC1_KILLED in log):
        return True
    errors = _error_lines(log)
    return rc != 0 and bool(errors) and HOST_END in errors[0]


@dataclass
class FrontResult:
    """`compile_error` (the plain build certainly fails: `feedback`, the compiler's message), `passed` (no error seen),
    `unsure` (an error it cannot conclude on, or the check itself failed: `why`) or `skipped` (does not apply)."""

    status: str
    feedback: str = ""
    why: str = ""
    seconds: float = 0.0
    waited: float = 0.0  # seconds waiting for a slot (`check_with_headers`: or the headers), besides `seconds`


def _flagged(device_rc: int, device_log: str, device_tu: str) -> FrontResult | dict[str, tuple[int, list[str]]]:
    """From the device TU's check (exit code, nvcc's output): `passed`, `unsure`, or each undefined identifier with
    how often it occurs on the lines nvcc flagged, and those lines."""
    if device_rc == 0:
        return FrontResult("passed")
    if device_rc < 0:  # the check itself did not finish
        return FrontResult("unsure", why=device_log[-300:])
    errors = [line for line in device_log.splitlines() if _ERROR.search(line) and not _COUNT.match(line)]
    found = [_UNDEFINED.match(line) for line in errors]
    if not errors or not all(m and m["file"] == "device.cu" for m in found):
        return FrontResult("unsure", why="an error the check does not conclude on")
    lines = device_tu.splitlines()
    at: dict[str, set[int]] = {}
    for m in found:
        at.setdefault(m["name"], set()).add(int(m["line"]))
    flagged = {}
    for name, numbers in at.items():
        text = [lines[i - 1] for i in sorted(numbers) if 0 < i <= len(lines)]
        uses = sum(len(_word(name).findall(line)) for line in text)
        if uses == 0:
            return FrontResult("unsure", why=f"{name} is not on the line nvcc flagged")
        flagged[name] = (uses, text)
    return flagged


def _word(name: str) -> re.Pattern:
    return re.compile(rf"\b{re.escape(name)}\b")


def _certain(device_log: str) -> FrontResult:
    feedback = "\n".join(line for line in device_log.splitlines() if "warning" not in line)
    return FrontResult("compile_error", feedback=f"Error building extension (front check):\n{feedback}"[-6000:])


def conclude(device_rc: int, device_log: str, device_tu: str, preprocessed: list[str] | None) -> FrontResult:
    """The verdict from the device TU's check and the plain `.cu` preprocessed (one text per pass; None: not
    preprocessed): certain when each undefined identifier occurs there exactly as often as on the flagged lines."""
    flagged = _flagged(device_rc, device_log, device_tu)
    if isinstance(flagged, FrontResult):
        return flagged
    if preprocessed is None:
        return FrontResult("unsure", why="the plain .cu was not preprocessed")
    for name, (uses, _) in flagged.items():
        if any(len(_word(name).findall(text)) != uses for text in preprocessed):
            return FrontResult("unsure", why=f"{name} appears elsewhere in the plain build's translation unit")
    return _certain(device_log)


# The host TU's errors the check concludes on (g++ in the C locale): a token missing between statements, and a tensor
# passed where a pointer is expected. Neither depends on anything but the code and the header's types.
_HOST_CERTAIN = re.compile(
    r"^host\.cpp:(?P<line>\d+):\d+: error: (expected '[^']+'( or '[^']+')* before '[^']+'"
    r"|cannot convert '(at|torch)::Tensor' to '[\w\s:]*\*')"
)
_CAPS = re.compile(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]*\b|\b[A-Z]{2,}\b")  # a macro by the usual spelling


def conclude_host(rc: int, log: str, host_tu: str) -> FrontResult:
    """The verdict from the host TU's check: the split's host TU (the candidate's host code, each launch a call of a
    stub taking the kernel's parameters) compiled with `-fsyntax-only` against torch/extension.h, the header the
    plain build's TU includes. Certain only when g++'s first error is one of `_HOST_CERTAIN`, on the candidate's own
    lines (for a missing token, also the line before it), none of them an include, a stub's declaration or a name
    spelt as macros are, and no macro expansion is involved: those lines mean the same in the plain build, so it
    fails too. Anything else is `unsure` (the build runs)."""
    if rc == 0:
        return FrontResult("passed")
    if rc < 0:
        return FrontResult("unsure", why=log[-300:])
    errors = _error_lines(log)
    m = _HOST_CERTAIN.match(errors[0]) if errors else None
    if m is None:
        return FrontResult("unsure", why="an error in host code the check does not conclude on")
    first = log[: log.find(errors[1])] if len(errors) > 1 else log
    if "in expansion of macro" in first or "in definition of macro" in first:
        return FrontResult("unsure", why="the error comes through a macro")
    lines, n = host_tu.replace(CURRENT_STREAM, "0").splitlines(), int(m["line"])  # the split's stream: no macro
    if not 0 < n <= len(lines):
        return FrontResult("unsure", why="the error is not on the candidate's plain code")
    spanned = [n] if "cannot convert" in m[0] else [n, *[i for i in range(n - 1, 0, -1) if lines[i - 1].strip()][:1]]
    if any(lines[i - 1].lstrip().startswith(("#", "void kz_launch_")) or _CAPS.search(lines[i - 1]) for i in spanned):
        return FrontResult("unsure", why="the error is not on the candidate's plain code")
    return _certain(_unsplit(first).replace("host.cpp", "main.cpp"))


def _unsplit(log: str) -> str:
    """g++'s words on the host TU as the candidate wrote it: the launch stub a split made of `k<<<...>>>(args)` is
    shown as that launch, and neither the stub's name nor the current stream a launch without one was given (the
    candidate wrote neither; that stream is the default one, 0, wherever the candidate runs)."""
    return re.sub(r"\bkz_launch_(\w+)\(dim3\(", r"\1<<<dim3(", log.replace(CURRENT_STREAM, "0"))


@dataclass(frozen=True)
class HeaderFacts:
    """What the headers of a plain `.cu` (torch's, CUDA's, the candidate's leading includes) hold, from their text
    preprocessed with `-dD` (macro definitions kept), both passes: every identifier, every macro name, and the
    macros that can paste tokens into new identifiers (`##` in their body, or reaching such a macro)."""

    identifiers: frozenset[str]
    macros: frozenset[str]
    pasting: frozenset[str]

    @classmethod
    def parse(cls, texts: list[str]) -> HeaderFacts:
        bodies: dict[str, str] = {}
        for text in texts:
            for m in _DEFINE.finditer(text):
                bodies[m["name"]] = bodies.get(m["name"], "") + " " + (m["body"] or "")
        pasting = {name for name, body in bodies.items() if "##" in body}
        grew = True
        while grew:  # a macro whose body names a pasting macro pastes too
            more = {n for n, body in bodies.items() if n not in pasting and pasting & set(_IDENT.findall(body))}
            pasting |= more
            grew = bool(more)
        identifiers = frozenset(i for text in texts for i in _IDENT.findall(text))
        return cls(identifiers, frozenset(bodies), frozenset(pasting))

    def pastes(self, code: str) -> bool:
        """Does `code` name a macro that may paste (then its preprocessed text may hold identifiers it does not)?"""
        return not self.pasting.isdisjoint(_IDENT.findall(code))


def split_includes(cuda_text: str) -> tuple[str, str] | None:
    """(the leading `#include` lines, the rest) of the candidate's `.cu` code, or None when the rest includes or
    pastes (`##`): then its identifiers are not bounded by the headers' and its own text (`conclude_from_headers`)."""
    lines = cuda_text.split("\n")
    k = 0
    while k < len(lines) and (not lines[k].strip() or re.match(r"\s*#\s*include\b", lines[k])):
        k += 1
    head, rest = "\n".join(lines[:k]), "\n".join(lines[k:])
    return None if re.search(r"#\s*include\b", rest) or "##" in rest else (head, rest)


def conclude_from_headers(device_rc: int, device_log: str, device_tu: str, cuda_text: str, rest: str,
                          facts: HeaderFacts) -> FrontResult:  # fmt: skip
    """As `conclude`, without preprocessing the candidate: the plain `.cu` is the headers then `rest` (the candidate's
    code after its leading includes, no include or `##` in it). Its preprocessed text holds an identifier only where
    the headers do (`facts`), where `rest` has it word for word, or where a macro pastes one. So an undefined X is
    certain when the headers never name X, the candidate's code names it only on the flagged lines, no identifier of
    `rest` is a pasting macro, and no identifier on the flagged lines is a macro (so that code expands as written)."""
    flagged = _flagged(device_rc, device_log, device_tu)
    if isinstance(flagged, FrontResult):
        return flagged
    if facts.pastes(rest):
        return FrontResult(
            "unsure", why=f"{sorted(facts.pasting & set(_IDENT.findall(rest)))[0]} may paste identifiers"
        )
    for name, (uses, text) in flagged.items():
        if name in facts.identifiers or len(_word(name).findall(cuda_text)) != uses:
            return FrontResult("unsure", why=f"{name} appears elsewhere in the plain build's translation unit")
        macros = {i for line in text for i in _IDENT.findall(line)} & facts.macros
        if macros:
            return FrontResult("unsure", why=f"{sorted(macros)[0]} on a flagged line is a macro")
    return _certain(device_log)


# Slot priorities, lowest first: the device TU of a candidate whose code names an identifier declared nowhere
# (`undeclared_names`), then every host TU, then the other device TUs.
SUSPECT_FIRST, HOST_FIRST, DEVICE_NEXT = 0, 1, 2

_LITERAL = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|(?<![\w.])\.?\d(?:[eEpP][+-]|[\w.])*')
_MEMBER = re.compile(r"(?:\.|->|::)\s*[A-Za-z_]\w*")  # a member or a qualified name: never an undeclared identifier
# A name declared here: after another name (its type, a qualifier, `struct`), a `*` or `&` between them allowed, or
# after `#define`. A few keywords read as a type before a use (`return x`) and do not count.
_DECLARED = re.compile(
    r"(?=(?:#\s*define|\b(?!(?:return|case|goto|else|do|throw|new|delete|sizeof|co_return|co_yield)"
    r"\b)[A-Za-z_]\w*|>)[\s*&]+([A-Za-z_]\w*))"
)  # a lookahead: `const float* x` declares x too


_KEYWORDS = frozenset(
    "alignas alignof asm auto bool break case catch char char16_t char32_t char8_t class const consteval constexpr "
    "constinit const_cast continue decltype default delete do double dynamic_cast else enum explicit export extern "
    "false float for friend goto if inline int long mutable namespace new noexcept nullptr operator private protected "
    "public register reinterpret_cast requires return short signed sizeof static static_assert static_cast struct "
    "switch template this thread_local throw true try typedef typeid typename union unsigned using virtual void "
    "volatile wchar_t while __global__ __device__ __host__ __shared__ __constant__ __restrict__ __forceinline__ "
    "__launch_bounds__ __noinline__ define undef ifdef ifndef elif endif pragma defined".split()
)  # a header set that names none of them (a test's) must not make them suspects


def undeclared_names(code: str, facts: HeaderFacts) -> set[str]:
    """The names `code` (the device TU, headers not expanded) uses that its headers never name (`facts`) and that
    no occurrence in it declares, by a lexical rule (`_DECLARED`): an undeclared identifier as models write them.
    Only an order for the checks: a name missed or wrongly counted moves a check earlier or later, never its
    verdict (that is nvcc's, `conclude_from_headers`)."""
    code = re.sub(r"^[ \t]*#[ \t]*include\b.*$", "", code, flags=re.M)
    code = _MEMBER.sub(" ", _LITERAL.sub(" 0 ", code))
    used = set(_IDENT.findall(code)) - facts.identifiers - _KEYWORDS
    return used - set(_DECLARED.findall(code))


class FrontSlots:
    """The farm's front-check slots: `n` jobs at once, given out lowest priority first, in arrival order within one.
    A batch's checks are CPU-bound (more slots answer no sooner), so the order decides when each is answered: the
    host TU checks (~0.15 CPU s, and a host-code error is certain there alone) before the device TU checks (~0.3 s)."""

    def __init__(self, n: int) -> None:
        self._free, self._waiting, self._arrivals, self._turn = n, set(), itertools.count(), threading.Condition()

    @contextmanager
    def take(self, priority: int) -> Iterator[None]:
        """One slot for the `with` block, once no waiter of a lower priority, or of this one queued earlier, is left."""
        with self._turn:
            me = (priority, next(self._arrivals))
            self._waiting.add(me)
            try:
                while not (self._free and min(self._waiting) == me):
                    self._turn.wait()
                self._free -= 1
            finally:  # taken, or interrupted: out of the queue either way, and a slot still free goes to the next
                self._waiting.discard(me)
                self._turn.notify_all()
        try:
            yield
        finally:
            with self._turn:
                self._free += 1
                self._turn.notify_all()


Slots = FrontSlots | threading.Semaphore | None  # a plain semaphore: its own order, priorities ignored


@contextmanager
def _slot(slots: Slots, priority: int, waits: list[float]) -> Iterator[None]:
    """One of `slots` (None: none needed) for a job of `priority`; the seconds waited for it appended to `waits`."""
    t = time.monotonic()
    with slots.take(priority) if isinstance(slots, FrontSlots) else (slots or nullcontext()):
        waits.append(time.monotonic() - t)
        yield


@dataclass
class FrontCheck:
    """Runs the check for the farm: up to two sandboxed jobs per candidate (g++ on the host TU; nvcc on the device
    TU, then, for an undefined identifier, the preprocessing). Keeps the `HeaderFacts` of each header prefix it has
    seen (a few candidates' worth of include lines), so that in the common case a certain error costs one job."""

    arch: str = "9.0"
    timeout_s: float = 60.0
    memory_limit_gb: float = 16.0
    extra_env: dict | None = None
    max_headers: int = 64  # header prefixes whose facts are kept (0: preprocess each candidate's `.cu` instead)
    # The host TU's check: the precompiled torch/extension.h for the host flags (the farm's, once built; None: not
    # yet, and the host code is not checked), or `host_without_pch` to parse the header each time (~16 s on 2 cores)
    host_pch: Callable[[list[str]], str | None] | None = None
    host_without_pch: bool = False

    def __post_init__(self) -> None:
        self._facts: dict[str, HeaderFacts] = {}
        self._lock = threading.Lock()

    def check(self, source: str, host_cap_s: float | None = None, slots: Slots = None) -> FrontResult:
        """The front check of `source`'s first load_inline call (never raises for the candidate's faults). g++ stops
        at the first error (`-Wfatal-errors`), so an error in the candidate's code is reported in ~0.1-0.3 s, as it is
        parsed; the rest of a clean check, ~4.5 s of 5, is GCC instantiating the templates torch's header left pending,
        the same for an empty TU, where only an error inside a template the candidate instantiates could show. With
        `host_cap_s` (the farm's check) the host check stops there: at an assertion appended after the candidate's
        code (`_HOST_END_DECL`), or at `host_cap_s` CPU seconds (`host_cut_command`); it is then `passed` with why
        HOST_CUT where the device TU passed. The host TU is checked first (on one of `slots` at HOST_FIRST), and an
        error certain there is the answer; else the device TU (at DEVICE_NEXT). A suspect (`_suspect`: a name its
        device TU declares nowhere) has its device TU checked before any host TU (at SUSPECT_FIRST), and a certain
        error there is the answer: in a batch its answer does not wait behind every host TU check. `waited`: for
        slots, not `seconds`."""
        import torch.utils.cpp_extension as cpp

        t0, waits = time.monotonic(), []
        if cpp.CUDA_HOME is None:
            return FrontResult("skipped", why="no CUDA toolkit")
        a = read_call(source)
        planned = "its load_inline call cannot be read" if a is None else plan(a)
        if isinstance(planned, str):
            return FrontResult("skipped", why=planned, seconds=round(time.monotonic() - t0, 3))
        device_tu, plain, extra = planned
        nvcc, flags = nvcc_command(list(a["extra_cflags"] or []), extra, self.arch)
        host, cut, on_host, device = self._host_job(a), False, None, None
        if self._suspect(nvcc, flags, device_tu, plain):  # its device TU first: an undefined name is likely
            with _slot(slots, SUSPECT_FIRST, waits):
                device = self._device(nvcc, flags, device_tu, plain)
        if host is not None and (device is None or device.status != "compile_error"):
            if host_cap_s is not None:  # the farm's check: stopped at the end of the parse
                host = (host[0] + _HOST_END_DECL, host_cut_command(host[1], host_cap_s))
            with _slot(slots, HOST_FIRST, waits):
                hosted = self._run_host(*host)
            cut = host_cap_s is not None and host_parsed(*hosted)
            on_host = None if cut else conclude_host(*hosted, host[0])
        # A certain host error is the answer before the device TU is looked at: conclude_host's argument needs nothing
        # from it (the plain build compiles these tokens against this header whatever the kernels hold; a device error
        # too only fails it more). When both compilers ran at once, an undefined identifier in the device TU stopped
        # g++ and nvcc's answer was taken: now it is g++'s, and where nvcc's was `unsure`, no build is run to fail.
        if on_host is not None and on_host.status == "compile_error":
            result = on_host
        else:
            if device is None:
                with _slot(slots, DEVICE_NEXT, waits):
                    device = self._device(nvcc, flags, device_tu, plain)
            result = device
            if cut and result.status == "passed":
                result = FrontResult("passed", why=HOST_CUT)
            elif on_host is not None and on_host.status == "unsure" and result.status == "passed":
                result = on_host
        result.waited = round(sum(waits), 3)
        result.seconds = round(time.monotonic() - t0 - sum(waits), 3)
        return result

    def _known_facts(self, nvcc: str, flags: list[str], plain: str) -> tuple[str, tuple[str, str] | None,
                                                                            HeaderFacts | None]:  # fmt: skip
        """(the key of the plain `.cu`'s headers, its `split_includes`, their facts if already learnt)."""
        parts = split_includes(plain.split("\n", 3)[3]) if self.max_headers > 0 else None
        key = json.dumps([nvcc, flags, self.arch, parts[0] if parts else None])
        with self._lock:
            return key, parts, self._facts.get(key) if parts else None

    def _suspect(self, nvcc: str, flags: list[str], device_tu: str, plain: str) -> bool:
        """Whether the device TU names something neither it nor its headers declare (`undeclared_names`), judged
        only where these headers' facts are known (a batch's first candidate of a header prefix learns them)."""
        _, parts, facts = self._known_facts(nvcc, flags, plain)
        return facts is not None and bool(undeclared_names(device_tu, facts))

    def _device(self, nvcc: str, flags: list[str], device_tu: str, plain: str) -> FrontResult:
        """The device TU's verdict: from its headers' facts where known or learnt, else the whole `.cu` preprocessed."""
        cuda_text = plain.split("\n", 3)[3]
        key, parts, facts = self._known_facts(nvcc, flags, plain)
        if parts is not None and facts is not None and facts.pastes(parts[1]):
            parts = None  # a macro of these headers in this code may paste: preprocess the candidate's own `.cu`
        if parts is not None:
            prefix = None if facts is not None else "\n".join([*plain.split("\n")[:3], parts[0]])
            rc, log, texts = self._run(nvcc, flags, device_tu, prefix, macros=True)
            if facts is None and texts is not None:
                facts = HeaderFacts.parse(texts)
                with self._lock:
                    while len(self._facts) >= self.max_headers:
                        self._facts.pop(next(iter(self._facts)))
                    self._facts[key] = facts
            if facts is None:  # passed, or unsure (nothing preprocessed)
                return conclude(rc, log, device_tu, None)
            if not facts.pastes(parts[1]):
                return conclude_from_headers(rc, log, device_tu, cuda_text, parts[1], facts)
        rc, log, texts = self._run(nvcc, flags, device_tu, plain, macros=False)  # or the headers were new and paste
        return conclude(rc, log, device_tu, texts)

    def _host_job(self, a: dict) -> tuple[str, list[str]] | None:
        """(the split's host TU, g++'s command for its syntax check) or None when it is not checked: no split, no
        precompiled header for its flags (unless `host_without_pch`), or include paths of the candidate's own."""
        parted = split_call(a)
        if parted is None or a["extra_include_paths"]:
            return None
        (cpp_sources, _), cflags = parted
        pch = self.host_pch(cflags) if self.host_pch is not None else None
        if pch is None and not self.host_without_pch:
            return None
        cxx, host_flags = host_compile([*cflags, *([f"-I{pch}"] if pch else [])], True)
        return cpp_sources[0], [
            cxx,
            "-DTORCH_EXTENSION_NAME=kz_front",
            *host_flags,
            "-Wfatal-errors",
            "-fsyntax-only",
            "host.cpp",
        ]  # the first error decides

    def _run_host(self, tu: str, command: list[str]) -> tuple[int, str]:
        """g++'s exit code and output on the host TU `tu` (`_host_job`'s `command`); -1: it did not finish or run."""
        script = f"{shlex.join(command)} > host.log 2>&1; echo $? > host.rc\n"
        try:
            with self._sandboxed({"host.cpp": tu}, script) as s:
                return int((s / "host.rc").read_text().strip() or -1), (s / "host.log").read_text(errors="replace")
        except (subprocess.TimeoutExpired, OSError, ValueError) as exc:  # the check's own failure: build as usual
            return -1, f"the front check did not finish: {type(exc).__name__}: {exc}"

    def _run(self, nvcc: str, flags: list[str], device_tu: str, preprocess: str | None,
             macros: bool) -> tuple[int, str, list[str] | None]:  # fmt: skip
        """(nvcc's exit code and output on the device TU, and `preprocess` preprocessed in both passes, with `-dD` when
        `macros`, or None when not asked, not needed (no undefined identifier) or failed). A timeout or a check that
        cannot run is exit code -1, which no conclusion takes for certain."""
        sm = self.arch.replace(".", "")
        # the device pass alone (-cubin: no host pass, whose compile of the stubs took most of a clean check)
        device = [nvcc, *flags, "-fdevice-syntax-only", "-cubin", "device.cu", "-o", "device.cubin"]
        common = [nvcc, *flags, "-E", *(["-Xcompiler", "-dD"] if macros else [])]
        passes = {"host": [*common, "plain.cu", "-o", "host.ii"],
                  "dev": [*common, f"-D__CUDA_ARCH__={sm}0", "-DCUDA_DOUBLE_MATH_FUNCTIONS", "plain.cu", "-o",
                          "dev.ii"]} if preprocess is not None else {}  # fmt: skip
        files = {"device.cu": device_tu, **({"plain.cu": preprocess} if preprocess is not None else {})}
        # the device TU first; only an undefined identifier in it needs the preprocessing (both passes at once)
        script = f"{shlex.join(device)} > device.log 2>&1; echo $? > device.rc\n"
        undefined = "'^device.cu([0-9]*): error: identifier \".*\" is undefined$'"
        script += f"grep -q {undefined} device.log || exit 0\n"
        script += "".join(f"({shlex.join(c)} > {k}.log 2>&1; echo $? > {k}.rc) &\n" for k, c in passes.items())
        script += "wait\n"
        try:
            with self._sandboxed(files, script) as s:
                device_rc = int((s / "device.rc").read_text().strip() or -1)
                log = (s / "device.log").read_text(errors="replace")
                done = passes and all((s / f"{k}.rc").is_file() and (s / f"{k}.rc").read_text().strip() == "0"
                                      for k in passes)  # fmt: skip
                return device_rc, log, [(s / f"{k}.ii").read_text(errors="replace") for k in passes] if done else None
        except (subprocess.TimeoutExpired, OSError, ValueError) as exc:  # the check's own failure: build as usual
            return -1, f"the front check did not finish: {type(exc).__name__}: {exc}", None

    @contextmanager
    def _sandboxed(self, files: dict[str, str], script: str) -> Iterator[Path]:
        """Runs `script` (sh) to its end in a sandbox whose scratch holds `files`, and yields that scratch to read
        (TimeoutExpired past `timeout_s`); after the `with` block, what it left running is killed, its scratch gone."""
        sb = Sandbox(job={}, device="cpu", memory_limit_gb=self.memory_limit_gb, extra_env=dict(self.extra_env or {}))
        s, proc = sb.scratch, None
        try:
            for name, text in files.items():
                (s / name).write_text(text)
            kb = int(self.memory_limit_gb * 2**20)
            cmd = ["sh", "-c", f"ulimit -c 0; ulimit -v {kb}; cd {shlex.quote(str(s))}; export LC_ALL=C\n{script}"]
            if sb.isolation == "namespaces":
                cmd = ["unshare", "--pid", "--fork", "--net", "--mount", "--kill-child", "--mount-proc",
                       "sh", "-c", _PRELUDE, "kz-prelude", *cmd]  # fmt: skip
            quiet = subprocess.DEVNULL
            proc = spawner().popen(cmd, stdin=quiet, stdout=quiet, stderr=quiet, env=sb._env(), cwd=s,
                                    start_new_session=True)  # fmt: skip
            proc.wait(timeout=self.timeout_s)
            yield s
        finally:
            if proc is not None and proc.poll() is None:
                with suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            sb.cleanup()


def check_with_headers(front: FrontCheck, source: str, slots: Slots, headers_ready: threading.Event, wait_s: float,
                       cap_s: float | None) -> FrontResult:  # fmt: skip
    """The farm's front check of `source` on its `slots` (`FrontCheck.check`: FrontSlots put the host TU checks ahead
    of the device TU checks), its host TU cut at `cap_s`. A check begun before the precompiled headers were ready
    left the host TU unchecked: it is made again once they are, waited for off the slots (on the H200 such host-code
    errors went to full builds, answered after 115-146 s in a cold or restarted judge). `seconds` of the result: its
    checks; `waited`: the rest, for slots or the headers."""
    t0, busy = time.monotonic(), 0.0
    for _ in range(2):
        early = not headers_ready.is_set()
        result = front.check(source, cap_s, slots)
        busy += result.seconds
        if not (early and result.status in ("passed", "unsure") and headers_ready.wait(wait_s)):
            break
    result.seconds, result.waited = round(busy, 3), round(max(0.0, time.monotonic() - t0 - busy), 3)
    return result
