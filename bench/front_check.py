"""The front check (judge/build/front.py) on the realistic mix's CUDA candidates: how fast it answers, against a full
build attempt of the same code, and whether it ever flags a candidate that builds.

For every CUDA case of `throughput_cases.mix`: the check's status and wall time (a sandboxed job, three nvcc
processes at once). Then, for `--full` cases (compile errors and buildable ones alternately), a full build attempt
of the code as written: the host `.cpp` and the `.cu` compiled with torch's own commands (from its ninja writer),
both at once as ninja runs them, no link. The attempt runs here, not in a sandbox: the mix is ours. On a machine
whose torch has no CUDA (a CPU wheel), CUDA_HOME is pointed at the nvcc on PATH so the commands can be written;
nothing built is run.

    python bench/front_check.py [--full 4] [--arch 9.0] [--json out.json] [--exact]

Prints: per flaw, how many checks concluded `compile_error`; the median check latency for compile errors, for the
buildable ones and for the concluded ones; the false compile errors (must be 0; exit 1 otherwise); the median
full attempt. A compile error the check does not conclude on is then built as before: its answer takes the check
plus today's builds. `--exact`: preprocess each candidate's `.cu` instead of keeping the headers' facts (slower,
the first way the check concludes; both must agree).

Measured 2026-12-04 on the 2-core dev CPU (no GPU, nvcc 13.0, torch 2.13 CPU wheel; other jobs ran, load 4-8):
9 of the 19 compile errors concluded (every undeclared identifier and undefined helper; the missing semicolons
and tensors passed for pointers are left to the build), check median 0.48 s for those (the first one 10 s: it
preprocesses torch's headers once), 0.57 s for the 45 buildable candidates, 0 false compile errors; `--exact`
agreed on all 64 (concluded median 9.0 s). A full build attempt of the code as written took 114 s (an error) and
144 s (ok) at load 8.

`--load N` (2026-12-04, nineteenth session, same box, host TU checked): the 19 compile errors (all concluded, median
0.32 s alone) under 4 busy processes, each in a session of its own as build workers are: 1.34 s at niceness 0, 0.43 s
at the builds' niceness (process and autogroup, `worker.apply_nice`): 3.1x. With the niceness set on the process
alone (a first version) the kernel's per-session scheduling groups (autogroup) ignored it: 1.40 s against 1.34 s.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import torch.utils.cpp_extension as cpp  # noqa: E402
from throughput_cases.mix import mix  # noqa: E402

from kernelzero.judge.build.farm import BUILD_NICE  # noqa: E402
from kernelzero.judge.build.front import HOST_CUT, FrontCheck, nvcc_command, plan, read_call  # noqa: E402
from kernelzero.judge.build.headers import build_pch, host_compile  # noqa: E402


def full_attempt(source: str, arch: str) -> tuple[float, bool]:
    """(seconds, compiled) of one build attempt of the code as written: main.cpp and cuda.cu at once."""
    a = read_call(source)
    planned = plan(a)
    assert not isinstance(planned, str), planned
    _, plain, extra = planned
    cpp_sources = [a["cpp_sources"]] if isinstance(a["cpp_sources"], str) else list(a["cpp_sources"])
    functions = a["functions"] if isinstance(a["functions"], list) else [a["functions"]]
    main = ["#include <torch/extension.h>", *cpp_sources, "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {",
            *[f'm.def("{f}", torch::wrap_pybind_function({f}), "{f}");' for f in functions], "}"]  # fmt: skip
    nvcc, cuda_flags = nvcc_command(list(a["extra_cflags"] or []), extra, arch)
    cxx, cflags = host_compile(list(a["extra_cflags"] or []), True)
    with tempfile.TemporaryDirectory() as d:
        Path(d, "main.cpp").write_text("\n".join(main))
        Path(d, "cuda.cu").write_text(plain)
        name = ["-DTORCH_EXTENSION_NAME=kz_bench"]
        cmds = [[cxx, *name, *cflags, "-c", "main.cpp", "-o", "main.o"],
                [nvcc, *name, *cuda_flags, "-c", "cuda.cu", "-o", "cuda.cuda.o"]]  # fmt: skip
        t0 = time.monotonic()
        with ThreadPoolExecutor(2) as ex:
            rcs = list(ex.map(lambda c: subprocess.run(c, cwd=d, capture_output=True).returncode, cmds))
        return time.monotonic() - t0, all(rc == 0 for rc in rcs)


def med(xs: list[float]) -> float | None:
    return round(statistics.median(xs), 2) if xs else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--full", type=int, default=4, help="full build attempts to time (0: none)")
    ap.add_argument("--arch", default="9.0")
    ap.add_argument("--json", default=None, help="also write the figures here")
    ap.add_argument("--exact", action="store_true", help="preprocess each candidate's .cu (no header facts kept)")
    ap.add_argument("--host", action="store_true",
                    help="check the host TUs too, against a torch/extension.h precompiled here first, as the farm does")
    ap.add_argument("--host-cap", type=float, default=0.0,
                    help="also check each candidate with its host check cut at this many seconds, as the farm does "
                         "(figures for that cut check beside the full one's)")
    ap.add_argument("--load", type=int, default=0,
                    help="then check the compile errors again under N busy processes, at niceness 0 and at the farm's "
                         "build niceness: how much a batch's builds slow the answer, and what running them niced saves")
    ap.add_argument("--batch", type=int, default=0, metavar="SLOTS",
                    help="then submit all 64 at once on this many front slots (the farm's FrontSlots, header facts "
                         "already learnt, host checks cut at --host-cap or 1 s), suspects first and not, alternated "
                         "--repeats times: when each compile error is answered")
    ap.add_argument("--repeats", type=int, default=2, help="--batch: runs of each order")
    args = ap.parse_args()
    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", args.arch)  # torch's writer needs it for the full attempt's flags
    if cpp.CUDA_HOME is None and (os.environ.get("CUDA_HOME") or shutil.which("nvcc")):  # a CPU wheel: compile only
        cpp.CUDA_HOME = os.environ.get("CUDA_HOME") or str(Path(shutil.which("nvcc")).resolve().parents[1])
    host_pch = None
    if args.host:  # the mix's host flags are all ["-O3"] (its candidates pass -O3 to nvcc)
        pch = Path(tempfile.mkdtemp(prefix="kz-front-pch-"))
        t0 = time.monotonic()
        failed = build_pch(pch, ["-O3"], True)
        print(f"precompiled torch/extension.h in {time.monotonic() - t0:.0f} s{': ' + failed if failed else ''}")
        host_pch = (lambda flags: str(pch) if flags == ["-O3"] else None) if failed is None else None
    check = FrontCheck(arch=args.arch, max_headers=0 if args.exact else 64, host_pch=host_pch)
    cases = mix("cuda")
    rows = []
    for c in cases:
        quick = check.check(c.source, args.host_cap) if args.host_cap else None
        r = check.check(c.source)
        rows.append({"name": c.name, "kind": c.kind, "flaw": c.flaw, "status": r.status, "seconds": r.seconds,
                     "why": r.why, **({"quick": quick.status, "quick_seconds": quick.seconds,
                                       "cut": quick.why == HOST_CUT} if quick else {})})  # fmt: skip
        print(f"{c.name:28s} {c.flaw or '-':24s} {r.status:13s} {r.seconds:6.2f} s {r.why}", flush=True)
    errors = [r for r in rows if r["kind"] == "compile"]
    buildable = [r for r in rows if r["kind"] != "compile"]
    concluded = [r for r in errors if r["status"] == "compile_error"]
    false = [r["name"] for r in buildable if r["status"] == "compile_error"]
    figures = {
        "compile_errors": len(errors), "concluded": len(concluded),
        "concluded_by_flaw": dict(Counter(r["flaw"] for r in concluded)),
        "statuses": dict(Counter(r["status"] for r in rows)),
        "check_median_s_compile_errors": med([r["seconds"] for r in errors]),
        "check_median_s_concluded": med([r["seconds"] for r in concluded]),
        "check_median_s_buildable": med([r["seconds"] for r in buildable]),
        "false_compile_errors": false, "buildable": len(buildable),
    }  # fmt: skip
    if args.host_cap:  # the cut check, as the farm makes it: what it concluded, and what it cost
        figures["cut_check"] = {"concluded": sum(r["quick"] == "compile_error" for r in errors),
                                "median_s_compile_errors": med([r["quick_seconds"] for r in errors]),
                                "median_s_buildable": med([r["quick_seconds"] for r in buildable]),
                                "cut": sum(r["cut"] for r in rows),
                                "false_compile_errors": [r["name"] for r in buildable if r["quick"] == "compile_error"]}
    if args.full:
        sample = [c for pair in zip([c for c in cases if c.kind == "compile"], [c for c in cases if c.kind == "ok"])
                  for c in pair][: args.full]  # fmt: skip
        attempts = []
        for c in sample:
            s, ok = full_attempt(c.source, args.arch)
            print(f"full attempt {c.name:28s} {s:6.2f} s {'compiled' if ok else 'failed'}", flush=True)
            assert ok == (c.kind != "compile"), (c.name, ok)
            attempts.append((s, ok))
        figures["full_attempt_median_s"] = med([s for s, _ in attempts])
    if args.batch:
        figures["batch"] = batch_orders(check, cases, args.batch, args.repeats, args.host_cap or 1.0)
    if args.load:
        figures["under_load"] = under_load(check, [c for c in cases if c.kind == "compile"], args.load, args.host_cap)
    print(json.dumps(figures, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps({"figures": figures, "rows": rows}, indent=1))
    return 1 if false else 0


DEVICE_CODE_FLAWS = ("undeclared identifier", "undefined helper")  # the mix's compile errors in device code


def batch_orders(check: FrontCheck, cases: list, slots: int, repeats: int, host_cap: float) -> dict:
    """All `cases` checked at once on `slots` FrontSlots, as a steady pass submits them (the header facts learnt
    above), with the suspects' device TUs first (`FrontCheck._suspect`, the farm's order) and without (every host TU
    before any device TU), alternated: per run the compile errors' median answer (seconds from submission), the
    device-code errors' and the host-code errors' ranges, the last verdict, and verdicts that differ."""
    import threading

    from kernelzero.judge.build.front import FrontSlots

    def run(suspects: bool) -> dict:
        if not suspects:
            check._suspect = lambda *a: False  # an instance attribute hides the method for this run only
        pool, t0, out = FrontSlots(slots), time.monotonic(), {}

        def one(c) -> None:
            r = check.check(c.source, host_cap, pool)
            out[c.name] = (r.status, time.monotonic() - t0, c.flaw)

        threads = [threading.Thread(target=one, args=(c,)) for c in cases]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        check.__dict__.pop("_suspect", None)
        errors = [v for v in out.values() if v[0] == "compile_error"]
        device = [v[1] for v in errors if v[2] in DEVICE_CODE_FLAWS]
        host = [v[1] for v in errors if v[2] not in DEVICE_CODE_FLAWS]
        span = lambda xs: [round(min(xs), 2), round(max(xs), 2)] if xs else None  # noqa: E731
        return {"suspects_first": suspects, "concluded": len(errors), "median_s": med([v[1] for v in errors]),
                "device_code_s": span(device), "host_code_s": span(host),
                "last_s": round(max(v[1] for v in out.values()), 2), "statuses": {k: v[0] for k, v in out.items()}}

    runs = []
    for _ in range(repeats):
        for suspects in (False, True):
            runs.append(run(suspects))
            r = runs[-1]
            print(f"{slots} slots, suspects first={suspects}: {r['concluded']} concluded, compile errors median "
                  f"{r['median_s']} s (device code {r['device_code_s']}, host code {r['host_code_s']}), last "
                  f"{r['last_s']} s", flush=True)  # fmt: skip
    differ = sorted({k for r in runs for k, v in r["statuses"].items() if v != runs[0]["statuses"][k]})
    for r in runs:
        del r["statuses"]
    return {"slots": slots, "runs": runs, "verdicts_differ": differ}


def under_load(check: FrontCheck, cases: list, n: int, host_cap: float = 0.0) -> dict:
    """Median check seconds of `cases` while `n` busy loops run at niceness 0, then at BUILD_NICE (the farm's builds),
    and their ratio. The busy loops stand in for a batch's builds: CPU-bound, one core each, each in a session of its
    own and niced as a build worker nices itself (`worker.apply_nice`). With `host_cap`, also how many of them the cut
    check (the farm's) concludes under the un-niced load, where each check gets the smallest share of a core."""
    figures = {}
    if host_cap:
        spin = "while True: pass"
        busy = [subprocess.Popen([sys.executable, "-c", spin], start_new_session=True) for _ in range(n)]
        try:
            cut = [check.check(c.source, host_cap) for c in cases]
        finally:
            for b in busy:
                b.kill()
                b.wait()
        concluded = sum(r.status == "compile_error" for r in cut)
        figures["cut_concluded_nice_0"] = concluded
        figures["cut_median_s_nice_0"] = med([r.seconds for r in cut])
        print(f"{len(cases)} compile errors under {n} busy processes at niceness 0, host check cut at {host_cap:g} "
              f"CPU s: {concluded} concluded, median {med([r.seconds for r in cut]):.2f} s", flush=True)  # fmt: skip
    for nice in (0, BUILD_NICE):
        spin = f"from kernelzero.judge.sandbox.worker import apply_nice\napply_nice('{nice}')\nwhile True: pass"
        busy = [subprocess.Popen([sys.executable, "-c", spin], start_new_session=True)  # a session each, as builds
                for _ in range(n)]  # fmt: skip
        try:
            seconds = [check.check(c.source).seconds for c in cases]
        finally:
            for b in busy:
                b.kill()
                b.wait()
        figures[f"median_s_nice_{nice}"] = med(seconds)
        print(f"{len(cases)} compile errors under {n} busy processes at niceness {nice}: median {med(seconds):.2f} s",
              flush=True)  # fmt: skip
    figures["ratio"] = round(figures["median_s_nice_0"] / figures[f"median_s_nice_{BUILD_NICE}"], 2)
    return figures


if __name__ == "__main__":
    sys.exit(main())
