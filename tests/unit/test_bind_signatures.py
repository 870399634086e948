"""bind.py's reading of the candidate's declarations, and the glue it writes (no compiler: see
tests/integration/test_bind.py for the built module against load_inline's own binding)."""

import pytest

from kernelzero.judge.build.bind import Signature, binding, signature

TU = """torch::Tensor relu_cuda(torch::Tensor x, torch::Tensor y);
static inline std::vector<torch::Tensor> parts(const torch::Tensor& a, int k) {
    auto r = relu_cuda(a, a);
    return r.chunk(k);
}
void touch(at::Tensor &t, int64_t n, long m, float s, double d, bool b);
"""


@pytest.mark.parametrize(
    "name, want",
    [
        ("relu_cuda", Signature("relu_cuda", "T", ("T", "T"))),  # declared, and called inside `parts`: one signature
        ("parts", Signature("parts", "V", ("T", "i"))),
        ("touch", Signature("touch", "v", ("T", "l", "l", "f", "d", "b"))),
        ("missing", None),
    ],
)
def test_declarations_give_one_signature_of_type_codes(name, want):
    assert signature(TU, name) == want


@pytest.mark.parametrize(
    "decl",
    [
        "torch::Tensor f(torch::Tensor* x);",  # pointer
        "torch::Tensor f(std::vector<int64_t> sizes);",  # a type the bridge does not convert
        "torch::Tensor f(torch::Tensor x, double a = 1.0);",  # default argument
        "torch::Tensor f(torch::Tensor x);\ntorch::Tensor f(torch::Tensor x, int k);",  # overloads
        "std::tuple<torch::Tensor, torch::Tensor> f(torch::Tensor x);",  # result type it does not cast
        "template <typename T> T f(T x);",
        "unsigned f(torch::Tensor&& x);",
    ],
)
def test_what_the_bridge_cannot_bind_is_left_to_load_inline(decl):
    assert signature(decl, "f") is None
    assert binding("m", {"f": "f"}, decl, wrap=True) is None


def test_glue_calls_each_function_with_its_declared_types_and_names_the_module():
    glue = binding("ext_1a2b", {"relu_cuda": "relu", "touch": 'say "hi"'}, TU, wrap=False)
    assert ("*static_cast<at::Tensor*>(kz_r) = relu_cuda(*static_cast<at::Tensor*>(kz_a[0]), "
            "*static_cast<at::Tensor*>(kz_a[1]));") in glue  # fmt: skip
    assert ("touch(*static_cast<at::Tensor*>(kz_a[0]), *static_cast<int64_t*>(kz_a[1]), *static_cast<int64_t*>"
            "(kz_a[2]), *static_cast<float*>(kz_a[3]), *static_cast<double*>(kz_a[4]), *static_cast<bool*>"
            "(kz_a[5]));") in glue  # fmt: skip
    assert "PyInit_ext_1a2b()" in glue
    assert '{"relu_cuda", "relu", "TTT", &kz_tramp_0}, {"touch", "say \\042hi\\042", "vTllfdb", &kz_tramp_1}' in glue
    assert 'kz_bridge_module("ext_1a2b", kz_fns, 2, 0)' in glue


def test_a_candidate_that_binds_anything_itself_keeps_load_inline():
    own = TU + "\nPYBIND11_MODULE(m, mod) { mod.def(\"x\", &relu_cuda); }"
    assert binding("m", {"relu_cuda": "relu_cuda"}, own, wrap=True) is None
    assert binding("m", {}, TU, wrap=True) is None  # nothing to bind
    assert binding("m; evil", {"relu_cuda": "relu_cuda"}, TU, wrap=True) is None
