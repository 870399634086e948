"""The Coder's reward columns without a model: one judge call per completion, format errors, infra failures."""

import asyncio

from kernelzero.trainers.coder_rewards import VerdictLedger, make_coder_reward_funcs
from kernelzero.trainers.prompts import parse_coder_completion
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
    assert ledger.verdicts[0].status == "format_error" and "python code block" in ledger.verdicts[0].feedback


def test_parser_takes_the_last_block_and_requires_modelnew():
    two = "```python\nclass ModelNew: 1\n```\nbetter:\n```python\nclass ModelNew: 2\n```"
    assert parse_coder_completion(two).code == "class ModelNew: 2"
    assert parse_coder_completion("```python\nx = 1\n```").reason == "the code block does not define class ModelNew"
