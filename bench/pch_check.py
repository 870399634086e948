"""Does the host compile use the farm's precompiled header, and what does it cost? One CUDA candidate built by a
fresh BuildFarm, then its host TU compiled again by hand with the farm's own ninja flags (`-H -Winvalid-pch`
added): with the farm's headers, and with the same header text but no `.gch`; each alone, then `--concurrent` at
once (as the farm runs them). GCC skips a `.gch` whose flags differ without a word; this says so.

    python bench/pch_check.py                    # relu, 1 and then one compile per core at once
    python bench/pch_check.py --concurrent 16 --out pch.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


# Run by the farm as a build job (the word load_inline makes it one): the host compile, in the farm's sandbox.
SANDBOXED = """# load_inline
import resource, subprocess, time
t0 = time.perf_counter()
r = subprocess.run({cmd!r}, capture_output=True, text=True)
lines = r.stderr.splitlines()
raise RuntimeError("KZPCH %.2f s, rc %d, .gch lines %s, %d headers read, RLIMIT_AS %s" % (time.perf_counter() - t0,
    r.returncode, [x for x in lines if x.endswith(".gch")], sum(x.startswith(".") for x in lines),
    resource.getrlimit(resource.RLIMIT_AS)))
"""


def host_command(build_dir: Path) -> tuple[list[str], Path]:
    """The C++ compile of the host TU as the build's `build.ninja` gives it (flags, then the source beside it)."""
    ninja = next(build_dir.rglob("build.ninja"), None)
    if ninja is None:
        raise SystemExit(f"pch_check: no build.ninja in the cache entry {build_dir}: {sorted(os.listdir(build_dir))}")
    text = ninja.read_text()
    cflags = shlex.split(re.search(r"^cflags = (.*)$", text, re.M).group(1))
    post = re.search(r"^post_cflags = (.*)$", text, re.M)
    source = re.search(r"^build \S+\.o: compile (\S+)$", text, re.M).group(1)
    return [*cflags, *(shlex.split(post.group(1)) if post else [])], ninja.parent / Path(source).name


def compile_once(cxx: str, flags: list[str], source: Path, out: Path, limit_as: int = 0) -> tuple[float, str]:
    """One compile with -H; `limit_as`: under that RLIMIT_AS (bytes), as the farm's sandbox sets on CPU jobs."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit_as, limit_as))

    t0 = time.perf_counter()
    res = subprocess.run([cxx, *flags, "-c", str(source), "-o", str(out), "-H", "-Winvalid-pch"],
                         capture_output=True, text=True, preexec_fn=limit if limit_as else None)  # fmt: skip
    if res.returncode != 0:
        raise SystemExit(f"pch_check: the host compile failed: {res.stderr[-1500:]}")
    return time.perf_counter() - t0, res.stderr


def measure(cxx: str, flags: list[str], source: Path, work: Path, n: int, limit_as: int = 0) -> dict:
    """One compile alone, then `n` at once (none for 0): seconds, and what -H said about precompiled headers."""
    alone, log = compile_once(cxx, flags, source, work / "alone.o", limit_as)
    with ThreadPoolExecutor(max(n, 1)) as ex:
        together = list(ex.map(lambda i: compile_once(cxx, flags, source, work / f"c{i}.o")[0], range(n))) or [0.0]
    pch = [line for line in log.splitlines() if re.match(r"^[!x] \S+\.gch$", line)]
    invalid = [line for line in log.splitlines() if "invalid-pch" in line or "not used because" in line]
    headers = sum(1 for line in log.splitlines() if line.startswith("."))
    return {"alone_s": round(alone, 2), "concurrent": n, "concurrent_median_s": round(statistics.median(together), 2),
            "concurrent_max_s": round(max(together), 2), "gch_lines": pch, "invalid_pch": invalid[:4],
            "headers_read": headers}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--op", default="relu", choices=["relu", "add", "gelu", "sigmoid", "softmax"],
                    help="which bench/throughput_cases CUDA candidate to build (default relu)")  # fmt: skip
    ap.add_argument("--candidate", help="build this candidate file instead (for example a C++-only extension where "
                    "torch has no CUDA: tests/fixtures/judge/relu_scale_ext.py)")
    ap.add_argument("--concurrent", type=int, default=os.cpu_count() or 2,
                    help="compiles at once for the second figure (default: one per core, as the farm)")  # fmt: skip
    ap.add_argument("--out", help="write the figures here as JSON")
    args = ap.parse_args()

    import torch.utils.cpp_extension as cpp
    from throughput_cases import cuda_candidate

    from kernelzero.judge.build.farm import BuildFarm

    with tempfile.TemporaryDirectory(prefix="kz-pch-check-") as d:
        work = Path(d)
        farm = BuildFarm(str(work / "cache"), workers=1)
        built = farm.build(Path(args.candidate).read_text() if args.candidate else cuda_candidate(args.op, 256))
        if built.status != "built" or not built.path:
            raise SystemExit(f"pch_check: the farm did not build the candidate: {built.status} {built.feedback[-800:]}")
        print(f"farm build: {built.seconds:.1f} s, modes {built.modes}, steps {built.steps}", flush=True)
        flags, source = host_command(Path(built.path))
        light = next((f[2:] for f in flags if f.startswith("-I") and list(Path(f[2:]).rglob("*.gch"))), None)
        if light is None:
            raise SystemExit(f"pch_check: the host compile names no directory holding a .gch: {flags}")
        bare = work / "headers-without-gch"  # the same header text, nothing precompiled
        shutil.copytree(light, bare, symlinks=True, ignore=shutil.ignore_patterns("*.gch"))
        cxx = cpp.get_cxx_compiler()
        result = {"modes": built.modes, "farm_steps": built.steps, "cxx": cxx,
                  "with_gch": measure(cxx, flags, source, work, args.concurrent),
                  "without_gch": measure(cxx, [f"-I{bare}" if f == f"-I{light}" else f for f in flags], source, work,
                                         0),
                  "with_gch_rlimit_as": measure(cxx, flags, source, work, 0, int(farm.memory_limit_gb * 2**30))}
        # the same compile inside the farm's own sandbox: a diagnostic "candidate" it runs as a build job
        diag = farm.build(SANDBOXED.format(cmd=[cxx, *flags, "-c", str(source), "-o", os.devnull, "-H",
                                                "-Winvalid-pch"]))  # fmt: skip
        found = re.search(r"KZPCH (.*)", diag.feedback)
        result["in_farm_sandbox"] = found.group(1) if found else f"no answer: {diag.status} {diag.feedback[-600:]}"
    for name in ("with_gch", "without_gch", "with_gch_rlimit_as"):
        r = result[name]
        print(f"{name}: alone {r['alone_s']} s; {r['concurrent']} at once: median {r['concurrent_median_s']} s, max "
              f"{r['concurrent_max_s']} s; {r['headers_read']} headers read; .gch lines {r['gch_lines']}"
              + (f"; {r['invalid_pch']}" if r["invalid_pch"] else ""), flush=True)  # fmt: skip
    print(f"in the farm's sandbox: {result['in_farm_sandbox']}")
    used = any(line.startswith("! ") for line in result["with_gch"]["gch_lines"])
    print(f"the farm's precompiled header is {'USED' if used else 'NOT used'} by the host compile")
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1))
    sys.exit(0 if used else 1)


if __name__ == "__main__":
    main()
