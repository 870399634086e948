"""The learning study's driver: corpus -> models -> SFT cold start -> eval -> co-evolution rounds -> eval per round.

Every stage calls the project's own code path: the real judge (`JudgePool`), the task validator, `run_sft`, the eval
loop (`eval.evaluate.run_eval` and `eval.report.summarize`, which compute pass@k and fast_p), and the co-evolution
loop of `kernelzero train` (`loop.coevolve.CoEvolution` with a `RunConfig`). The study only chooses the inputs (the
family's tasks and API sets, the from-scratch models, the arm's reward knobs) and reads the outputs.

Layout of `--out` (each stage skips itself when its output is there, so an invocation killed at any point, or a
later invocation for another arm or seed, resumes; `stages.jsonl` says what each invocation ran or skipped; a folder
brought from another machine without its weights, `kernelzero study --pack`, resumes too: `study.weights`):

    corpus/        corpus.jsonl + dataset/ (Coder pairs judged ok), proposer.jsonl (valid tasks), verdicts.jsonl,
                   train_tasks.jsonl (the corpus's tasks), test_tasks.jsonl
    loop_tasks.jsonl  the training-pair tasks after the corpus's, which fill the Coder phases
    seed-S/models/ tokenizer and both roles' initial weights
    seed-S/sft/ROLE/  pairs.jsonl (the SFT data, split train/val), checkpoints, final/ (the best by validation loss)
    seed-S/eval-sft/  verdicts.jsonl and summary.json of the cold-started Coder on the test tasks
    seed-S/proposer-eval-sft/  proposals.jsonl and summary.json: the cold-started Proposer's valid share on fixed
                      training API sets; seed-S/ARM/proposer-eval-round-R/ the same after round R
    seed-S/ARM/run/   a `kernelzero train` run directory; seed-S/ARM/eval-round-R/ the Coder after round R;
                      seed-S/ARM/start.json the digests of the SFT weights the arm started from
    seed-S/retired/   evaluations and runs set aside because their weights were gone (`study.weights`)
    summary.json, report.md, plots/   over every seed and arm found under --out (`study.report`)
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import time
from collections.abc import Callable
from pathlib import Path

from kernelzero.curriculum.proposals import ProposeSummary, propose, read_api_sets
from kernelzero.curriculum.validate import ValidationConfig, Validator
from kernelzero.eval.evaluate import run_eval
from kernelzero.eval.report import write_report
from kernelzero.generation import load_policy
from kernelzero.generation.base import SamplingConfig
from kernelzero.judge import JudgeOptions
from kernelzero.judge.verdict import Verdict
from kernelzero.loop.coevolve import CoEvolution
from kernelzero.loop.config import LoopConfig, RunConfig
from kernelzero.loop.runlog import cut_torn_tail, read_records
from kernelzero.rewards.config import GateConfig
from kernelzero.study import family
from kernelzero.study.config import ARMS, StudyConfig, pin_config
from kernelzero.study.corpus import BACKEND, build_corpus, check_corpus
from kernelzero.study.models import build_models, tokenizer_texts
from kernelzero.study.report import write_study_report
from kernelzero.study.sft import sft_role
from kernelzero.study.weights import retire, run_needs_lost_weights, weights_digest
from kernelzero.tasks import read_corpus, write_corpus
from kernelzero.trainers.config import CoderPhaseConfig, ProposerPhaseConfig

STAGES_LOG = "stages.jsonl"
PROPOSER_EVAL_SFT = "proposer-eval-sft"
"""The stage and folder (`seed-S/proposer-eval-sft`) of the Proposer's evaluation after SFT."""
LOOP_TASKS = "loop_tasks.jsonl"
"""The Coder phases' training-pair tasks (`StudyConfig.loop_tasks`), shared by every seed and arm."""
LOOP_API_SETS = "loop_api_sets.txt"
"""The loop's API sets when they skip the Proposer evaluation's (`StudyConfig.loop_skips_eval_sets`)."""


class Study:
    """One invocation: a study config, an output folder, an arm and a seed. `run()` does every stage not yet done."""

    def __init__(self, config: StudyConfig, out: str | Path, *, arm: str = "main", seed: int = 0,
                 say: Callable[[str], None] = print):  # fmt: skip
        if arm not in ARMS:
            raise ValueError(f"arm must be one of {', '.join(ARMS)}, got {arm!r}")
        # absolute: the loop pins its config (model paths among it), so a resume from another cwd must match
        self.config, self.out, self.arm, self.seed, self.say = config, Path(out).resolve(), arm, seed, say
        self.seed_dir = self.out / f"seed-{seed}"
        self.arm_dir = self.seed_dir / arm
        self._pool, self._pool_timed = None, True
        self.invocation = f"{time.strftime('%Y-%m-%dT%H:%M:%S')}-{os.getpid()}"

    # ------------------------------------------------------------------ plumbing
    def judge(self, timed: bool = True):
        """The study's JudgePool, timed (evaluations: fast_1) or not (the corpus: only `ok` counts there)."""
        if self._pool is not None and self._pool_timed != timed:
            self.close_judge()
        if self._pool is None:
            from kernelzero.judge.pool import JudgePool

            self._pool = JudgePool(self.judge_options(timed), workers=self.config.judge_workers,
                                   slots_per_gpu=self.config.judge_slots)  # fmt: skip
            self._pool_timed = timed
        return self._pool

    def judge_options(self, timed: bool = True) -> JudgeOptions:
        """The judge of every stage (corpus, evaluations, the loop): speed against eager only. fast_1 is against
        eager, and torch.compile of each task's reference cost 13.8 s a task (median) on the H200's corpus stage, half
        of its reference work: 192 of 1,024 tasks judged in 9 minutes. `timed=False`: correctness alone, for the
        corpus, whose pairs need only be `ok` (each timing holds the GPU alone: 1,024 tasks' timings in a row)."""
        return JudgeOptions(device=self.config.device, trials=self.config.judge_trials, compile_baseline=False,
                            timing=timed)  # fmt: skip

    def close_judge(self, kill: bool = False) -> None:
        if self._pool is not None:
            self._pool.close(kill=kill)
            self._pool = None

    def stage(self, name: str, done: Path, work: Callable[[], object]) -> None:
        """Run `work` unless `done` exists; log what happened to stages.jsonl either way."""
        start = time.monotonic()
        if done.exists():
            action = "skipped"
            self.say(f"stage {name}: done earlier ({done.relative_to(self.out)}), skipped")
        else:
            self.say(f"stage {name}: running")
            work()
            action = "ran"
        entry = {"invocation": self.invocation, "arm": self.arm, "seed": self.seed, "stage": name, "action": action,
                 "seconds": round(time.monotonic() - start, 2)}  # fmt: skip
        self.out.mkdir(parents=True, exist_ok=True)
        with (self.out / STAGES_LOG).open("a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")

    def run(self) -> dict:
        pin_config(self.out, self.config)
        try:
            corpus = self.out / "corpus"
            self.stage("corpus", corpus / "done.json", lambda: self.build_corpus(corpus))
            models = self.seed_dir / "models"
            self.stage("models", models / "proposer-init" / ".complete", lambda: self.build_models(corpus, models))
            for role in ("coder", "proposer"):
                self.stage(f"sft-{role}", self._sft_done(role), lambda role=role: self.sft(role, corpus, models))
            coder_sft = self.seed_dir / "sft" / "coder" / "final"
            eval_sft = self.seed_dir / "eval-sft"
            self.stage("eval-sft", eval_sft / "summary.json", lambda: self.evaluate(coder_sft, eval_sft))
            proposer_sft = self.seed_dir / "sft" / "proposer" / "final"
            peval_sft = self.seed_dir / PROPOSER_EVAL_SFT
            self.stage(PROPOSER_EVAL_SFT, peval_sft / "summary.json",
                       lambda: self.evaluate_proposer(proposer_sft, peval_sft))  # fmt: skip
            loop_tasks = self.out / LOOP_TASKS
            self.stage("loop-tasks", loop_tasks, lambda: self.write_loop_tasks(loop_tasks))
            run_dir = self.arm_dir / "run"
            self._retire_lost_run(run_dir)
            self.stage(f"loop-{self.arm}", run_dir / "finished.json", lambda: self.coevolve(corpus, run_dir))
            for r in range(1, self.config.rounds + 1):
                model = run_dir / "checkpoints" / f"round-{r - 1}" / "coder" / "final"
                ev = self.arm_dir / f"eval-round-{r}"
                self.stage(f"eval-round-{r}", ev / "summary.json", lambda model=model, ev=ev: self.evaluate(model, ev))
                if ARMS[self.arm].train_proposer:  # a frozen Proposer is the one evaluated after SFT
                    model = run_dir / "checkpoints" / f"round-{r - 1}" / "proposer" / "final"
                    ev = self.arm_dir / f"proposer-eval-round-{r}"
                    self.stage(f"proposer-eval-round-{r}", ev / "summary.json",
                               lambda model=model, ev=ev: self.evaluate_proposer(model, ev))  # fmt: skip
        except KeyboardInterrupt:
            self.close_judge(kill=True)  # else closing the pool waits out its running judgings
            raise
        finally:
            self.close_judge()
        summary = write_study_report(self.out, smoke=self.config.smoke)
        self.say(f"report: {self.out / 'report.md'}")
        return summary

    # ------------------------------------------------------------------ stages
    def build_corpus(self, out: Path) -> None:
        """Judge the writer's solutions of the training tasks (every verdict to verdicts.jsonl), validate the
        Proposer's cold-start tasks, and write the task lists."""
        cfg = self.config
        train = family.train_tasks(cfg.train_tasks, config=cfg.family)
        test = family.test_tasks(cfg.test_tasks, config=cfg.family)
        out.mkdir(parents=True, exist_ok=True)
        with _VerdictCache(out / "verdicts.jsonl", lambda: self.judge(timed=False), self.say) as cache:
            summary = build_corpus(train, out, cache.judge_many)
        self.close_judge()  # the evaluations judge timed
        self.say(f"  corpus: {summary.kept}/{summary.judged} writer solutions judged ok ({dict(summary.statuses)})")
        for name, status, feedback in summary.failures[:5]:
            self.say(f"    {name}: {status}: {feedback[:200]}")
        validator = Validator(ValidationConfig(device=cfg.device, workers=cfg.judge_workers))
        results = family.validate(train[: cfg.proposer_tasks], validator)
        valid = [t for t, v in zip(train, results) if v.valid]
        (out / "proposer_validation.jsonl").write_text("".join(json.dumps(v.to_dict()) + "\n" for v in results),
                                                       encoding="utf-8")  # fmt: skip
        self.say(f"  proposer set: {len(valid)}/{len(results)} family tasks pass the task validator")
        rows = [{"task_name": t.name, "task_source": t.source, "apis": list(t.apis)} for t in valid]
        (out / "proposer.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        for name in ("corpus.jsonl", "proposer.jsonl"):
            check = check_corpus(out / name)
            if not check.ok:
                raise ValueError(f"{check.path}: test pairs in {len(check.leaks)} rows")
        write_corpus([t.task() for t in train], out / "train_tasks.jsonl")
        write_corpus([t.task() for t in test], out / "test_tasks.jsonl")
        sets = list(family.TRAIN_SETS)
        random.Random(f"api-sets:{cfg.family}").shuffle(sets)
        (out / "api_sets.txt").write_text("".join(json.dumps(list(s)) + "\n" for s in sets), encoding="utf-8")
        (out / "done.json").write_text(json.dumps({"judged": summary.judged, "kept": summary.kept,
                                                   "statuses": dict(summary.statuses), "proposer_valid": len(valid),
                                                   "test_tasks": len(test)}, indent=2) + "\n")  # fmt: skip

    def write_loop_tasks(self, path: Path) -> None:
        """The training-pair tasks after the corpus's (`StudyConfig.loop_tasks`): the Coder phases' own tasks."""
        cfg = self.config
        tasks = family.train_tasks(cfg.train_tasks + cfg.loop_tasks, config=cfg.family)[cfg.train_tasks :]
        leaks = [t.name for t in tasks if family.is_test_set(t.apis)]
        if leaks:  # the family never makes one; a test pair here would be trained on and then tested
            raise ValueError(f"loop tasks holding test pairs: {', '.join(leaks[:5])}")
        write_corpus([t.task() for t in tasks], path)
        self.say(f"  loop tasks: {len(tasks)} training-pair tasks no SFT example holds")

    def build_models(self, corpus: Path, out: Path) -> None:
        rows = list(read_records(corpus / "corpus.jsonl"))
        tasks = family.train_tasks(self.config.train_tasks, config=self.config.family)
        texts = tokenizer_texts(tasks, [r["solution"] for r in rows], brief=self.config.prompts == "brief")
        paths = build_models(out, texts, self.config.models, seed=self.seed)
        self.say(f"  models: {', '.join(str(p) for p in paths.values())}")

    def _sft_done(self, role: str) -> Path:
        """The SFT stage's marker, `done.json`, after setting aside one whose weights are gone (a folder brought
        from another machine, `study.weights`): the role is then trained again and the digests compared."""
        sft = self.seed_dir / "sft" / role
        done = sft / "done.json"
        if done.is_file() and weights_digest(sft / "final") is None:
            done.replace(sft / "done.carried.json")
            self.say(f"stage sft-{role}: {sft.relative_to(self.out)} holds no weights (the folder came without "
                     "them): trained again")  # fmt: skip
        return done

    def sft(self, role: str, corpus: Path, models: Path) -> None:
        sft = self.seed_dir / "sft" / role
        carried = sft / "done.carried.json"  # the record of a training whose weights are gone (`_sft_done`)
        trained_again = carried.is_file()
        before = json.loads(carried.read_text(encoding="utf-8")).get("weights") if trained_again else None
        record = sft_role(role, corpus, models / f"{role}-init", sft, self.config, self.seed, self.say, before=before)
        if not trained_again:
            return
        reproduced = record.get("reproduced")
        self.say(f"  sft {role}: weights {record['weights']}, before {before}: reproduced {reproduced}")
        carried.unlink()
        eval_sft = self.seed_dir / "eval-sft"
        if role == "proposer":
            eval_sft = self.seed_dir / PROPOSER_EVAL_SFT
        if not reproduced and eval_sft.exists():  # done or part-way: it saw other weights
            dest = retire(eval_sft, self.seed_dir, f"it evaluated weights {before}; the {role}'s are now "
                          f"{record['weights']}")  # fmt: skip
            self.say(f"  {eval_sft.name} evaluated other weights: moved to {dest.relative_to(self.out)}")

    def _retire_lost_run(self, run_dir: Path) -> None:
        """Set aside this arm's run and evaluations when the run cannot go on without weights that are gone."""
        missing = [r for r in range(1, self.config.rounds + 1)
                   if not (self.arm_dir / f"eval-round-{r}" / "summary.json").is_file()]  # fmt: skip
        if not run_needs_lost_weights(run_dir, missing):
            return
        dest = retire(self.arm_dir, self.seed_dir, "the run's weights were gone before it was done and evaluated")
        self.say(f"stage loop-{self.arm}: its weights are gone (the folder came without them): moved to "
                 f"{dest.relative_to(self.out)}, the arm runs again from its start")  # fmt: skip

    def _eval_policy(self, model: Path) -> tuple[_TimedPolicy, SamplingConfig]:
        """Both evaluations' policy (its generating timed) and sampling: the evaluation's temperature, this seed."""
        cfg = self.config
        policy = _TimedPolicy(load_policy(str(model), device=_torch_device(cfg.device), batch_size=cfg.eval_batch))
        return policy, SamplingConfig(temperature=cfg.eval_temperature, max_new_tokens=cfg.max_new_tokens,
                                      seed=self.seed)  # fmt: skip

    def _eval_meta(self, model: Path, seconds: float, policy: _TimedPolicy) -> dict:
        """What an evaluation's summary says of itself: the weights it judged and where its time went."""
        return {"model": str(model), "arm": self.arm, "seed": self.seed, "weights": weights_digest(model),
                "seconds": round(seconds, 1), "generate_s": round(policy.seconds, 1)}

    def evaluate(self, model: Path, out: Path) -> None:
        """pass@1 and fast_1 of a Coder on the test tasks: `run_eval` (resumes from `out`) and the eval report."""
        cfg = self.config
        tasks = read_corpus(self.out / "corpus" / "test_tasks.jsonl")
        policy, sampling = self._eval_policy(model)
        start = time.monotonic()
        pool = self.judge()
        # every pending task's samples in one generate and one judging batch, each verdict written as it comes
        records = run_eval(tasks, policy, backend=BACKEND, judge_fn=pool.judge, out_dir=out,
                           samples=cfg.eval_samples, sampling=sampling, judge_many=pool.imap,
                           brief=cfg.prompts == "brief")  # fmt: skip
        seconds = time.monotonic() - start
        summary = write_report(out, records, [1], self._eval_meta(model, seconds, policy), plots=False)
        row = summary["rows"][-1]
        self.say(f"  {out.name}: pass@1 {row['pass']['1']:.3f} over {row['tasks']} test tasks ({seconds:.0f} s, "
                 f"{policy.seconds:.0f} s of it generating)")  # fmt: skip

    def evaluate_proposer(self, model: Path, out: Path) -> None:
        """The Proposer's valid share on fixed training API sets (`StudyConfig.proposer_eval_sets`, the first of
        `corpus/api_sets.txt`): `proposer_eval_samples` tasks for each at the evaluation's temperature
        (`curriculum.proposals.propose`), each validated in the sandbox on its own (the loop's within-batch duplicate
        rule guards its pool, not what a task is worth here)."""
        cfg = self.config
        if weights_digest(model) is None:  # the folder came without this round's weights
            self.say(f"  {out.name}: no weights in {model}: not evaluated")
            return
        sets = read_api_sets(self.out / "corpus" / "api_sets.txt")[: cfg.proposer_eval_sets]
        policy, sampling = self._eval_policy(model)
        start = time.monotonic()
        validator = Validator(ValidationConfig(device=cfg.device, workers=cfg.judge_workers))
        # one generate call: each row its own draw
        prompts = [s for s in sets for _ in range(cfg.proposer_eval_samples)]
        proposals = propose(policy, prompts, validator, sampling=sampling, brief=cfg.prompts == "brief",
                            within_batch=False)  # fmt: skip
        rows = [p.to_dict() for p in proposals]
        reasons = ProposeSummary(proposals).counts
        seconds = time.monotonic() - start
        out.mkdir(parents=True, exist_ok=True)
        (out / "proposals.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        summary = {"valid_share": reasons["valid"] / len(rows), "sets": len(sets),
                   "samples_per_set": cfg.proposer_eval_samples, "reasons": dict(reasons),
                   "meta": self._eval_meta(model, seconds, policy)}  # fmt: skip
        (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")  # the stage's mark
        self.say(f"  {out.name}: {reasons['valid']}/{len(rows)} valid tasks ({dict(reasons)}; {seconds:.0f} s)")

    def run_config(self, corpus: Path) -> RunConfig:
        """The `kernelzero train` config of this arm: the cold-started models, the family's training API sets, the
        arm's gate and Proposer switch."""
        cfg, arm = self.config, ARMS[self.arm]
        on_cpu = _torch_device(cfg.device) == "cpu"
        mu = cfg.rl_iterations  # the trainers count optimizer steps: mu per judged batch
        common = {"use_cpu": on_cpu, "bf16": False, "log_completions": False, "seed": self.seed,
                  "num_generations": cfg.rl_generations, "max_completion_length": cfg.max_new_tokens,
                  "learning_rate": cfg.rl_lr, "temperature": cfg.eval_temperature,  # the study samples at one
                  "grpo_overrides": {"warmup_steps": cfg.rl_warmup_steps * mu, "num_iterations": mu}}  # fmt: skip
        coder = CoderPhaseConfig(model=str(self.seed_dir / "sft" / "coder" / "final"), max_steps=cfg.coder_steps * mu,
                                 per_device_train_batch_size=cfg.coder_batch,
                                 gate=GateConfig(alpha=arm.alpha, beta=arm.beta), **common)  # fmt: skip
        proposer = ProposerPhaseConfig(model=str(self.seed_dir / "sft" / "proposer" / "final"),
                                       max_steps=cfg.proposer_steps * mu,
                                       per_device_train_batch_size=cfg.proposer_batch, **common)  # fmt: skip
        sets = self.out / LOOP_API_SETS if cfg.loop_skips_eval_sets else corpus / "api_sets.txt"
        loop = LoopConfig(api_sets=str(sets),
                          api_sets_per_round=cfg.proposer_sets_per_round or cfg.api_sets_per_round,
                          tasks_per_round=cfg.api_sets_per_round, coder_k=cfg.coder_k,
                          hard_per_round=cfg.api_sets_per_round // 4, coder_tasks_max=4 * cfg.api_sets_per_round,
                          seed_tasks=str(self.out / LOOP_TASKS), max_new_tokens=cfg.max_new_tokens,
                          temperature=cfg.eval_temperature,
                          train_proposer=arm.train_proposer,
                          # training-pair tasks SFT never saw fill each Coder phase: a from-scratch Proposer writes
                          # few valid tasks (a CPU rehearsal: 0 of 8 in two rounds), and without them round 1's Coder
                          # phase trained all its steps on the 2 hard tasks recycled from round 0
                          seed_tasks_always=True)  # fmt: skip
        return RunConfig(seed=self.seed, rounds=cfg.rounds, backend=BACKEND, coder=coder, proposer=proposer,
                         loop=loop, validation=ValidationConfig(device=cfg.device, workers=cfg.judge_workers),
                         judge=self.judge_options(),
                         judge_workers=cfg.judge_workers, judge_slots=cfg.judge_slots, tensorboard=False,
                         prompts=cfg.prompts)  # fmt: skip

    def write_loop_api_sets(self, corpus: Path) -> None:
        """With `loop_skips_eval_sets`, the file the loop reads its rounds' API sets from (`run_config`): the corpus's
        past the Proposer evaluation's, in order, written once (every seed and arm reads the same)."""
        path, sets = self.out / LOOP_API_SETS, corpus / "api_sets.txt"
        if not self.config.loop_skips_eval_sets or path.is_file():
            return
        lines = sets.read_text(encoding="utf-8").splitlines(keepends=True)[self.config.proposer_eval_sets :]
        if not lines:
            raise ValueError(f"{sets}: no API sets past the Proposer evaluation's {self.config.proposer_eval_sets}")
        path.write_text("".join(lines), encoding="utf-8")

    def coevolve(self, corpus: Path, run_dir: Path) -> None:
        self.close_judge()  # the loop starts its own pool: two idle pools would hold two sets of GPU workers
        start = self.arm_dir / "start.json"
        if not start.is_file():  # the weights this arm starts from, for the report (`study.weights`)
            self.arm_dir.mkdir(parents=True, exist_ok=True)
            digests = {role: weights_digest(self.seed_dir / "sft" / role / "final") for role in ("coder", "proposer")}
            start.write_text(json.dumps(digests) + "\n", encoding="utf-8")
        self.write_loop_api_sets(corpus)
        state = CoEvolution(self.run_config(corpus), run_dir, say=lambda m: self.say("  " + m)).run()
        (run_dir / "finished.json").write_text(json.dumps({"rounds": state.round, "models": state.models}) + "\n")


class _TimedPolicy:
    """A policy whose `generate` calls add up their wall time in `seconds` (an evaluation's generating, apart from
    its judging: where a study's device minutes go)."""

    def __init__(self, policy):
        self.policy, self.seconds = policy, 0.0

    def generate(self, *args, **kwargs):
        start = time.monotonic()
        try:
            return self.policy.generate(*args, **kwargs)
        finally:
            self.seconds += time.monotonic() - start

    def __getattr__(self, name: str):
        return getattr(self.policy, name)


class _VerdictCache:
    """The corpus stage's judge: every verdict appended to `path` as it arrives (in request order, all requests in
    flight at once: no batch waits for its slowest before the next starts), and verdicts already there (same task name
    and solution) reused, so a corpus stage killed after an hour of judging loses only what was not yet written."""

    CHUNK = 64  # verdicts between progress lines

    def __init__(self, path: Path, judge: Callable[[], object], say: Callable[[str], None]):
        self.path, self.judge, self.say = path, judge, say
        self.known = {}
        cut_torn_tail(path)  # a stage killed mid-append: its last verdict is judged again
        for row in read_records(path):
            self.known[(row["task"], row["solution_sha"])] = Verdict.from_dict(row["verdict"])
        self.log = path.open("a", encoding="utf-8")

    def __enter__(self) -> _VerdictCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.log.close()

    def judge_many(self, requests):
        keys = [(task.name, hashlib.sha256(source.encode()).hexdigest()) for task, source, _ in requests]
        todo = [i for i, k in enumerate(keys) if k not in self.known]
        if len(todo) < len(requests):
            self.say(f"  corpus: {len(requests) - len(todo)} verdict(s) reused from {self.path.name}")
        verdicts = self.judge().imap([requests[i] for i in todo]) if todo else iter(())
        for n, (i, v) in enumerate(zip(todo, verdicts, strict=True), 1):
            self.known[keys[i]] = v
            row = {"task": keys[i][0], "solution_sha": keys[i][1], "phase": "corpus", "verdict": v.to_dict()}
            self.log.write(json.dumps(row) + "\n")
            self.log.flush()
            if n % self.CHUNK == 0 or n == len(todo):
                self.say(f"  corpus: {n}/{len(todo)} judged")
        return [self.known[k] for k in keys]


def _torch_device(device: str) -> str:
    if device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


__all__ = ["PROPOSER_EVAL_SFT", "STAGES_LOG", "Study"]
