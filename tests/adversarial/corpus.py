"""The adversarial corpus as data: case/legit headers read statically, and CUDA sources pulled out for nvcc.

Nothing here imports a case: headers are module-level constants read with ast.literal_eval, exactly as the judge
reads candidate sources (never executing them in its own process). The judge's own guard tests and the naive-harness
tests both list the corpus through `entries()`.

Header constants of every file in cases/ and legit/:
  EXPECT_STATUS  "rejected" | "incorrect" (cases) or "ok" (legit)
  EXPECT_GUARD   the verdict's `guard` field: a guard name for "rejected", the failed comparison ("value",
                 "dtype") for "incorrect", None for "ok"
  EXPECT_ALSO    other (status, guard) pairs that are an equally right catch (e.g. a static rule firing before
                 the run-time guard that the case is written against); default []
  FAMILY         the exploit family (decoy_unlaunched, replay, side_stream, ...); cases only
  TASK           stem of a file in tasks/
  BACKEND        "triton" | "cuda"
  NEEDS_GPU      whether the expected verdict needs a GPU judge (CUDA builds, timing guards)
  NAIVE          "kernelbench" (default: passes the KernelBench-style naive harness as is) or "lenient" (passes only
                 a harness that casts the output to the reference dtype first: see naive_harness --cast-output)
  NAIVE_FAST     the naive harness's timing, not only its check, was fooled (timer forgery, replay, lazy outputs), as
                 its own record shows: a timed call that launched no kernel, a reported runtime under a tenth of the
                 calls' true wall time, or a result line it did not write (test_naive_harness.timing_fooled);
                 default False
  TIMED_ON_CPU   the cheat lives in the timing stage (phase detection, batch-and-skip, timed lookups): the CPU run
                 judges the file with the timing protocol on host clocks (JudgeOptions.timing_on_cpu), so the guards
                 on timed calls decide its CPU verdict too; default False
  GPU_EXPECT     (status, guard) when the file is judged again as a real GPU kernel, where that differs from the
                 CPU verdict (a timing cheat that gains nothing at the case's size on a GPU); default the EXPECT pair
  MIXED          legit only: torch ops next to custom kernels (a vendor GEMM plus a fused epilogue); default False
  CUDA_COMPILES  CUDA only: False when the CUDA source is broken ON PURPOSE (build-failure fallback); default True
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sysconfig
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent
HEADER_DEFAULTS = {
    "EXPECT_ALSO": [],
    "FAMILY": None,
    "NAIVE": "kernelbench",
    "NAIVE_FAST": False,
    "TIMED_ON_CPU": False,
    "MIXED": False,
    "CUDA_COMPILES": True,
    "GPU_EXPECT": None,
}
REQUIRED = ("EXPECT_STATUS", "EXPECT_GUARD", "TASK", "BACKEND", "NEEDS_GPU")


@dataclass(frozen=True)
class Entry:
    """One corpus file: a case (exploit) or a legit solution, with its header."""

    kind: str  # "case" | "legit"
    path: Path
    header: dict = field(hash=False)

    @property
    def name(self) -> str:
        return self.path.stem

    @property
    def task_path(self) -> Path:
        return ROOT / "tasks" / f"{self.header['TASK']}.py"

    def __getattr__(self, key: str):
        try:
            return self.__dict__["header"][key]
        except KeyError:
            raise AttributeError(key) from None


def read_header(path: Path) -> dict:
    """Module-level UPPER_CASE constants of a source file, by ast.literal_eval (the file is never executed)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    header = dict(HEADER_DEFAULTS)
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name.isupper() and (name in REQUIRED or name in HEADER_DEFAULTS):
                header[name] = ast.literal_eval(node.value)
    missing = [k for k in REQUIRED if k not in header]
    if missing:
        raise ValueError(f"{path.name}: header constants missing: {missing}")
    return header


def entries(kind: str | None = None) -> list[Entry]:
    out = []
    for k, folder in (("case", "cases"), ("legit", "legit")):
        if kind in (None, k):
            out += [Entry(k, p, read_header(p)) for p in sorted((ROOT / folder).glob("*.py"))]
    return out


# ---------------------------------------------------------------- CUDA sources, compiled the way load_inline does
@dataclass(frozen=True)
class InlineExtension:
    name: str
    cpp: str
    cuda: str
    functions: tuple[str, ...]


def inline_extensions(path: Path) -> list[InlineExtension]:
    """Every load_inline(...) call of a source, its string arguments resolved from module-level string constants."""
    tree = ast.parse(path.read_text())
    consts = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                consts[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                pass

    def value(node):
        return consts[node.id] if isinstance(node, ast.Name) else ast.literal_eval(node)

    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "load_inline":
            kw = {k.arg: value(k.value) for k in node.keywords}

            def join(v):
                return "\n".join(v) if isinstance(v, (list, tuple)) else v or ""

            found.append(InlineExtension(kw["name"], join(kw.get("cpp_sources")), join(kw.get("cuda_sources")),
                                         tuple(kw.get("functions") or ())))  # fmt: skip
    return found


# Handle and status types that torch's ATen/cuda headers name. A full CUDA toolkit ships these headers; a
# compiler-only install (as on our CPU CI box) does not, and extensions never call the libraries, so declaring the
# types is enough to compile them. Used only for headers the toolkit lacks.
_STUB_HEADERS = {
    "cublas_v2.h": "typedef struct cublasContext* cublasHandle_t;\n"
    "typedef enum { CUBLAS_STATUS_SUCCESS = 0 } cublasStatus_t;\n",
    "cublasLt.h": "typedef struct cublasLtContext* cublasLtHandle_t;\n",
    "cusparse.h": "typedef struct cusparseContext* cusparseHandle_t;\n"
    "typedef enum { CUSPARSE_STATUS_SUCCESS = 0 } cusparseStatus_t;\n",
    "cusolver_common.h": "typedef enum { CUSOLVER_STATUS_SUCCESS = 0, CUSOLVER_STATUS_INVALID_VALUE = 3 } "
    "cusolverStatus_t;\n",
    "cusolverDn.h": "#include <cusolver_common.h>\ntypedef struct cusolverDnContext* cusolverDnHandle_t;\n",
}


def nvcc_available() -> bool:
    return shutil.which("nvcc") is not None or Path("/usr/local/cuda/bin/nvcc").exists()


def nvcc_check(ext: InlineExtension, arch: str = "sm_90", timeout_s: float = 900) -> subprocess.CompletedProcess:
    """Compile (no link) an extension's .cu and binding .cpp as load_inline would, against this torch's headers.

    Links nothing and generates no host object, so it works with a CPU-only torch and no GPU. Returns the failing (or
    last) compiler run. Slow: torch/extension.h costs minutes per translation unit on a 2-core box.
    """
    import torch
    from torch.utils.cpp_extension import COMMON_NVCC_FLAGS, include_paths

    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    cuda_inc = Path(nvcc).resolve().parent.parent / "include"
    std = "-std=c++20" if torch.__version__ >= "2.10" else "-std=c++17"
    defs = [f"-DTORCH_EXTENSION_NAME={ext.name}", "-DTORCH_API_INCLUDE_EXTENSION_H",
            "-DC10_CUDA_NO_CMAKE_CONFIGURE_FILE",
            f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}"]  # fmt: skip
    binding = "\n".join(f'm.def("{f}", &{f}, "{f}");' for f in ext.functions)
    with tempfile.TemporaryDirectory() as tmp:
        stubs = Path(tmp, "stubs")
        stubs.mkdir()
        for header, body in _STUB_HEADERS.items():
            if not (cuda_inc / header).exists():
                (stubs / header).write_text("#pragma once\n" + body)
        incs = [f"-I{p}" for p in include_paths()] + [f"-I{sysconfig.get_paths()['include']}", f"-I{stubs}"]
        cu = Path(tmp, "cuda.cu")
        cu.write_text("#include <torch/types.h>\n#include <cuda.h>\n#include <cuda_runtime.h>\n" + ext.cuda)
        cpp = Path(tmp, "main.cpp")
        cpp.write_text("#include <torch/extension.h>\n" + ext.cpp +
                       f"\nPYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {{\n{binding}\n}}\n")  # fmt: skip
        # Front ends only (what can fail on a candidate's source): nvcc -cuda runs the EDG front end on host and
        # device code and cicc on the kernels, without the host compiler pass; the binding gets -fsyntax-only.
        cxx = shutil.which("g++") or shutil.which("c++") or "c++"
        runs = [
            [nvcc, "-cuda", std, f"-arch={arch}", *COMMON_NVCC_FLAGS, *incs, *defs, str(cu), "-o", f"{tmp}/cuda.ii"],
            [cxx, "-fsyntax-only", std, *incs, *defs, str(cpp)],
        ]
        for cmd in runs:
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False)
            if res.returncode != 0:
                return res
        return res


if __name__ == "__main__":  # a table of the corpus
    for e in entries():
        print(f"{e.kind:5} {e.name:34} {e.BACKEND:6} gpu={int(e.NEEDS_GPU)} {e.EXPECT_STATUS:9} {e.EXPECT_GUARD}")
