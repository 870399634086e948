"""A few CA-GRPO Coder steps with the real judge, on one process or several (two GPUs).

Every process trains its share of each batch and judges its own rollouts on its own GPU (`JudgePool(devices=
[LOCAL_RANK])`: one judge per GPU, so no two judges time kernels on the same device). Groups are split across
processes on purpose (`--per-device-batch` not a multiple of `--num-generations`), and the main process checks that
the gate TRL applied equals CA-GRPO computed over each whole group (`gate_reward_matrix` on the gathered matrix).

    kernelzero sft --pairs builtin --out runs/sft          # a Coder that writes kernels (the tiny model's cold start)
    accelerate launch --multi_gpu --num_processes 2 scripts/coder_steps.py --model runs/sft/final --out runs/coder2
    torchrun --nproc_per_node 2 scripts/coder_steps.py --model runs/sft/final --out runs/cpu2   # CPU, gloo

Prints one line per step on the main process and writes them to OUT/steps.jsonl.
"""

from __future__ import annotations

import argparse
import json
import os
from collections import Counter
from pathlib import Path


def group_layout(n_rows: int, per_process: int, group_size: int) -> list[list[int]]:
    """For each group (consecutive `group_size` rows of the gathered batch), the processes its rows came from."""
    return [sorted({row // per_process for row in range(g, g + group_size)}) for g in range(0, n_rows, group_size)]


def step_summary(rec, per_process: int, gate) -> dict:
    """What the main process saw at one step: statuses, pass rate, groups split across processes, and whether the
    gated matrix TRL got equals CA-GRPO over whole groups."""
    import torch

    from kernelzero.rewards.cagrpo import gate_open_per_group, gate_reward_matrix

    expected = gate_reward_matrix(rec.raw, rec.group_size, gate)
    layout = group_layout(len(rec.verdicts), per_process, rec.group_size)
    return {
        "step": rec.step,
        "rollouts": len(rec.verdicts),
        "correct": sum(v.correct for v in rec.verdicts),
        "statuses": dict(Counter(v.status for v in rec.verdicts)),
        "groups": len(layout),
        "groups_split_across_processes": sum(len(p) > 1 for p in layout),
        "gate_open": gate_open_per_group(rec.raw, rec.group_size, gate.alpha).tolist(),
        "gate_matches_whole_groups": bool(torch.allclose(rec.gated, expected, equal_nan=True)),
        "speedups_ok": [round(v.speedup_eager, 3) for v in rec.verdicts if v.correct and v.speedup_eager],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, help="Coder model folder (e.g. `kernelzero sft`'s final/)")
    ap.add_argument("--out", required=True, help="run folder (checkpoints, steps.jsonl)")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--backends", default=None, help="comma list; default triton,cuda on GPU, triton on CPU")
    ap.add_argument("--num-generations", type=int, default=4, help="rollouts per group")
    ap.add_argument("--per-device-batch", type=int, default=6, help="rollouts per process per step")
    ap.add_argument("--max-completion-length", type=int, default=768)
    args = ap.parse_args()

    import torch

    from kernelzero.judge import JudgeOptions
    from kernelzero.judge.pool import JudgePool
    from kernelzero.tasks import seed_tasks
    from kernelzero.trainers.coder import run_coder_phase
    from kernelzero.trainers.config import CoderPhaseConfig

    cuda = torch.cuda.is_available()
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    backends = tuple((args.backends or ("triton,cuda" if cuda else "triton")).split(","))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    config = CoderPhaseConfig(
        output_dir=str(out / "coder"),
        model=args.model,
        backends=backends,
        use_cpu=not cuda,
        max_steps=args.steps,
        num_generations=args.num_generations,
        per_device_train_batch_size=args.per_device_batch,
        max_completion_length=args.max_completion_length,
        learning_rate=1e-4,
        save_steps=10_000,
        log_completions=False,
    )
    options = JudgeOptions(device="cuda" if cuda else "cpu", trials=3, compile_baseline=False)

    def record(rec) -> None:  # main process only
        line = step_summary(rec, args.per_device_batch, config.gate)
        print(f"coder step {line['step']}: " + json.dumps(line), flush=True)
        with (out / "steps.jsonl").open("a") as f:
            f.write(json.dumps(line) + "\n")

    with JudgePool(options, devices=[local_rank] if cuda else None, workers=None if cuda else 2) as pool:
        result = run_coder_phase(config, seed_tasks("builtin"), pool.ajudge, on_rewards=record, resume=False)
    if int(os.environ.get("RANK", 0)) == 0:
        print(f"done: {result.global_step} steps, model {result.final_model_dir}", flush=True)


if __name__ == "__main__":
    main()
