"""Lighter host builds: the candidate's C++ translation unit without pybind11.

load_inline binds the candidate's functions in the candidate's own TU: torch/extension.h (torch/all.h, plus
torch/python.h with pybind11 and torch's Python casters) and one `m.def` per function. With GCC that header set
costs ~14 s per TU even precompiled (dev box, -O3), because GCC instantiates the headers' pending templates in
every TU; with torch/all.h alone it is ~6 s. Here the candidate's TU includes torch/all.h only (precompiled), and
the binding lives in a bridge library built once per toolchain by the judge, from this file's fixed source
(trusted, like the precompiled headers, and read-only inside sandboxes). The TU gets, per bound function, a
trampoline that calls it with the argument types as declared, and a module init that hands the bridge a table.
The bridge converts arguments with pybind11's own casters (make_caster<T>, conversions allowed, as a
load_inline binding without py::arg), calls through torch::wrap_pybind_function when load_inline would
(`with_pytorch_error_handling`), and casts the result back with pybind11. Arguments, results and errors therefore
behave as with load_inline's binding; what differs is the text of a TypeError for arguments of the wrong type or
number, and the signature in the docstring.

Applies only where every bound function is declared with one signature of supported types (torch::Tensor or
at::Tensor by value or reference, int, int64_t/long, float, double, bool; results also void and
std::vector<torch::Tensor>), and no source mentions pybind11. Anything else keeps load_inline's own binding, and a
build that fails falls back to the code as written (build.py).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from kernelzero.judge.build.headers import host_cflags
from kernelzero.judge.build.split import _balanced, _split_args

BRIDGE_SOURCE = r"""
#include <torch/extension.h>
#include <cstring>
#include <string>
#include <vector>

namespace py = pybind11;

struct KzBridgeFn {
  const char* name;
  const char* doc;
  const char* sig;  // result code, then one code per argument: T tensor, i int, l int64_t, f float, d double, b bool
  void (*call)(void** args, void* result);
};

namespace {

template <typename T>
void kz_load(py::handle h, T* out, size_t i, const char* fn) {
  py::detail::make_caster<T> caster;
  if (!caster.load(h, true)) {
    throw py::type_error(std::string(fn) + "(): incompatible type for argument " + std::to_string(i) + ": " +
                         std::string(py::str(py::type::handle_of(h).attr("__name__"))));
  }
  *out = py::detail::cast_op<T>(std::move(caster));
}

py::object kz_call(const KzBridgeFn& fn, bool wrap, const py::args& args) {
  const size_t n = std::strlen(fn.sig) - 1;
  if (args.size() != n) {
    throw py::type_error(std::string(fn.name) + "(): takes " + std::to_string(n) + " argument(s) (" +
                         std::to_string(args.size()) + " given)");
  }
  std::vector<at::Tensor> t(n);
  std::vector<int> i32(n);
  std::vector<int64_t> i64(n);
  std::vector<float> f32(n);
  std::vector<double> f64(n);
  std::unique_ptr<bool[]> b(new bool[n ? n : 1]);
  std::vector<void*> argv(n);
  for (size_t k = 0; k < n; ++k) {
    switch (fn.sig[k + 1]) {
      case 'T': kz_load(args[k], &t[k], k, fn.name); argv[k] = &t[k]; break;
      case 'i': kz_load(args[k], &i32[k], k, fn.name); argv[k] = &i32[k]; break;
      case 'l': kz_load(args[k], &i64[k], k, fn.name); argv[k] = &i64[k]; break;
      case 'f': kz_load(args[k], &f32[k], k, fn.name); argv[k] = &f32[k]; break;
      case 'd': kz_load(args[k], &f64[k], k, fn.name); argv[k] = &f64[k]; break;
      case 'b': kz_load(args[k], &b[k], k, fn.name); argv[k] = &b[k]; break;
      default: throw std::runtime_error("kernelzero bridge: unknown argument code");
    }
  }
  at::Tensor rt;
  std::vector<at::Tensor> rv;
  int r32 = 0;
  int64_t r64 = 0;
  float rf = 0;
  double rd = 0;
  bool rb = false;
  void* result = nullptr;
  switch (fn.sig[0]) {
    case 'v': break;
    case 'T': result = &rt; break;
    case 'V': result = &rv; break;
    case 'i': result = &r32; break;
    case 'l': result = &r64; break;
    case 'f': result = &rf; break;
    case 'd': result = &rd; break;
    case 'b': result = &rb; break;
    default: throw std::runtime_error("kernelzero bridge: unknown result code");
  }
  auto invoke = [&]() { fn.call(argv.data(), result); };
  if (wrap) {
    torch::wrap_pybind_function(invoke)();
  } else {
    invoke();
  }
  switch (fn.sig[0]) {
    case 'T': return py::cast(std::move(rt));
    case 'V': return py::cast(std::move(rv));
    case 'i': return py::cast(r32);
    case 'l': return py::cast(r64);
    case 'f': return py::cast(rf);
    case 'd': return py::cast(rd);
    case 'b': return py::cast(rb);
    default: return py::none();
  }
}

}  // namespace

extern "C" __attribute__((visibility("default"))) PyObject* kz_bridge_module(const char* name,
                                                                              const KzBridgeFn* fns, int n,
                                                                              int wrap) {
  try {
    py::module_ m = py::module_::create_extension_module(name, nullptr, new PyModuleDef());
    for (int k = 0; k < n; ++k) {
      KzBridgeFn fn = fns[k];
      m.def(fn.name, [fn, wrap](const py::args& args) { return kz_call(fn, wrap != 0, args); }, fn.doc);
    }
    return m.release().ptr();
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_ImportError, e.what());
  }
  return nullptr;
}
"""

LIBRARY = "libkzbridge.so"
_TENSOR = {"torch::Tensor", "at::Tensor", "Tensor"}
_SCALARS = {"int": "i", "int64_t": "l", "std::int64_t": "l", "long": "l", "long int": "l", "long long": "l",
            "float": "f", "double": "d", "bool": "b"}  # fmt: skip
_STORAGE = {"T": "at::Tensor", "i": "int", "l": "int64_t", "f": "float", "d": "double", "b": "bool"}
_RESULTS = {"void": "v", "std::vector<torch::Tensor>": "V", "std::vector<at::Tensor>": "V"}
_SPECIFIERS = {"static", "inline", "extern", "TORCH_API", "C10_EXPORT"}


def build_bridge(out: Path) -> str | None:
    """Build `out/libkzbridge.so` from BRIDGE_SOURCE with torch's host flags; None on success, else the error."""
    import torch.utils.cpp_extension as cpp

    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    (out / "bridge.cpp").write_text(BRIDGE_SOURCE)
    try:
        cflags = host_cflags(["-O2"], with_cuda=False)
    except Exception as exc:
        return f"torch's build flags: {type(exc).__name__}: {exc}"
    lib = Path(cpp.TORCH_LIB_PATH)
    cmd = [cpp.get_cxx_compiler(), str(out / "bridge.cpp"), "-o", str(out / LIBRARY), *cflags, "-shared",
           f"-L{lib}", f"-Wl,-rpath,{lib}", "-lc10", "-ltorch_cpu", "-ltorch", "-ltorch_python"]  # fmt: skip
    res = subprocess.run(cmd, capture_output=True, text=True)
    return None if res.returncode == 0 else res.stderr or f"exit {res.returncode}"


@dataclass(frozen=True)
class Signature:
    name: str
    result: str  # code: v, T, V, i, l, f, d, b
    params: tuple[str, ...]  # codes: T, i, l, f, d, b


def _type_code(text: str, result: bool) -> str | None:
    t = re.sub(r"\s+", " ", re.sub(r"\bconst\b", " ", text)).strip()
    t = re.sub(r"\s*([<>,:])\s*", r"\1", t)
    if "&&" in t or "*" in t:
        return None
    t = t.removesuffix("&").strip()
    if t in _TENSOR:
        return "T"
    if t in _SCALARS:
        return _SCALARS[t]
    return _RESULTS.get(t) if result else None


def _param_code(param: str) -> str | None:
    if "=" in param or "[" in param:
        return None
    code = _type_code(param, result=False)
    if code is None:  # drop the parameter's name and try again
        m = re.fullmatch(r"(.*\W)\s*[A-Za-z_]\w*", param.strip())
        code = _type_code(m.group(1), result=False) if m else None
    return code


def signature(text: str, name: str) -> Signature | None:
    """The one signature `name` is declared or defined with in `text` (comments stripped), or None."""
    found: set[tuple[str, tuple[str, ...]]] = set()
    for m in re.finditer(rf"(?<![\w:.>])({re.escape(name)})\s*\(", text):
        head_start = max(text.rfind(c, 0, m.start()) for c in ";{}\n#") + 1
        head = text[head_start : m.start()].split()
        head = [w for w in head if w not in _SPECIFIERS]
        if not head or head[0] in ("return", "else", "case") or "=" in "".join(head):
            continue  # a call, not a declaration
        close = _balanced(text, m.end() - 1, "(", ")") - 1  # the closing parenthesis
        if close < 0:
            return None
        after = text[close + 1 :].lstrip()
        if not after.startswith((";", "{")):
            continue
        result = _type_code(" ".join(head), result=True)
        inner = text[m.end() : close].strip()
        params = [] if inner in ("", "void") else _split_args(inner)
        codes = tuple(_param_code(p) for p in params)
        if result is None or any(c is None for c in codes):
            return None
        found.add((result, codes))  # type: ignore[arg-type]
    if len(found) != 1:
        return None
    result, codes = found.pop()
    return Signature(name, result, codes)


def _c_string(s: str) -> str:
    return '"' + "".join(chr(b) if 32 <= b < 127 and chr(b) not in '"\\?' else f"\\{b:03o}" for b in s.encode()) + '"'


def binding(module: str, functions: dict[str, str], text: str, wrap: bool) -> str | None:
    """C++ to append to the candidate's TU (after its code) binding `functions` (name -> docstring) through the
    bridge, or None where the bridge does not apply. `text`: the TU's code, comments stripped."""
    if not functions or not re.fullmatch(r"[A-Za-z_]\w*", module):
        return None
    if re.search(r"pybind11|PYBIND11|\bpy::|PyInit_", text):  # the candidate binds something itself
        return None
    sigs = []
    for name in functions:
        if not re.fullmatch(r"[A-Za-z_]\w*", name):
            return None
        sig = signature(text, name)
        if sig is None:
            return None
        sigs.append(sig)
    out = ["struct _object;", "struct KzBridgeFn { const char* name; const char* doc; const char* sig; "
           "void (*call)(void**, void*); };",
           'extern "C" struct _object* kz_bridge_module(const char*, const KzBridgeFn*, int, int);',
           "namespace {"]  # fmt: skip
    for k, sig in enumerate(sigs):
        args = ", ".join(f"*static_cast<{_STORAGE[c]}*>(kz_a[{i}])" for i, c in enumerate(sig.params))
        call = f"{sig.name}({args})"
        if sig.result == "v":
            body = f"(void)kz_r; {call};"
        else:
            kind = "std::vector<at::Tensor>" if sig.result == "V" else _STORAGE[sig.result]
            body = f"*static_cast<{kind}*>(kz_r) = {call};"
        out.append(f"void kz_tramp_{k}(void** kz_a, void* kz_r) {{ (void)kz_a; {body} }}")
    out.append("}  // namespace")
    rows = [f"{{{_c_string(s.name)}, {_c_string(functions[s.name])}, {_c_string(s.result + ''.join(s.params))}, "
            f"&kz_tramp_{k}}}" for k, s in enumerate(sigs)]  # fmt: skip
    table = ", ".join(rows)
    out.append(f'extern "C" __attribute__((visibility("default"))) struct _object* PyInit_{module}() {{')
    out.append(f"  static const KzBridgeFn kz_fns[] = {{{table}}};")
    out.append(f"  return kz_bridge_module({_c_string(module)}, kz_fns, {len(sigs)}, {int(wrap)});")
    out.append("}")
    return "\n".join(out)
