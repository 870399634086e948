"""Faster CUDA builds: keep torch's headers out of nvcc's translation unit, without changing what the code means.

A KernelBench-style `load_inline` puts kernels and their torch wrapper in one `.cu`; nvcc then parses all of torch
(twice: device and host passes), which is most of a ~60 s build. `split` moves the torch-facing host code into the
C++ translation unit (compiled by the host compiler, where a precompiled header helps) and leaves nvcc a `.cu` with
only CUDA code. Each launch `k<<<g, b, s, st>>>(args)` in moved code becomes `kz_launch_k(g, b, s, st, args)`, a
stub defined next to `k` that performs exactly that launch; arguments convert to the kernel's parameter types at
the stub call, as they would at the launch. `-O` flags given to nvcc are passed to the host compiler too (nvcc
forwards them to it for host code), so the moved code is optimised as before.

A launch that names no stream (`k<<<g, b>>>`) is given torch's current stream (`CURRENT_STREAM`). Run eagerly that
is the stream it would have used: torch's default stream is CUDA's legacy default stream (handle 0), and the judge
never runs a candidate under another. While the judge captures a CUDA graph to time a small task
(`timing.graph_timing`), torch's current stream is the capturing one, so the launch is recorded instead of going to
the legacy stream outside the capture (an empty graph, timed eagerly only). A launch that names a stream, 0
included, keeps it.

It is deliberately narrow: anything it does not fully understand (templates, namespaces, macros that launch,
kernel names used outside launches, symbols shared via cudaMemcpyToSymbol, raw strings, torch in device code)
returns None and the plain build runs. A split whose build fails also falls back to the plain build (build.py), so
a candidate's compile errors always come from its code as written.
"""

from __future__ import annotations

import re

_TORCH = re.compile(r"\b(torch|at|c10|pybind11)::|\bTORCH_|\bAT_|\bC10_|\bTensor\b|#\s*include\s*[<\"](torch|ATen|c10)")
_KERNEL = re.compile(
    r"^(?:static\s+)?(?:__launch_bounds__\s*\([^)]*\)\s*)?__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?"
    r"void\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?(\w+)\s*\((.*?)\)\s*(\{|;)",
    re.S,
)
_UNSUPPORTED = re.compile(r"^\s*(template|namespace|extern\s*\"C\")\b|R\"")
# torch's current CUDA stream, through c10's device-generic interface (in torch/all.h, and compiles against a CPU
# wheel's headers, where c10/cuda's do not): the stream a launch with none is given in moved host code.
CURRENT_STREAM = (
    "c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)"
    "->getStream(c10::Device(c10::DeviceType::CUDA)).native_handle()"
)


def _strip_comments(src: str) -> str | None:
    out, i, n = [], 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            if j < 0:
                return None
            out.append(" ")
            i = j + 2
        elif c in "\"'":
            j = i + 1
            while j < n and src[j] != c:
                j += 2 if src[j] == "\\" else 1
            out.append(src[i : j + 1])
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _items(src: str) -> list[str] | None:
    """Top-level items: preprocessor lines, and declarations/definitions ending at depth 0 with `;` or `}`."""
    items, buf, depth, i, n = [], [], 0, 0, len(src)
    while i < n:
        c = src[i]
        if depth == 0 and not "".join(buf).strip() and c == "#":
            j = i
            while True:
                j = src.find("\n", j)
                if j < 0 or src[j - 1] != "\\":
                    break
                j += 1
            j = n if j < 0 else j
            items.append(src[i:j].strip())
            i, buf = j, []
            continue
        buf.append(c)
        if c in "\"'":  # copy literals whole (braces inside strings)
            j = i + 1
            while j < n and src[j] != c:
                j += 2 if src[j] == "\\" else 1
            buf.append(src[i + 1 : j + 1])
            i = j + 1
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth < 0:
                return None
            if depth == 0:
                k = i + 1
                while k < n and src[k] in " \t\r\n":
                    k += 1
                if k < n and src[k] == ";":
                    buf.append(src[i + 1 : k + 1])
                    i = k
                items.append("".join(buf).strip())
                buf = []
        elif c == ";" and depth == 0:
            items.append("".join(buf).strip())
            buf = []
        i += 1
    if depth != 0 or "".join(buf).strip():
        return None
    return [it for it in items if it]


def _split_args(s: str) -> list[str]:
    parts, depth, cur = [], 0, []
    for c in s:
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        if c == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(c)
    if "".join(cur).strip():
        parts.append("".join(cur).strip())
    return parts


def _balanced(s: str, start: int, open_: str, close: str) -> int:
    """Index just past the bracket closing the one at `start`, or -1."""
    depth = 0
    for i in range(start, len(s)):
        if s[i] == open_:
            depth += 1
        elif s[i] == close:
            depth -= 1
            if depth == 0:
                return i + 1
    return -1


def _rewrite_launches(item: str, kernels: dict[str, list[str]]) -> str | None:
    out, pos = [], 0
    for m in re.finditer(r"\b(\w+)\s*<<<", item):
        if m.start() < pos:
            continue
        name = m.group(1)
        if name not in kernels:
            return None
        end_cfg = item.find(">>>", m.end())
        if end_cfg < 0:
            return None
        cfg = _split_args(item[m.end() : end_cfg])
        k = end_cfg + 3
        while k < len(item) and item[k].isspace():
            k += 1
        if k >= len(item) or item[k] != "(" or not 2 <= len(cfg) <= 4:
            return None
        end_args = _balanced(item, k, "(", ")")
        if end_args < 0:
            return None
        cfg += ["0", CURRENT_STREAM][len(cfg) - 2 :]
        args = item[k + 1 : end_args - 1].strip()
        call = f"kz_launch_{name}(dim3({cfg[0]}), dim3({cfg[1]}), (size_t)({cfg[2]}), (cudaStream_t)({cfg[3]})"
        out.append(item[pos : m.start()] + call + (f", {args})" if args else ")"))
        pos = end_args
    out.append(item[pos:])
    return "".join(out)


def split(cpp_sources: list[str], cuda_sources: list[str]) -> tuple[list[str], list[str]] | None:
    """(cpp_sources, cuda_sources) for `load_inline(..., no_implicit_headers=True)`, or None if it does not apply.
    `cpp_sources`/`cuda_sources` are as the candidate passed them (load_inline's implicit headers not yet added)."""
    src = _strip_comments("\n".join(cuda_sources))
    if src is None or "<<<" not in src or not _TORCH.search(src):
        return None
    items = _items(src)
    if items is None:
        return None
    kernels: dict[str, list[str]] = {}
    device, host, shared = [], [], []  # device-only items, host-only items (in order), items for both
    for it in items:
        if _UNSUPPORTED.search(it):
            return None
        if it.startswith("#"):
            (host if _TORCH.search(it) else shared).append(it)
            if "<<<" in it:
                return None
            continue
        m = _KERNEL.match(it)
        if m:
            params = _split_args(m.group(2))
            if any(not re.search(r"(\w+)\s*(\[\s*\])?$", p) for p in params):
                return None
            kernels[m.group(1)] = params
            device.append(it)
        elif "__global__" in it:
            return None
        elif re.search(r"__device__|__constant__|__shared__", it):
            if "__host__" in it:
                return None
            device.append(it)
        elif re.match(r"(typedef\s+)?(struct|class|union|enum)\b", it) and not _TORCH.search(it):
            shared.append(it)
        else:
            host.append(it)
    if not kernels or "Symbol" in "".join(host) or any(_TORCH.search(d) for d in device + shared):
        return None
    stubs, decls = [], {}
    for name, params in kernels.items():
        names = [re.search(r"(\w+)\s*(\[\s*\])?$", p).group(1) for p in params]
        head = f"void kz_launch_{name}(dim3 kz_g, dim3 kz_b, size_t kz_s, cudaStream_t kz_st"
        head += "".join(f", {p}" for p in params) + ")"
        decls[name] = head + ";"
        stubs.append(f"{head} {{ {name}<<<kz_g, kz_b, kz_s, kz_st>>>({', '.join(names)}); }}")
    host_out: list[str] = []
    declared: set[str] = set()
    order = [it for it in items if it in host or it in shared]  # original order of everything the host TU needs
    for it in order:
        if it in shared or it.startswith("#"):
            host_out.append(it if it.startswith("#") else it + ("" if it.endswith(";") else ";"))
            continue
        rewritten = _rewrite_launches(it, kernels)
        if rewritten is None:
            return None
        if any(re.search(rf"\b{re.escape(k)}\b", re.sub(r"kz_launch_\w+", "", rewritten)) for k in kernels):
            return None  # a kernel used other than by a launch (attributes, pointers): leave it alone
        for k in kernels:
            if f"kz_launch_{k}(" in rewritten and k not in declared:
                host_out.append(decls[k])
                declared.add(k)
        host_out.append(rewritten if rewritten.endswith(("}", ";")) else rewritten + ";")
    cuda_out = ["#include <cuda.h>", "#include <cuda_runtime.h>"]
    for it in items:
        if it in shared:
            cuda_out.append(it if it.startswith("#") else it + ("" if it.endswith(";") else ";"))
        elif it in device:
            cuda_out.append(it if it.endswith(("}", ";")) else it + ";")
    cuda_out += stubs
    cpp_out = ["#include <torch/extension.h>", *cpp_sources, "#include <cuda.h>", "#include <cuda_runtime.h>",
               *host_out]  # fmt: skip
    return ["\n".join(cpp_out)], ["\n".join(cuda_out)]


def split_call(a: dict) -> tuple[list[list[str]], list[str]] | None:
    """For a load_inline call's arguments `a`: (the split's (cpp_sources, cuda_sources) (torch-free `.cu`), the host
    TU's extra flags), or None if the split does not apply."""
    if not a["cuda_sources"]:
        return None
    listed = [[x] if isinstance(x, str) else list(x or []) for x in (a["cpp_sources"], a["cuda_sources"])]
    parts = split(*listed)
    if parts is None:
        return None
    # nvcc hands its -O level to the host compiler for host code: the moved host code keeps it (once: KernelBench
    # candidates often pass -O3 in both lists, and ["-O3", "-O3"] would miss the ["-O3"] precompiled header).
    cflags = list(a["extra_cflags"] or [])
    cflags += [f for f in a["extra_cuda_cflags"] or [] if re.fullmatch(r"-O[0-3s]?", f) and f not in cflags]
    return list(parts), cflags
