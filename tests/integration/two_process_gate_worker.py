"""Worker for test_two_process_gate.py, launched with `torchrun --nproc_per_node 2` (gloo on CPU). Not a test.

One task, num_generations=6, per_device_train_batch_size=3: each group is split 3 + 3 across the two ranks. Each rank's
scripted judge answers its own three rollouts; the gate must use all six. Rank 0 writes every gathered batch it saw
to <out>/records.jsonl.
"""

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for support.py

from kernelzero.tasks import Task
from kernelzero.trainers.coder import run_coder_phase
from kernelzero.trainers.config import CoderPhaseConfig
from support import ScriptedJudge, accept_any_text, fail, ok

# Per rank, in call order: step 1's three rollouts, then step 2's.
SCRIPTS = {
    # step 1: rank 0 alone is 2/3 correct (open), but with rank 1 the group is 2/5 scored (closed)
    # step 2: rank 1 alone is 1/3 correct (closed), but the whole group is 3/6 (open)
    0: [ok(2.0), ok(3.0), fail("incorrect"), ok(2.0), ok(3.0), fail("incorrect")],
    1: [fail("incorrect"), fail("incorrect"), fail("infra_error"), ok(4.0), fail("incorrect"), fail("incorrect")],
}


def main(out_dir: str, model_dir: str) -> None:
    rank = int(os.environ["RANK"])
    judge = ScriptedJudge({"t": SCRIPTS[rank]})
    out = Path(out_dir)

    def record(rec):  # called on the main process only
        row = {
            "step": rec.step,
            "group_size": rec.group_size,
            "raw": rec.raw.tolist(),
            "gated": rec.gated.tolist(),
            "statuses": [v.status for v in rec.verdicts],
        }
        with (out / "records.jsonl").open("a") as f:
            f.write(json.dumps(row) + "\n")

    cfg = CoderPhaseConfig(
        output_dir=str(out / "run"),
        model=model_dir,
        num_generations=6,
        per_device_train_batch_size=3,
        max_completion_length=8,
        max_steps=2,
        save_steps=100,
        log_completions=False,
    )
    run_coder_phase(
        cfg,
        [Task(name="t", source="# t")],
        judge,
        parse_fn=accept_any_text,
        prompt_fn=lambda task, backend: [{"role": "user", "content": "ModelNew for t"}],  # short: CPU time
        on_rewards=record,
    )
    (out / f"judge_calls_rank{rank}.json").write_text(json.dumps(len(judge.calls)))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
