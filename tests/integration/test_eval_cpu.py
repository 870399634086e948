"""`kernelzero eval --solutions` end to end under the real judge on CPU (Triton interpreter, untimed).

Fixtures: tests/fixtures/eval_tasks (three tiny tasks) and tests/fixtures/eval_solutions (a correct ReLU, a
deliberately incorrect scale-add, and no file for the row sum).
"""

from __future__ import annotations

import json

from typer.testing import CliRunner

from kernelzero.cli import app


def test_eval_solutions_on_cpu_reports_pass_at_1_and_missing(tmp_path):
    out = tmp_path / "run"
    args = ["eval", "--tasks", "tests/fixtures/eval_tasks", "--solutions", "tests/fixtures/eval_solutions",
            "--device", "cpu", "--trials", "2", "--workers", "2", "--out", str(out)]  # fmt: skip
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    lines = [json.loads(x) for x in (out / "verdicts.jsonl").read_text().splitlines()]
    assert {x["task"]: x["verdict"]["status"] for x in lines} == {
        "1_relu": "ok", "2_scale_add": "incorrect", "3_row_sum": "format_error"
    }  # fmt: skip
    assert "| all | 3 | 1 | 1 | 33.3% |" in res.output  # tasks, samples/task, solved, pass@1
    assert "Missing solutions (1, counted as not solved): 3_row_sum" in res.output
    assert "Untimed run" in res.output and "total time" in res.output
    assert {p.name for p in out.glob("*.png")} == {"outcomes.png", "pass_by_turn.png"}  # untimed: no speedups
    report, figures = (out / "report.md").read_text().split("\n## Figures\n")
    assert report in res.output  # printed as written, less the figures
    assert figures.split() == ["![Outcome", "of", "every", "attempt](outcomes.png)", "![pass@k", "by", "refinement",
                               "turn](pass_by_turn.png)"]
