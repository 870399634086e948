"""The learning study's Coder RL on CPU, with an exact-match stand-in for the judge: how far a learning rate and
GRPO's mu move a small cold-started Coder in a few steps, before device minutes are spent on a study arm.

Why a stand-in is fair here: a from-scratch Coder learns only the study writer's solutions, so on the family's tasks
a sample is correct, for practical purposes, when it *is* the writer's solution for that task (the real judge passed
all 512 of them on an H100). The stand-in is stricter than the judge (a correct variant counts as wrong), never
looser, and costs nothing, so the trainer's step is what this measures: the real `run_coder_phase` (TRL GRPO,
CA-GRPO's gate with every correct sample at speedup 1), on the study's own tokenizer, SFT path and prompts, with a
model small enough for 2 cores. Figures from it are leads for the GPU run, not results: another model size, another
judge.

    python bench/study_rl_proxy.py --corpus bench/results/study_h100_d1bb4a6.tgz --out /tmp/rl-proxy \\
        --lr 1e-4 3e-4 1e-3 --mu 2 --steps 12

Writes OUT/proxy.json: exact-match pass@1 (4 samples at `--eval-temperature`, 1 by default) on the 64 test tasks
and on 64 held-out training tasks, after SFT and after RL at each learning rate, with the training pass rate of every
judged batch.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from study_proxy_common import cold_start, copy_corpus, open_record, proxy_config  # noqa: E402

from kernelzero.study import family  # noqa: E402
from kernelzero.study.config import SFT_KEEP, SFT_SCHEDULERS  # noqa: E402
from kernelzero.study.writer import slug, write_solution  # noqa: E402

DEVICE = "cpu"  # where the proxy trains and samples (`--device`)
EVAL_TEMPERATURE = 1.0  # the evaluations' sampling temperature (`--eval-temperature`)


def _norm(code: str | None) -> str:
    return "\n".join(line.rstrip() for line in (code or "").strip().splitlines())


class ExactMatchJudge:
    """judge_fn(task, source, backend) -> Verdict: ok when `source` is the writer's solution of the task."""

    def __init__(self, tasks):
        self.expected = {t.name: _norm(write_solution(t)) for t in tasks}

    def verdict(self, name: str, source: str | None):
        from kernelzero.judge.verdict import Verdict

        if _norm(source) == self.expected[name]:
            return Verdict(status="ok", correct=True, timed=True, speedup_eager=1.0, speed_noise=0.0, task=name)
        return Verdict.fail("incorrect", "not the writer's solution", task=name)

    async def __call__(self, task, source, backend):
        return self.verdict(task.name, source)


def rl_task_pool(kind: str, corpus: list, fresh: list) -> list:
    """The RL phase's tasks: `fresh` (training tasks no SFT example holds), those of them whose composition, the
    writer's function name, no `corpus` task has (`novel`: a test task's name is always new), or `corpus` itself."""
    named = {slug(t) for t in corpus}
    return {"fresh": fresh, "novel": [t for t in fresh if slug(t) not in named], "corpus": corpus}[kind]


def solved(model_dir: Path, tasks, judge: ExactMatchJudge, samples: int, seed: int) -> list[int]:
    """How many of `samples` completions (at `EVAL_TEMPERATURE`) of each task are exact-match correct (sampled on
    `DEVICE`)."""
    from kernelzero.generation import load_policy
    from kernelzero.generation.base import SamplingConfig
    from kernelzero.roles.coder import coder_messages, parse_coder_completion

    policy = load_policy(str(model_dir), device=DEVICE, batch_size=64 if DEVICE == "cpu" else 256)
    chats = [coder_messages(t.source, "triton", brief=True) for t in tasks]
    outs = policy.generate(chats, samples, SamplingConfig(temperature=EVAL_TEMPERATURE, max_new_tokens=512, seed=seed))
    return [sum(judge.verdict(t.name, getattr(parse_coder_completion(c.text), "code", None)).correct
                for c in completions)  # a ParseFailure has no code
            for t, completions in zip(tasks, outs, strict=True)]  # fmt: skip


def pass_at_1(model_dir: Path, tasks, judge: ExactMatchJudge, samples: int, seed: int, by_size: dict | None = None
              ) -> float:  # fmt: skip
    """Exact-match pass@1 over `tasks` (`samples` each at `EVAL_TEMPERATURE`); `by_size`, if given, gets it per
    number of APIs in a task (2: pairs, 3: triples)."""
    hits: dict[int, list[int]] = {}  # APIs per task -> [correct, samples]
    for t, k in zip(tasks, solved(model_dir, tasks, judge, samples, seed), strict=True):
        h = hits.setdefault(len(t.apis), [0, 0])
        h[0] += k
        h[1] += samples
    if by_size is not None:
        by_size.update({str(k): round(a / n, 4) for k, (a, n) in sorted(hits.items())})
    return sum(a for a, _ in hits.values()) / (len(tasks) * samples)


def pass_at_k(counts: list[int], n: int, k: int) -> float:
    """The unbiased pass@k estimate (Chen et al., 2021) over tasks with `counts` correct of `n` samples each."""
    return sum(1 - math.comb(n - c, k) / math.comb(n, k) for c in counts) / len(counts)


def headroom(model_dir: Path, tasks, judge: ExactMatchJudge, samples: int, seed: int) -> dict[str, float]:
    """pass@k on `tasks` for k = 1, 2, 4, ... up to `samples`: how far RL, which sharpens what the model already
    samples, could raise pass@1 (towards pass@k) without teaching the model anything new."""
    counts = solved(model_dir, tasks, judge, samples, seed)
    ks = sorted({2**i for i in range(samples.bit_length())} | {samples})
    return {str(k): round(pass_at_k(counts, samples, k), 4) for k in ks}


def learnable(model_dir: Path, pool, judge: ExactMatchJudge, samples: int, seed: int) -> tuple[list, dict]:
    """The tasks of `pool` the SFT model solves in some but not all of `samples` tries: what a Proposer rewarded for
    tasks solved about half the time would hand the Coder, where every group of rollouts has a reward spread (an
    all-correct or all-wrong group has no advantage to learn from). Returns them and the screen's counts."""
    counts = solved(model_dir, pool, judge, samples, seed)
    kept = [t for t, k in zip(pool, counts, strict=True) if 0 < k < samples]
    return kept, {"screened": len(pool), "samples": samples, "kept": len(kept),
                  "all_correct": sum(k == samples for k in counts), "none_correct": sum(k == 0 for k in counts)}


def resume_batches(phase: Path, mu: int) -> tuple[list[float], int | None]:
    """Where an RL phase cut part-way (a device call's time limit) goes on: the optimizer step of its last checkpoint
    (None: none, start over) and the pass rates of the judged batches that checkpoint has fully trained on (one
    batch per `mu` steps; a batch generated after it is judged again on resume)."""
    from transformers.trainer_utils import get_last_checkpoint

    last = get_last_checkpoint(str(phase)) if phase.is_dir() else None
    if last is None or not (phase / "batches.json").is_file():
        shutil.rmtree(phase, ignore_errors=True)
        return [], None
    step = int(Path(last).name.split("-")[-1])
    return json.loads((phase / "batches.json").read_text())[: step // mu], step


def scores(model_dir: Path, test, held_out, judge: ExactMatchJudge, seed: int) -> dict:
    """Pass@1 of `model_dir` on the test and held-out training tasks (4 samples each), and both per number of APIs."""
    sizes: dict[str, dict] = {"test": {}, "held_out_train": {}}
    return {"test": pass_at_1(model_dir, test, judge, 4, seed, sizes["test"]),
            "held_out_train": pass_at_1(model_dir, held_out, judge, 4, seed, sizes["held_out_train"]),
            "by_apis": sizes}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", required=True, help="a study folder or pack holding a finished corpus")
    ap.add_argument("--out", required=True)
    ap.add_argument("--lr", type=float, nargs="+", default=[1e-4, 3e-4, 1e-3])
    ap.add_argument("--mu", type=int, default=2, help="GRPO's mu: updates per judged batch")
    ap.add_argument("--steps", type=int, default=12, help="judged batches per learning rate")
    ap.add_argument("--batch", type=int, default=32, help="rollouts per judged batch")
    ap.add_argument("--generations", type=int, default=8, help="group size G")
    ap.add_argument("--rl-tasks", choices=("fresh", "novel", "corpus", "learnable"), default="fresh",
                    help="fresh: training tasks after the corpus's (the study's loop_tasks); novel: those of them "
                    "whose composition (the writer's function name) no corpus task has, as no test task has; corpus: "
                    "the SFT corpus's own tasks (what the first H100 run trained on); learnable: the fresh tasks "
                    "the SFT model solves in some but not all of --screen-samples tries")  # fmt: skip
    ap.add_argument("--corpus-triples", type=int, default=None,
                    help="the SFT corpus keeps only its first N 3-API tasks (0: pairs only), so 3-API chains are a "
                    "skill SFT barely teaches and the loop's tasks (half triples) ask of RL; default all")  # fmt: skip
    ap.add_argument("--rl-apis", type=int, choices=(2, 3), default=None,
                    help="RL only on the pool's tasks of this many APIs (3: the triples a --corpus-triples corpus is "
                    "short of); default all")  # fmt: skip
    ap.add_argument("--screen-samples", type=int, default=8,
                    help="with --rl-tasks learnable: completions of each fresh task the SFT model is screened with")
    ap.add_argument("--rl-pool", type=int, default=None, metavar="N",
                    help="RL on the first N tasks of the pool only (each drawn about batch * steps / G / N times), "
                    "their pass@1 (8 samples) measured before and after: can the phase fit tasks it sees again and "
                    "again, whatever it does on new ones")  # fmt: skip
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--sft-max-steps", type=int, default=1500)
    ap.add_argument("--sft-patience", type=int, default=4,
                    help="validation-loss evaluations (every 50 steps) without a 1%% improvement that stop SFT")
    ap.add_argument("--sft-scheduler", default="constant_with_warmup", choices=SFT_SCHEDULERS,
                    help="SFT's learning-rate schedule after warm-up (cosine: to 0 at --sft-max-steps)")
    ap.add_argument("--sft-keep", default="best", choices=SFT_KEEP,
                    help="the SFT weights RL starts from: the lowest validation loss (stopped by the plateau rule), "
                    "or the last of --sft-max-steps")  # fmt: skip
    ap.add_argument("--sft-lr", type=float, default=None, help="SFT's learning rate (default: the proxy's 2e-3)")
    ap.add_argument("--sft-only", action="store_true", help="stop after SFT and its pass@1 (no RL phase)")
    ap.add_argument("--headroom", type=int, default=0, metavar="N",
                    help="test pass@k for k up to N (N samples a task) of the SFT's weights and of every RL phase "
                    "already in --out (with --sft-only: no new RL phase): what RL could reach by sharpening alone")
    ap.add_argument("--seed", type=int, default=0, help="the models' init and SFT")
    ap.add_argument("--device", default="cpu", choices=("cpu", "cuda"),
                    help="where SFT, RL and sampling run: cuda measures model sizes the 2 cores cannot train in a "
                    "session (a GPU's random streams differ from the CPU's: its figures pair with its own runs)")
    ap.add_argument("--train-tasks", type=int, default=512,
                    help="the Coder's SFT corpus: the family's first N training tasks (above the pack's 512, the "
                    "writer's solutions unjudged); the RL tasks are the 512 after them")  # fmt: skip
    ap.add_argument("--rl-seeds", type=int, nargs="+", default=None,
                    help="seeds of the RL phase and of its evaluation's sampling (default: --seed); several give the "
                    "spread the study's seeds would show with one SFT")  # fmt: skip
    ap.add_argument("--scheduler", default="linear", choices=("linear", "constant_with_warmup", "cosine"),
                    help="the RL phase's learning-rate schedule (TRL's default: linear decay to 0 over the phase)")
    ap.add_argument("--kl-beta", type=float, default=0.0,
                    help="TRL's beta: the KL penalty to the SFT weights (0, the default: no reference model); keeps a "
                    "sharp SFT policy from drifting on the few groups that carry a signal")  # fmt: skip
    ap.add_argument("--temperature", type=float, default=1.0,
                    help="the rollouts' sampling temperature (the evaluation's is --eval-temperature): above 1, a "
                    "nearly deterministic SFT policy's groups differ more, so more of them carry a reward spread; "
                    "below 1, fewer rollouts carry a slip from the tail of the vocabulary")  # fmt: skip
    ap.add_argument("--eval-temperature", type=float, default=1.0,
                    help="the evaluations' (and the screen's) sampling temperature; a figure measured at another "
                    "than 1 is kept under its own name (after_sft@0.7, a run key's eval_t=0.7), so one folder holds "
                    "both")  # fmt: skip
    args = ap.parse_args(argv)
    out = Path(args.out)
    corpus = copy_corpus(args.corpus, out, args.train_tasks, args.corpus_triples)
    cfg = replace(proxy_config(args.sft_max_steps, args.hidden, args.layers, args.train_tasks),
                  sft_patience=args.sft_patience, sft_scheduler=args.sft_scheduler, sft_keep=args.sft_keep)
    if args.sft_lr is not None:
        cfg = replace(cfg, sft_lr=args.sft_lr)
    global DEVICE, EVAL_TEMPERATURE
    DEVICE, EVAL_TEMPERATURE = args.device, args.eval_temperature
    cfg = replace(cfg, device=args.device)
    train = family.train_tasks(cfg.train_tasks + cfg.loop_tasks, config=cfg.family)
    loop, test = train[cfg.train_tasks :], family.test_tasks(64, config=cfg.family)
    judge = ExactMatchJudge(train + test)
    record, save = open_record(out, vars(args))
    sft_final = cold_start("coder", corpus, out, cfg, args.seed, record, save)
    held_out = loop[-64:]  # never drawn by the RL phases below (they take the first tasks of `loop`)
    at = "" if args.eval_temperature == 1.0 else f"@{args.eval_temperature:g}"  # the evaluations' temperature, if not 1
    if f"after_sft{at}" not in record:
        record[f"after_sft{at}"] = scores(sft_final, test, held_out, judge, args.seed)
        save()
    for rs in args.rl_seeds or []:  # the same SFT weights sampled with each RL seed: the spread sampling alone gives
        by_seed = record.setdefault(f"after_sft_by_seed{at}", {})
        if str(rs) not in by_seed:
            sizes = {}
            by_seed[str(rs)] = {"test": pass_at_1(sft_final, test, judge, 4, rs, sizes), "test_by_apis": sizes}
            save()
    print(f"after SFT{at}:", record[f"after_sft{at}"], record.get(f"after_sft_by_seed{at}", ""), flush=True)
    if args.headroom:  # the SFT's weights and every RL phase's this folder holds
        heads = record.setdefault(f"headroom{at}", {})
        for name, path in {"sft": sft_final, **{k: out / f"rl-{k}" / "final" for k in record["runs"]}}.items():
            if name not in heads and path.is_dir():
                heads[name] = headroom(path, test, judge, args.headroom, 2000 + args.seed)
                save()
                print(f"test pass@k, {name}:", heads[name], flush=True)
    if args.sft_only:
        return 0

    from kernelzero.rewards.config import GateConfig
    from kernelzero.trainers.coder import coder_prompt, run_coder_phase
    from kernelzero.trainers.config import CoderPhaseConfig

    fresh = loop[: len(loop) - 64]
    if args.rl_tasks == "learnable":  # screened once per folder: the SFT's weights do not change
        if f"screen{at}" not in record:
            kept, screen = learnable(sft_final, fresh, judge, args.screen_samples, 1000 + args.seed)
            record[f"screen{at}"] = {**screen, "names": [t.name for t in kept]}
            save()
        screen = record[f"screen{at}"]
        print("screen:", {k: v for k, v in screen.items() if k != "names"}, flush=True)
        names = set(screen["names"])
        pool = [t for t in fresh if t.name in names]
    else:
        pool = rl_task_pool(args.rl_tasks, train[: cfg.train_tasks], fresh)
    pool = [t for t in pool if args.rl_apis in (None, len(t.apis))][: args.rl_pool]
    rl_tasks = [t.task() for t in pool]
    if args.rl_pool and f"rl_pool_before{at}" not in record:
        record[f"rl_pool_before{at}"] = pass_at_1(sft_final, pool, judge, 8, args.seed)
        save()
    print(f"RL tasks ({args.rl_tasks}): {len(rl_tasks)}", flush=True)
    for lr, rl_seed in [(lr, rs) for lr in args.lr for rs in (args.rl_seeds or [args.seed])]:
        key = f"lr={lr:g},mu={args.mu},steps={args.steps}" + (f",{args.rl_tasks}" if args.rl_tasks != "fresh" else "")
        key += f",{args.scheduler}" if args.scheduler != "linear" else ""
        key += f",apis={args.rl_apis}" if args.rl_apis else ""
        key += f",pool={args.rl_pool}" if args.rl_pool else ""
        key += f",kl={args.kl_beta:g}" if args.kl_beta else ""
        key += f",t={args.temperature:g}" if args.temperature != 1.0 else ""
        key += f",eval_t={args.eval_temperature:g}" if at else ""
        key += f",batch={args.batch}" if args.batch != 32 else ""
        key += f",G={args.generations}" if args.generations != 8 else ""
        key += f",seed={rl_seed}" if args.rl_seeds else ""
        if key in record["runs"]:
            continue
        phase = out / f"rl-{key}"
        batches, resumed = resume_batches(phase, args.mu)  # the training pass rate of each judged batch

        def on_rewards(rec, batches=batches, phase=phase) -> None:
            batches.append(sum(v.correct for v in rec.verdicts) / len(rec.verdicts))
            phase.mkdir(parents=True, exist_ok=True)
            (phase / "batches.json").write_text(json.dumps(batches))

        pc = CoderPhaseConfig(model=str(sft_final), output_dir=str(phase), use_cpu=DEVICE == "cpu", bf16=False,
                              log_completions=False, seed=rl_seed, num_generations=args.generations,
                              max_completion_length=512, learning_rate=lr, max_steps=args.steps * args.mu,
                              per_device_train_batch_size=args.batch, gate=GateConfig(alpha=0.5, beta=0.1),
                              kl_beta=args.kl_beta, temperature=args.temperature,
                              grpo_overrides={"num_iterations": args.mu, "warmup_steps": 2 * args.mu,
                                              "lr_scheduler_type": args.scheduler})  # fmt: skip
        t0 = time.monotonic()
        run_coder_phase(pc, rl_tasks, judge, prompt_fn=lambda t, b: coder_prompt(t, b, brief=True),
                        on_rewards=on_rewards,
                        resume=resumed is not None)  # fmt: skip
        record["runs"][key] = {"train_pass_by_batch": batches, "seconds": round(time.monotonic() - t0, 1),
                               **({"resumed_at_step": resumed} if resumed is not None else {}),
                               **scores(phase / "final", test, held_out, judge, rl_seed)}  # fmt: skip
        if args.rl_pool:
            record["runs"][key]["rl_pool"] = pass_at_1(phase / "final", pool, judge, 8, rl_seed)
        save()
        print(key, json.dumps(record["runs"][key]), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
