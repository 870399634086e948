"""Precompiled torch headers for the build farm's host TUs: the flags torch gives a load_inline C++ TU,
building a `.gch` for them, and asking a compiler whether it takes one.

GCC uses a `.gch` only when the compiling binary and the flags that matter are those it was built with, and skips
one it cannot use without a word: the build is then only slower. `build_pch` runs in the judge (trusted);
`probe_headers` runs in a build worker, so that what it finds is what the farm's builds see.
"""

from __future__ import annotations

import inspect
import re
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

PCH_FLAG_SETS = ([], ["-O3"], ["-O2"])  # host-TU extra flags with a precompiled header (KernelBench's are -O3)


def has_cuda_toolkit() -> bool:
    import torch.utils.cpp_extension as cpp

    return cpp.CUDA_HOME is not None


def host_cflags(extra: list[str], with_cuda: bool) -> list[str]:
    """The flags torch's own ninja file gives a load_inline C++ translation unit (read from the file its writer
    produces, so they follow the installed torch), without the per-extension `-DTORCH_EXTENSION_NAME`. A precompiled
    header is only used by a compile whose flags match the ones it was built with."""
    return host_compile(extra, with_cuda)[1]


def host_compile(extra: list[str], with_cuda: bool) -> tuple[str, list[str]]:
    """(the compiler, its flags) that torch's ninja file, written in this process's environment, names for a
    load_inline C++ translation unit (flags as `host_cflags`)."""
    import shlex

    import torch.utils.cpp_extension as cpp

    writer = cpp._write_ninja_file_to_build_library
    with tempfile.TemporaryDirectory() as d:
        kwargs = {"path": f"{d}/build.ninja", "name": "kz_pch", "sources": [f"{d}/main.cpp"], "extra_cflags": extra,
                  "extra_cuda_cflags": [], "extra_sycl_cflags": [], "extra_ldflags": [], "extra_include_paths": [],
                  "with_cuda": with_cuda, "with_sycl": False, "is_standalone": False}  # fmt: skip
        params = inspect.signature(writer).parameters
        writer(**{k: v for k, v in kwargs.items() if k in params})
        lines = Path(d, "build.ninja").read_text().splitlines()

    def var(name: str) -> str:
        return next(line for line in lines if line.startswith(f"{name} = "))[len(name) + 3 :]

    cflags = shlex.split(var("cflags"))
    return var("cxx"), [f for f in cflags if not f.startswith("-DTORCH_EXTENSION_NAME=")]


def build_pch(out: Path, flags: list[str], with_cuda: bool, light: bool = False) -> str | None:
    """Build `out/torch/extension.h.gch` for host TUs compiled with torch's flags plus `flags`; None on success, else
    the compiler's error. The header itself is linked beside it: a TU that includes torch/extension.h twice (the
    split puts the candidate's host code, with its own include, after load_inline's) finds the `.gch` first, and
    for the second include GCC needs the header in the same directory (it is skipped there: `#pragma once`).
    light: `out/torch/all.h.gch` instead, for TUs bound through the bridge (bind.py), which start with torch/all.h;
    there torch/extension.h is a stand-in that includes torch/all.h only."""
    import torch.utils.cpp_extension as cpp

    include = Path(cpp.include_paths()[0])
    name = "all.h" if light else "extension.h"
    header = include / "torch" / "csrc" / "api" / "include" / "torch" / name if light else include / "torch" / name
    shutil.rmtree(out, ignore_errors=True)
    (out / "torch").mkdir(parents=True)
    gch = out / "torch" / f"{name}.gch"
    (out / "torch" / name).symlink_to(header)
    if light:
        (out / "torch" / "extension.h").write_text("#pragma once\n#include <torch/all.h>\n")
    try:
        cflags = host_cflags(flags, with_cuda)
    except Exception as exc:  # a torch whose ninja writer we do not understand: builds go on without the header
        return f"torch's build flags: {type(exc).__name__}: {exc}"
    cmd = [cpp.get_cxx_compiler(), "-x", "c++-header", str(header), "-o", str(gch), *cflags]
    res = subprocess.run(cmd, capture_output=True, text=True)
    return None if res.returncode == 0 else res.stderr or f"exit {res.returncode}"


def probe_headers(headers: list[list], with_cuda: bool, scratch: Path) -> dict[str, str]:
    """Whether a host compile run from this process takes each precompiled header: {name: "used", or why not}, for
    `headers` as [name, extra flags, directory, header]. Run by a build worker (job kind `probe_headers`), so the
    compiler is the one torch's ninja file names in the build sandbox's environment: GCC passes over a `.gch` that
    another compiler binary, or other flags, made, without a word, and builds are only slower (on the H200 the host
    step took 11.1 s instead of 3.8 s for as long as nobody looked, bench/pch_check.py). Each compile reads the
    header only, as the TUs the farm builds include it: `-fsyntax-only -H -Winvalid-pch` on `#include <header>`."""

    def probe(i: int, name: str, flags: list[str], directory: str, header: str) -> tuple[str, str]:
        (scratch / f"probe{i}.cpp").write_text(f"#include <{header}>\n")
        cxx, cflags = host_compile([*flags, f"-I{directory}"], with_cuda)
        cmd = [cxx, *cflags, "-fsyntax-only", "-H", "-Winvalid-pch", str(scratch / f"probe{i}.cpp")]
        res = subprocess.run(cmd, capture_output=True, text=True, cwd=scratch)
        lines = res.stderr.splitlines()
        marks = [line for line in lines if re.match(rf"^\.*\s?[!x] {re.escape(directory)}/\S+\.gch$", line)]
        if res.returncode == 0 and any("! " in line for line in marks):
            return name, "used"
        why = next((line.split("warning: ", 1)[-1] for line in lines if "[-Winvalid-pch]" in line), None)
        if why is None:
            why = "the header itself was read (no .gch reached)" if not marks else "the .gch was rejected"
        if res.returncode != 0:
            why = f"{why}; the compile failed: {(lines or [f'exit {res.returncode}'])[-1]}"
        return name, f"not used by {cxx}: {why}"

    with ThreadPoolExecutor(max(1, len(headers))) as ex:
        return dict(ex.map(lambda ih: probe(ih[0], *ih[1]), enumerate(headers)))
