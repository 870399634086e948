"""The learning study's Proposer RL on CPU: does GRPO raise a small cold-started Proposer's valid share, and after
how many judged batches, before device minutes are spent on it.

What is real here: the study's tokenizer, model shape, SFT path, brief prompts and API sets; the Proposer trainer
(`run_proposer_phase`: TRL GRPO, the Proposer reward with its repetition penalty); the task validator itself
(`curriculum.validate.Validator`, its sandboxed run on CPU included), for the reward and for the evaluation. What
stands in: the frozen Coder's l(m). Each valid task gets `--coder-k` coin flips of probability `--coder-p` (the
study's Coder passed 40-60% of its training tasks on an H100), so a valid task's reward is 1 - 2|l - 0.5| as in the
loop, with the loop's spread of 0, 0.5 and 1. The GPU study measured the same Proposer (1M parameters, 4 judged
batches of 16 a round) flat on fixed API sets: 17.2% -> 20.3% -> 18.8% and 29.7% -> 31.2% -> 28.1% over two rounds.

    python bench/study_proposer_proxy.py --corpus bench/results/study_h100_d1bb4a6.tgz --out /tmp/pp \\
        --steps 8 24 --lr 1e-4

Writes OUT/proxy.json: the valid share (and the validator's reasons) on the study's 64 fixed evaluation API sets
(`corpus/api_sets.txt`'s first; one task each at temperature 1, for each `--eval-seeds` sampling seed, with their mean
and spread) after SFT and after RL for each setting, with each judged batch's valid share and mean reward. The RL
phases draw their API sets from the rest of the file.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from study_proxy_common import cold_start, copy_corpus, open_record, proxy_config  # noqa: E402

EVAL_SETS = 64


def valid_share(model_dir: Path, sets, validator, seed: int) -> dict:
    """One task per API set at temperature 1 through the full validator, as the study's Proposer evaluation does."""
    from kernelzero.curriculum.proposals import ProposeSummary, propose
    from kernelzero.generation import load_policy
    from kernelzero.generation.base import SamplingConfig

    policy = load_policy(str(model_dir), device="cpu", batch_size=64)
    proposals = propose(policy, sets, validator, brief=True, within_batch=False,
                        sampling=SamplingConfig(temperature=1.0, max_new_tokens=512, seed=seed))  # fmt: skip
    counts = ProposeSummary(proposals).counts
    return {"valid_share": counts["valid"] / len(proposals), "reasons": dict(counts)}


class CoinCoder:
    """coder_samples_fn(tasks) -> k judged samples per task, each correct with probability p (seeded)."""

    def __init__(self, k: int, p: float, seed: int):
        self.k, self.p, self.rng = k, p, random.Random(seed)

    def __call__(self, tasks):
        from kernelzero.judge.verdict import Verdict
        from kernelzero.roles.coder import Judged

        def one(name: str) -> Judged:
            if self.rng.random() < self.p:
                v = Verdict(status="ok", correct=True, timed=True, speedup_eager=1.0, speed_noise=0.0, task=name)
            else:
                v = Verdict.fail("incorrect", "the stand-in's coin", task=name)
            return Judged(completion="", code="", verdict=v)

        return [[one(t.name) for _ in range(self.k)] for t in tasks]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", required=True, help="a study folder or pack holding a finished corpus")
    ap.add_argument("--out", required=True)
    ap.add_argument("--lr", type=float, nargs="+", default=[1e-4])
    ap.add_argument("--mu", type=int, default=2, help="GRPO's mu: updates per judged batch")
    ap.add_argument("--steps", type=int, nargs="+", default=[8, 24],
                    help="judged batches per run (the study: 4 a round, 8 in all)")
    ap.add_argument("--batch", type=int, default=16, help="proposals per judged batch")
    ap.add_argument("--generations", type=int, default=8, help="group size G")
    ap.add_argument("--sets", type=int, default=None,
                    help="distinct API sets per run, cycled as the loop cycles a round's (the study: 8 a round); "
                    "default: a fresh set for every group")  # fmt: skip
    ap.add_argument("--coder-k", type=int, default=2, help="stand-in Coder samples per valid task")
    ap.add_argument("--coder-p", type=float, default=0.5, help="the stand-in Coder's success probability")
    ap.add_argument("--sft-max-steps", type=int, default=1500)
    ap.add_argument("--seed", type=int, default=0, help="the models' init, SFT, sampling and RL")
    ap.add_argument("--rl-seeds", type=int, nargs="+", default=None,
                    help="seeds of the RL phase, its API-set draw and its coin (default: --seed); the SFT is shared")
    ap.add_argument("--eval-seeds", type=int, nargs="+", default=None,
                    help="sampling seeds of every evaluation (default: --seed); several show how far sampling alone "
                    "moves a valid share of 64 tasks")  # fmt: skip
    args = ap.parse_args(argv)
    if not Path(args.corpus).exists():
        ap.error(f"--corpus {args.corpus}: no such file or folder")
    out = Path(args.out)
    corpus = copy_corpus(args.corpus, out)
    cfg = proxy_config(args.sft_max_steps)
    from kernelzero.curriculum.proposals import read_api_sets
    from kernelzero.curriculum.validate import ValidationConfig, Validator

    sets = read_api_sets(corpus / "api_sets.txt")
    eval_sets, rl_sets = sets[:EVAL_SETS], sets[EVAL_SETS:]
    validator = Validator(ValidationConfig(device="cpu", workers=2))
    record, save = open_record(out, vars(args))
    sft_final = cold_start("proposer", corpus, out, cfg, args.seed, record, save)
    eval_seeds = args.eval_seeds or [args.seed]

    def evaluate(model: Path, into: dict) -> None:
        """`valid_share` for each evaluation seed not yet in `into["by_eval_seed"]`, and their mean."""
        by_seed = into.setdefault("by_eval_seed", {})
        for es in eval_seeds:
            if str(es) not in by_seed:
                by_seed[str(es)] = valid_share(model, eval_sets, validator, es)
                save()
        shares = [r["valid_share"] for r in by_seed.values()]
        into["valid_share_mean"], into["valid_share_spread"] = sum(shares) / len(shares), max(shares) - min(shares)
        save()

    evaluate(sft_final, record.setdefault("after_sft", {}))
    print("after SFT:", {k: v for k, v in record["after_sft"].items() if k != "by_eval_seed"}, flush=True)

    from kernelzero.roles.proposer import proposer_messages
    from kernelzero.trainers.config import ProposerPhaseConfig
    from kernelzero.trainers.proposer import run_proposer_phase

    settings = [(lr, s, rs) for lr in args.lr for s in args.steps for rs in args.rl_seeds or [args.seed]]
    for lr, steps, rl_seed in settings:
        key = f"lr={lr:g},mu={args.mu},steps={steps},batch={args.batch}"
        key += f",sets={args.sets}" if args.sets else ""
        key += f",seed={rl_seed}" if rl_seed != args.seed else ""
        if key in record["runs"]:
            if (out / f"rl-{key}" / "final").is_dir():  # evaluated with seeds added since
                evaluate(out / f"rl-{key}" / "final", record["runs"][key].setdefault("after", {}))
            continue
        phase = out / f"rl-{key}"
        shutil.rmtree(phase, ignore_errors=True)
        batches: list[dict] = []

        def on_rewards(rec, batches=batches) -> None:
            reasons = Counter(p.validation.reason or "valid" for p in rec.proposals)
            batches.append({"valid_share": reasons["valid"] / len(rec.proposals), "reasons": dict(reasons),
                            "reward_mean": float(rec.final.nanmean())})  # fmt: skip

        # the loop's draw: each judged batch's prompts are batch / G API sets, each asked G times
        draw = random.Random(rl_seed)
        n_sets = steps * args.batch // args.generations
        distinct = [rl_sets[draw.randrange(len(rl_sets))] for _ in range(args.sets or n_sets)]
        api_sets = [distinct[i % len(distinct)] for i in range(n_sets)]
        pc = ProposerPhaseConfig(model=str(sft_final), output_dir=str(phase), use_cpu=True, bf16=False,
                                 log_completions=False, seed=rl_seed, num_generations=args.generations,
                                 max_completion_length=512, learning_rate=lr, max_steps=steps * args.mu,
                                 per_device_train_batch_size=args.batch,
                                 grpo_overrides={"num_iterations": args.mu, "warmup_steps": 2 * args.mu})  # fmt: skip
        t0 = time.monotonic()
        run_proposer_phase(pc, api_sets, validator.validate, CoinCoder(args.coder_k, args.coder_p, rl_seed),
                           prompt_fn=lambda apis: proposer_messages(apis, brief=True), on_rewards=on_rewards,
                           resume=False)  # fmt: skip
        record["runs"][key] = {"batches": batches, "seconds": round(time.monotonic() - t0, 1), "after": {}}
        evaluate(phase / "final", record["runs"][key]["after"])
        after = record["runs"][key]["after"]
        print(key, f"valid share {after['valid_share_mean']:.3f} (spread {after['valid_share_spread']:.3f})",
              [round(b["valid_share"], 2) for b in batches], flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
