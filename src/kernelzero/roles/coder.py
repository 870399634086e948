"""Coder prompts and parsing: task in, chat messages out (rules, a worked example, judge feedback); code back out,
and `judge_completions`, the one path from a completion to its verdict (`format_error` when it holds no code).

The prompt states the judge's contract (judge/core.py) in the model's terms, so that a rejected solution was
told beforehand why it would be. Each backend has one worked example written by us: a real, correct kernel for a
small task, kept as files in `kernelzero/data/` so a test can run them (the Triton one under the interpreter on CPU,
the CUDA one on a GPU). Multi-turn refinement appends the previous answers and the judge's feedback as further
turns of the same chat.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from importlib import resources

from kernelzero.judge.verdict import Verdict
from kernelzero.roles.parsing import ParsedCode, ParseResult, extract_code
from kernelzero.tasks import Task

JudgeManyFn = Callable[[Sequence[tuple[Task, str, str]]], Iterable[Verdict]]
"""Many (task, candidate source, backend) requests -> one verdict per request, in request order (e.g.
`JudgePool.judge_many`)."""

BACKENDS = ("cuda", "triton")
PROMPTS = ("full", "brief")
"""Prompt styles of both roles: `full` (rules and a worked example: what a pretrained model needs) or `brief` (the
task or API set alone: a from-scratch model cold-started on the task family, whose prompt is then a few hundred
tokens instead of over a thousand; on 2 CPU cores, SFT on brief prompts ran three times as many steps per minute and
was the only one of the two to write correct kernels for unseen tasks)."""
MAX_REPLAY_CHARS = 6000  # a code-less earlier completion is replayed up to this length in a refinement chat

# Cold-start hints (the paper distils such principles with SFT; a prompt can carry them too).
OPTIMIZATION_PRINCIPLES = (
    (
        "Fusion: compute chains of elementwise work (and a matmul or convolution epilogue such as bias, activation or "
        "scaling) in one kernel, so intermediates never make a round trip through global memory."
    ),
    (
        "Tiling: load blocks of the operands into shared memory (CUDA) or as tl.load'ed tiles (Triton) and reuse them "
        "for many outputs; size tiles so a block's working set fits on chip."
    ),
    (
        "Vectorized, coalesced memory access: consecutive threads touch consecutive addresses along the contiguous "
        "dimension; move 128 bits per access (float4 in CUDA, contiguous BLOCK_SIZE ranges in Triton)."
    ),
    (
        "Parallel reductions: for sums, means, max, softmax and norms, reduce within a warp (shuffles) or a block "
        "(shared memory, tl.sum/tl.max), one row per block or program, with stable formulas (subtract the max "
        "before exp)."
    ),
    (
        "No wasted work: launch enough blocks to fill the GPU, avoid copies of tensors that are already contiguous, "
        "and "
        "compute input-independent values once in __init__ rather than in every forward."
    ),
)

SYSTEM_PROMPT = (
    "You are an expert GPU performance engineer. You rewrite PyTorch modules with custom {backend_name} kernels "
    "that produce the same outputs and run faster. You answer with complete, runnable Python source."
)

_BACKEND_NAMES = {"cuda": "CUDA", "triton": "Triton"}

_COMMON_RULES = """\
- Write one complete Python source file that defines `class ModelNew(nn.Module)`. `ModelNew.__init__` takes the \
same arguments as `Model.__init__`, `ModelNew.forward` takes the same inputs as `Model.forward`, and it returns \
outputs of the same shapes and dtypes. Create any parameters in the same order and with the same shapes as `Model` \
(the judge seeds the random generator identically before building each, and copies `Model`'s weights where the \
names match).
- Do not define `get_inputs` or `get_init_inputs`: the judge uses the task's. Keep tensors on the device they \
arrive on.
- The work must happen in your own kernels, and the judge checks that they run. It rejects a solution that:
  - calls the PyTorch operation it was asked to replace (or an equivalent torch, torch.nn.functional or ATen \
call) instead of a custom kernel;
  - falls back to PyTorch inside try/except;
  - caches outputs (or anything computed from the inputs) across calls;
  - launches work on other CUDA streams or threads;
  - monkeypatches torch or the judge;
  - changes precision (fp32 computed in fp16, bf16 or TF32) beyond the tolerance;
  - writes into its inputs.
- PyTorch remains fine for allocating outputs (torch.empty), views, reshapes and .contiguous().
- Reply with exactly one ```python block that holds the full source. A short explanation before it is fine."""

_BACKEND_RULES = {
    "cuda": """\
- Write the kernels in CUDA C++ and build them at import time inside the source with \
`torch.utils.cpp_extension.load_inline` (cpp_sources with the declarations, cuda_sources with the kernels and their \
launchers, functions=[...] naming what Python calls). Launch on `at::cuda::getCurrentCUDAStream()` and check launch \
errors with `C10_CUDA_KERNEL_LAUNCH_CHECK()`.""",
    "triton": """\
- Write the kernels with `@triton.jit` (`import triton`, `import triton.language as tl`) and launch them from \
`forward` over a grid. Make block sizes `tl.constexpr`, mask every load and store at the edges, and pass \
`input_precision="ieee"` to `tl.dot` on fp32 inputs (its default is TF32, which changes precision).""",
}


@dataclass(frozen=True)
class Attempt:
    """One earlier answer in a refinement chat: what the model gave, and what the judge said about it."""

    answer: str  # the assistant turn as replayed: the parsed code in a ```python fence, or the raw completion
    feedback: str  # `feedback_from_verdict(verdict)`, or any text fit to show the model

    @classmethod
    def of(cls, completion: str, code: str | None, feedback: str) -> Attempt:
        """Replay the code the judge saw; a completion without usable code (code None) is replayed as written
        (clipped)."""
        if code is not None:
            return cls(answer=_fence(code), feedback=feedback)
        clipped = completion if len(completion) <= MAX_REPLAY_CHARS else completion[:MAX_REPLAY_CHARS] + "\n[...]"
        return cls(answer=clipped, feedback=feedback)


def coder_messages(
    task_source: str,
    backend: str,
    *,
    previous: Sequence[Attempt] = (),
    principles: Sequence[str] | None = None,
    brief: bool = False,
) -> list[dict[str, str]]:
    """The chat for one Coder rollout: system, the task turn, then one (answer, feedback) pair per earlier attempt.

    `brief`: the task turn without the rules and the worked example (`PROMPTS`), for a model trained from scratch
    on the task family: they are most of the prompt's tokens and teach such a model nothing its SFT data does not."""
    _check_backend(backend)
    parts = [
        (
            f"Rewrite the PyTorch module `Model` below as `ModelNew`, using custom {_BACKEND_NAMES[backend]} kernels "
            "so that it is faster and gives the same results."
        ),
    ]
    if not brief:
        example_task, example_solution = worked_example(backend)
        parts += [
            "## Rules\n" + _COMMON_RULES + "\n" + _BACKEND_RULES[backend],
            "## Example\nTask:\n" + _fence(example_task) + "\nSolution:\n" + _fence(example_solution),
        ]
    if principles:
        parts.append("## Optimization principles\n" + "\n".join(f"- {p}" for p in principles))
    parts.append(
        "## Your task\n" + _fence(task_source) + "\nWrite `ModelNew` for this task. Reply with one ```python block "
        "holding the complete source."
    )
    messages = [
        {"role": "system", "content": SYSTEM_PROMPT.format(backend_name=_BACKEND_NAMES[backend])},
        {"role": "user", "content": "\n\n".join(parts)},
    ]
    for attempt in previous:
        messages.append({"role": "assistant", "content": attempt.answer})
        messages.append({"role": "user", "content": _refine_turn(attempt.feedback)})
    return messages


def parse_coder_completion(completion: str) -> ParseResult:
    """The last Python block that defines `class ModelNew`, checked with `ast` (see `parsing.extract_code`)."""
    return extract_code(completion, select=("class ModelNew",))


@dataclass(frozen=True)
class Judged:
    """One Coder completion and its verdict. `code` is what the judge ran; None when the completion held no usable
    code, and then the verdict is `format_error` (guard `parse`, the parser's reason as feedback) and no judge ran."""

    completion: str
    code: str | None
    verdict: Verdict


def judge_completions(
    requests: Sequence[tuple[Task, str, str]],
    judge_many: JudgeManyFn,
    parse_fn: Callable[[str], ParseResult] = parse_coder_completion,
) -> list[Judged]:
    """completion -> parsed code -> verdict, for (task, completion, backend) requests; results in request order.

    The one path from a Coder completion to its verdict (sampling in `eval.solve`, the Coder trainer's reward
    columns, the loop's l(m) samples). The completions with code go to `judge_many` in one call, so a pool can judge
    them concurrently; the others get their `format_error` verdict here.
    """
    return list(iter_judged(requests, judge_many, parse_fn))


def iter_judged(
    requests: Sequence[tuple[Task, str, str]],
    judge_many: JudgeManyFn,
    parse_fn: Callable[[str], ParseResult] = parse_coder_completion,
) -> Iterator[Judged]:
    """`judge_completions` as a stream: each result is yielded as soon as `judge_many`'s iterable gives its verdict,
    so a caller that records results loses only the unfinished ones when interrupted. With a streaming `judge_many`
    (`JudgePool.imap`: every request in flight, verdicts in request order) results come as they are judged; with a
    list-returning one (`JudgePool.judge_many`), all at once when the batch is done."""
    parsed = [parse_fn(text) for _, text, _ in requests]
    calls = [(task, p.code, backend) for (task, _, backend), p in zip(requests, parsed, strict=True)
             if isinstance(p, ParsedCode)]  # fmt: skip
    verdicts = iter(judge_many(calls)) if calls else iter(())  # the judge is not asked for an empty batch
    for (task, text, backend), p in zip(requests, parsed, strict=True):
        if isinstance(p, ParsedCode):
            verdict = next(verdicts, None)
            if verdict is None:
                raise ValueError(f"judge_many gave fewer verdicts than the {len(calls)} requests it was sent")
            yield Judged(text, p.code, verdict)
        else:
            yield Judged(text, None, Verdict.fail("format_error", p.reason, guard="parse", task=task.name,
                                                  backend=backend))  # fmt: skip
    if next(verdicts, None) is not None:
        raise ValueError(f"judge_many gave more verdicts than the {len(calls)} requests it was sent")


def worked_example(backend: str) -> tuple[str, str]:
    """The example (task source, solution source) for a backend, as shown in the prompt."""
    _check_backend(backend)
    return _data("coder_example_task.py"), _data(f"coder_example_{backend}.py")


def feedback_from_verdict(verdict: Verdict) -> str:
    """The judge's verdict as the text of a refinement turn: status first, then what to act on."""
    if verdict.correct:
        speed = f"{verdict.speedup_eager:.2f}x the PyTorch reference" if verdict.speedup_eager else "not timed"
        return f"Status: ok (correct; speed: {speed})."
    head = f"Status: {verdict.status}" + (f" (guard: {verdict.guard})" if verdict.guard else "") + "."
    return head + ("\n" + verdict.feedback if verdict.feedback else "")


def _refine_turn(feedback: str) -> str:
    return (
        "The judge ran your solution.\n" + feedback.strip() + "\n\n"
        "Write an improved solution: fix what failed, or make it faster if it was correct. The same rules apply. "
        "Reply with one ```python block holding the complete source."
    )


def _fence(code: str) -> str:
    return "```python\n" + code.strip("\n") + "\n```"


def _data(name: str) -> str:
    return (resources.files("kernelzero") / "data" / name).read_text(encoding="utf-8")


def _check_backend(backend: str) -> None:
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
