"""Coder and Proposer prompts: what each chat carries, refinement turns, and the feedback text built from verdicts."""

from __future__ import annotations

import pytest

from kernelzero.judge.verdict import Verdict
from kernelzero.roles.coder import (
    BACKENDS,
    MAX_REPLAY_CHARS,
    OPTIMIZATION_PRINCIPLES,
    Attempt,
    coder_messages,
    feedback_from_verdict,
    parse_coder_completion,
    worked_example,
)
from kernelzero.roles.proposer import EXAMPLE_APIS, TaskBudget, parse_proposer_completion, proposer_messages

TASK = (
    "import torch\nfrom torch import nn\n\n\nclass Model(nn.Module):\n    def forward(self, a, b):\n"
    "        return torch.matmul(a, b).softmax(-1)\n\n\ndef get_inputs():\n"
    "    return [torch.randn(256, 512), torch.randn(512, 128)]\n\n\ndef get_init_inputs():\n    return []\n"
)


def user_text(messages) -> str:
    return "\n".join(m["content"] for m in messages if m["role"] == "user")


@pytest.mark.parametrize("backend", BACKENDS)
def test_coder_chat_carries_task_rules_and_its_own_example(backend):
    messages = coder_messages(TASK, backend)
    assert [m["role"] for m in messages] == ["system", "user"]
    text = messages[1]["content"]
    assert "```python\n" + TASK.strip("\n") + "\n```" in text
    example_task, example_solution = worked_example(backend)
    assert example_solution.strip("\n") in text and example_task.strip("\n") in text
    other = worked_example(next(b for b in BACKENDS if b != backend))[1]
    assert other.strip("\n") not in text
    assert ("load_inline" if backend == "cuda" else "@triton.jit") in text
    assert {"cuda": "CUDA", "triton": "Triton"}[backend] in messages[0]["content"]


def test_coder_rules_name_every_forbidden_trick():
    text = coder_messages(TASK, "triton")[1]["content"]
    for phrase in (
        "class ModelNew(nn.Module)",
        "same arguments as `Model.__init__`",
        "calls the PyTorch operation it was asked to replace",
        "try/except",
        "caches outputs",
        "other CUDA streams or threads",
        "monkeypatches torch",
        "changes precision",
        "writes into its inputs",
    ):
        assert phrase in text, phrase


def test_principles_only_when_asked():
    assert "## Optimization principles" not in coder_messages(TASK, "cuda")[1]["content"]
    text = coder_messages(TASK, "cuda", principles=OPTIMIZATION_PRINCIPLES)[1]["content"]
    assert all(f"- {p}" in text for p in OPTIMIZATION_PRINCIPLES)
    assert text.index("## Optimization principles") < text.index("## Your task")


def test_unknown_backend_is_a_clear_error():
    with pytest.raises(ValueError, match=r"backend must be one of \('cuda', 'triton'\), got 'hip'"):
        coder_messages(TASK, "hip")


def test_refinement_turns_replay_each_attempt_with_its_feedback():
    code1 = "class ModelNew:\n    pass\n"
    first = Attempt.of("```python\n" + code1 + "```", parse_coder_completion("```python\n" + code1 + "```").code, "F1")
    garbage = "I think we should tile it."
    second = Attempt.of(garbage, None, "F2")  # the parser found no code in it
    messages = coder_messages(TASK, "cuda", previous=[first, second])
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert messages[2]["content"] == "```python\n" + code1 + "```"
    assert messages[4]["content"] == garbage  # no code: replayed as written
    assert "F1" in messages[3]["content"] and "F2" in messages[5]["content"] and "F1" not in messages[5]["content"]
    assert messages[1] == coder_messages(TASK, "cuda")[1]


def test_codeless_answer_is_clipped_when_replayed():
    long = "x" * (MAX_REPLAY_CHARS + 500)
    attempt = Attempt.of(long, None, "fb")
    assert attempt.answer == "x" * MAX_REPLAY_CHARS + "\n[...]"


def test_feedback_from_verdicts():
    ok = Verdict(status="ok", correct=True, speedup_eager=1.734, timed=True)
    assert feedback_from_verdict(ok) == "Status: ok (correct; speed: 1.73x the PyTorch reference)."
    assert feedback_from_verdict(Verdict(status="ok", correct=True)) == "Status: ok (correct; speed: not timed)."
    bad = Verdict.fail("rejected", "forward called torch.matmul", guard="reference_op")
    assert feedback_from_verdict(bad) == "Status: rejected (guard: reference_op).\nforward called torch.matmul"
    assert feedback_from_verdict(Verdict.fail("timeout", "")) == "Status: timeout."


@pytest.mark.parametrize("backend", BACKENDS)
def test_worked_examples_parse_as_what_they_show(backend):
    task, solution = worked_example(backend)
    assert parse_coder_completion("```python\n" + solution + "```").code == solution
    assert parse_proposer_completion("```python\n" + task + "```").code == task


def test_proposer_chat_lists_the_apis_rules_and_example():
    apis = ["torch.nn.Conv2d", "torch.nn.functional.gelu", "torch.amax"]
    messages = proposer_messages(apis, budget=TaskBudget(max_input_elements=1000, max_param_elements=2000))
    assert [m["role"] for m in messages] == ["system", "user"]
    text = messages[1]["content"]
    assert "## Your API set\n{`torch.nn.Conv2d`, `torch.nn.functional.gelu`, `torch.amax`}" in text
    assert "API set: {" + ", ".join(f"`{a}`" for a in EXAMPLE_APIS) + "}" in text
    for phrase in ("every API of the set", "deterministic", "finite", "not constant, not all zeros", "get_init_inputs"):
        assert phrase in text, phrase
    assert "at most 1,000 elements" in text and "at most 2,000" in text
    assert text.index("## Example") < text.index("## Your API set")


def test_proposer_needs_apis():
    with pytest.raises(ValueError, match="at least one API"):
        proposer_messages([])


@pytest.mark.parametrize("backend", BACKENDS)
def test_brief_prompts_carry_the_task_or_api_set_alone(backend):
    """`brief` (roles.coder.PROMPTS): no rules, no worked example; the task (or API set) and the answer's form stay,
    and refinement turns follow as in the full chat."""
    full, brief = user_text(coder_messages(TASK, backend)), user_text(coder_messages(TASK, backend, brief=True))
    assert "```python\n" + TASK.strip("\n") + "\n```" in brief and "one ```python block" in brief
    assert "## Rules" in full and "## Rules" not in brief and worked_example(backend)[1].strip("\n") not in brief
    assert len(brief) < len(full) / 4
    previous = [Attempt.of("```python\nx = 1\n```", "x = 1", "incorrect: max abs error 3.0")]
    assert coder_messages(TASK, backend, previous=previous, brief=True)[2:] == \
        coder_messages(TASK, backend, previous=previous)[2:]  # fmt: skip
    apis = ("torch.exp", "F.relu")
    text = user_text(proposer_messages(apis, brief=True))
    assert "{`torch.exp`, `F.relu`}" in text and "## Rules" not in text and "one ```python block" in text
    assert "## Rules" in user_text(proposer_messages(apis))


def test_the_prompt_style_reaches_every_chat_the_loop_sends():
    """propose (the task batch) and coder_samples (l(m)) build their chats in the style asked for."""
    from kernelzero.curriculum.proposals import coder_samples, propose
    from kernelzero.generation.base import Completion, SamplingConfig
    from kernelzero.tasks import Task

    class Recording:
        name = "recording"

        def __init__(self):
            self.chats = []

        def generate(self, prompts, n, sampling):
            self.chats += prompts
            return [[Completion("no code", "stop") for _ in range(n)] for _ in prompts]

    class NoValidator:
        def validate_many(self, items, within_batch=True):  # `Validator.validate_many`'s signature
            return []

    for brief in (False, True):
        policy = Recording()
        propose(policy, [("torch.exp", "F.relu")], NoValidator(), sampling=SamplingConfig(), brief=brief)
        coder_samples([Task(name="t", source=TASK)], policy, k=2, backend="triton",
                      judge_many=lambda requests: [], sampling=SamplingConfig(), brief=brief)  # fmt: skip
        assert [("## Rules" in user_text(c)) for c in policy.chats] == [not brief, not brief]
