"""The front check's pure parts (judge/build/front.py): reading a load_inline call without running the candidate,
deciding where the check applies, and concluding from nvcc's output only when the plain build certainly fails.
No compiler runs here; tests/integration/test_front_check.py runs nvcc on the realistic mix."""

import pytest

from kernelzero.judge.build.front import (
    FrontResult,
    HeaderFacts,
    conclude,
    conclude_from_headers,
    plan,
    read_call,
    split_includes,
)

CUDA = r"""
__global__ void k(const float* x, float* out, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i];
}
torch::Tensor f(torch::Tensor x) {
    auto out = torch::empty_like(x);
    k<<<(x.numel() + 255) / 256, 256>>>(x.data_ptr<float>(), out.data_ptr<float>(), x.numel());
    return out;
}
"""
SOURCE = f'''"""doc"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

src = r"""{CUDA}"""
ext = load_inline(name="t", cpp_sources="torch::Tensor f(torch::Tensor x);", cuda_sources=src, functions=["f"],
                  extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    pass
'''


def test_reads_literal_arguments_as_load_inline_binds_them():
    a = read_call(SOURCE)
    assert a is not None
    assert a["name"] == "t" and a["cuda_sources"] == CUDA and a["functions"] == ["f"]
    assert a["extra_cuda_cflags"] == ["-O3"] and a["extra_cflags"] is None and a["no_implicit_headers"] is False
    device, plain, extra = plan(a)
    assert "__global__ void k" in device and "torch" not in device  # the split's torch-free device TU
    assert plain.startswith("#include <torch/types.h>\n#include <cuda.h>\n#include <cuda_runtime.h>\n")
    assert plain.endswith(CUDA) and extra == ["-O3"]


@pytest.mark.parametrize(
    "change",
    [
        ('src = r"""', 'src = "".join(r"""'),  # computed, not a literal
        ("import torch\n", "import torch\nimport numpy\n"),  # an import that could fail before the call
        ("import torch\n", "import torch\nprint(1)\n"),  # code runs before the call
        ("ext = load_inline(", "def build():\n    return load_inline("),  # not called at import
        ("import torch\n", "import torch\nsrc = 1\n"),  # the name is bound twice
        ("import torch\n", "import torch\nimport math as torch\n"),  # torch is not torch any more
        ("import torch\n", "import torch\ndef load_inline(**kw):\n    pass\n"),  # nor load_inline
        (
            "from torch.utils.cpp_extension import load_inline",
            "from torch.utils.cpp_extension import load as load_inline",
        ),
    ],
)
def test_a_call_it_cannot_read_exactly_is_none(change):
    assert read_call(SOURCE.replace(*change, 1)) is None


def test_the_module_path_form_is_read_too():
    src = SOURCE.replace("from torch.utils.cpp_extension import load_inline\n", "import torch.utils.cpp_extension\n")
    src = src.replace("ext = load_inline(", "ext = torch.utils.cpp_extension.load_inline(")
    assert read_call(src)["name"] == "t"


@pytest.mark.parametrize(
    "change, why",
    [
        ({"extra_cuda_cflags": ["-O3", "-Xcompiler", "-fplugin=x.so"]}, "a flag the check does not pass on"),
        ({"extra_include_paths": ["/tmp"]}, "headers or include paths of its own"),
        (
            {"cuda_sources": CUDA.replace("if (i < n)", "#ifdef __CUDA_ARCH__\n#endif\nif (i < n)")},
            "code that differs between nvcc's passes",
        ),
        ({"cuda_sources": "template <int B> __global__ void k() {}\n" + CUDA}, "the split does not apply"),
        ({"cuda_sources": None}, "no cuda_sources"),
        ({"with_cuda": False}, "cuda_sources built without CUDA"),
        (
            {"cuda_sources": "#if 1\n#endif\n" + CUDA},
            "a preprocessor directive other than include, define, undef or pragma",
        ),
        (
            {"cuda_sources": '#line 1 "x.cu"\n' + CUDA},
            "a preprocessor directive other than include, define, undef or pragma",
        ),
    ],
)
def test_where_the_check_does_not_apply(change, why):
    assert plan({**read_call(SOURCE), **change}) == why


DEVICE_TU = "#include <cuda.h>\n__global__ void k(float* out) {\n    out[0] = fast_exp(1.f);\n}\n"
FLAGGED = (
    'device.cu(3): error: identifier "fast_exp" is undefined\n\n1 error detected in the compilation of "device.cu".'
)


def test_an_identifier_nothing_declares_is_a_certain_compile_error():
    plain = '# 1 "plain.cu"\nnamespace c10 {}\n__global__ void k(float* out) {\n    out[0] = fast_exp(1.f);\n}\n'
    r = conclude(2, FLAGGED, DEVICE_TU, [plain, plain])
    assert r.status == "compile_error" and 'identifier "fast_exp" is undefined' in r.feedback


def test_an_identifier_declared_in_the_plain_build_is_not_concluded():
    # torch's headers (or the candidate's host code) declare it: the plain build may well compile
    declared = "static float fast_exp(float v);\n__global__ void k(float* out) {\n    out[0] = fast_exp(1.f);\n}\n"
    r = conclude(2, FLAGGED, DEVICE_TU, ["__global__ void k(float* out) { out[0] = fast_exp(1.f); }", declared])
    assert r.status == "unsure" and "fast_exp" in r.why
    # a macro of the plain build swallowed the use: not there at all
    assert conclude(2, FLAGGED, DEVICE_TU, ["out[0] = 1.f;", "out[0] = 1.f;"]).status == "unsure"


@pytest.mark.parametrize(
    "log",
    [
        'device.cu(3): error: expected a ";"\n1 error detected in the compilation of "device.cu".',
        FLAGGED + '\ndevice.cu(4): error: argument of type "int" is incompatible with parameter of type "float *"',
        'cuda.h(3): error: identifier "fast_exp" is undefined',  # not in the candidate's code
        "nvcc fatal   : Unknown option '-foo'",
        "",
    ],
)
def test_other_errors_are_unsure(log):
    plain = "out[0] = fast_exp(1.f);"
    assert conclude(1, log, DEVICE_TU, [plain, plain]).status == "unsure"


def test_a_clean_device_tu_passes():
    assert conclude(0, "device.cu(3): warning #550-D: unused", DEVICE_TU, ["", ""]) == FrontResult("passed")


HEADERS = HeaderFacts.parse(
    [
        '# 1 "/usr/include/cuda.h"\n#define CAT(a, b) a##b\n#define TWICE(x) CAT(x, x)\n#define KEEP(x) x\n'
        "float expf(float);\nnamespace c10 { int numel; }\n"
    ]  # fmt: skip
)


def test_header_facts_name_every_identifier_and_the_macros_that_paste():
    assert {"expf", "c10", "numel", "cuda", "CAT"} <= HEADERS.identifiers
    assert HEADERS.macros == {"CAT", "TWICE", "KEEP"} and HEADERS.pasting == {"CAT", "TWICE"}


def test_split_includes_keeps_the_leading_includes_only():
    assert split_includes("\n#include <torch/extension.h>\n__global__ void k() {}") == (
        "\n#include <torch/extension.h>",
        "__global__ void k() {}",
    )
    assert split_includes("__global__ void k() {}\n#include <x.h>") is None  # an include after code
    assert split_includes("#define J(a) a##1\n__global__ void k() {}") is None  # the candidate pastes


def test_from_headers_an_identifier_nobody_names_is_certain():
    rest = DEVICE_TU.split("\n", 1)[1]
    r = conclude_from_headers(2, FLAGGED, DEVICE_TU, DEVICE_TU, rest, HEADERS)
    assert r.status == "compile_error" and "fast_exp" in r.feedback


@pytest.mark.parametrize(
    "rest, why",
    [
        ("static float fast_exp(float);\n", "fast_exp appears elsewhere"),  # the candidate's host code declares it
        ("int a = TWICE(fast_);\n", "TWICE may paste identifiers"),  # could make fast_exp from pieces
    ],
)
def test_from_headers_what_could_declare_it_is_unsure(rest, why):
    text = rest + DEVICE_TU.split("\n", 1)[1]
    r = conclude_from_headers(2, FLAGGED, DEVICE_TU, text, text, HEADERS)
    assert r.status == "unsure" and r.why.startswith(why)


def test_from_headers_a_name_the_headers_hold_or_a_macro_on_the_line_is_unsure():
    headers = HeaderFacts.parse(["#define fast_exp __expf\n"])
    rest = DEVICE_TU.split("\n", 1)[1]
    assert conclude_from_headers(2, FLAGGED, DEVICE_TU, DEVICE_TU, rest, headers).status == "unsure"
    keep = DEVICE_TU.replace("out[0] = fast_exp(1.f);", "KEEP(out)[0] = fast_exp(1.f);")
    r = conclude_from_headers(2, FLAGGED, keep, keep, keep, HEADERS)
    assert r.status == "unsure" and r.why == "KEEP on a flagged line is a macro"
