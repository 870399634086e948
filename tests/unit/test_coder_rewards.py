"""The Coder's reward columns without a model: one judge call per completion, format errors, infra failures."""

import asyncio

from kernelzero.roles.coder import parse_coder_completion
from kernelzero.tasks import Task
from kernelzero.trainers.coder_rewards import VerdictLedger, make_coder_reward_funcs
from support import ScriptedJudge, accept_any_text, fail, ok

GOOD = "Here it is:\n```python\nimport torch\nclass ModelNew(torch.nn.Module):\n    pass\n```"


def run_columns(ledger, completions, names):
    correct, speedup = make_coder_reward_funcs(ledger)
    kw = {
        "prompts": [None] * len(completions),
        "completions": completions,
        "name": names,
        "source": ["# src"] * len(names),
        "backend": ["triton"] * len(names),
    }

    async def both():
        return await asyncio.gather(correct(**kw), speedup(**kw))

    return asyncio.run(both())


def test_both_columns_share_one_verdict_per_completion():
    judge = ScriptedJudge({"t": [ok(2.5), fail("incorrect"), fail("infra_error"), ok(None)]})
    ledger = VerdictLedger(judge, accept_any_text)
    completions = [[{"role": "assistant", "content": f"c{i}"}] for i in range(4)]
    c, s = run_columns(ledger, completions, ["t"] * 4)
    assert len(judge.calls) == 4
    assert [src for _, src, _ in judge.calls] == ["c0", "c1", "c2", "c3"]
    assert c == [1.0, 0.0, None, 1.0]  # infra_error -> None: TRL leaves it out instead of scoring 0
    assert s == [2.5, 0.0, None, None]  # correct but untimed -> None: no speed bonus after the gate


def test_unparseable_completion_is_a_scored_format_error_and_never_judged():
    judge = ScriptedJudge({"t": [ok(3.0)]})
    ledger = VerdictLedger(judge, parse_coder_completion)
    c, s = run_columns(ledger, ["no code here", GOOD], ["t", "t"])
    assert c == [0.0, 1.0] and s == [0.0, 3.0]
    assert len(judge.calls) == 1 and "class ModelNew" in judge.calls[0][1]
    bad = ledger.verdicts[0]
    assert (bad.status, bad.guard, bad.scored) == ("format_error", "parse", True)
    assert bad.feedback == parse_coder_completion("no code here").reason  # the parser's one-line reason, as is


def test_judge_receives_the_callers_task_record():
    task = Task(name="t", source="# src", origin="kernelbench", level=2)
    judge = ScriptedJudge({"t": [ok(1.0)]})
    seen = []

    async def judge_fn(t, source, backend):
        seen.append(t)
        return await judge(t, source, backend)

    run_columns(VerdictLedger(judge_fn, accept_any_text, {"t": task}), ["x"], ["t"])
    assert seen == [task] and seen[0].level == 2
