"""The co-evolution loop behind `kernelzero train`: rounds of Proposer phase -> task batch -> Coder phase -> frontier,
each unit of work committed to the run directory so that a killed run resumes where it stopped.

One round r is four units, run in order and each recorded in `state.json` when it completes:
  r{r}.proposer  sample API sets; GRPO on the Proposer (frontier reward r_P over l(m) of the *frozen* Coder);
                 every proposal -> tasks.jsonl, every l(m) sample -> verdicts.jsonl
  r{r}.tasks     the trained Proposer writes one task per API set; each is validated in the sandbox; valid ones get
                 k frozen-Coder samples (l(m)) and join the pool; hard tasks are recycled; the Coder's task list is
                 fixed (seed tasks shipped in the package when the pool gives none, and the loop says so)
  r{r}.coder     CA-GRPO on that list, the Proposer unused; every rollout -> verdicts.jsonl
  r{r}.frontier  the round's Coder verdicts are recorded in the pool (frontier statistics, hard pool); next round.
                 They come from the Coder unit in memory, or from verdicts.jsonl when that unit ran (or began) in
                 an earlier process
Models: round r's phases start from round r-1's `final/` weights of the same role (`checkpoints/round-r/<role>/`).

Resume (see `runlog` for the file guarantees): `state.json` (atomic) holds the completed units, the task pool's
state_dict, each round's API sets and Coder task list, and the current model of each role; a unit that was not
committed is re-run from that state. Inside a phase TRL resumes from the phase's last *complete* checkpoint (a
checkpoint torn by a kill is deleted first: transformers would otherwise pick it). Records are keyed
(round, phase, step, index) and appended once: the re-run of a unit, or the re-generation of the step that was in
flight, skips keys already written. With deterministic hardware the re-run reproduces the lost work exactly (TRL
restores its RNG state from the checkpoint; every other draw is seeded from (seed, round)); otherwise the records
keep the first attempt.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import math
import os
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelzero.apis import SamplerConfig, load_cooccurrence, sample_api_sets
from kernelzero.curriculum.frontier import api_rates, pair_rates
from kernelzero.curriculum.pool import TaskPool
from kernelzero.curriculum.proposals import (
    ProposeSummary,
    coder_samples,
    measure,
    propose,
    read_api_sets,
    reward_batch,
)
from kernelzero.curriculum.validate import Validator
from kernelzero.generation import load_policy
from kernelzero.generation.base import SamplingConfig
from kernelzero.loop.checkpoints import (
    checkpoint_fault,
    clean_torn_checkpoints,
    export_final,
    finished_checkpoint,
    quiet_trainer_prints,
)
from kernelzero.loop.config import RunConfig, config_from_dict, outcome_dict
from kernelzero.loop.records import TASKS_FILE, VERDICTS_FILE, TaskRecord, VerdictRecord, read_verdict_records
from kernelzero.loop.runlog import Key, KeyedLog, fault, read_json, write_json_atomic
from kernelzero.rewards.proposer import mean_correct, tally
from kernelzero.roles.coder import Judged
from kernelzero.roles.proposer import proposer_messages
from kernelzero.tasks import Task, seed_tasks, task_from_record, task_to_record

logger = logging.getLogger("kernelzero.loop.coevolve")

STATE_FILE, CONFIG_FILE = "state.json", "config.json"
METRICS_FILE = "metrics.jsonl"
UNITS = ("proposer", "tasks", "coder", "frontier")
UNITS_FILE = "units.jsonl"
"""Each finished unit's wall time, a line each (`CoEvolution._time_unit`)."""


def unit_name(r: int, unit: str) -> str:
    return f"r{r}.{unit}"


@dataclass
class RunState:
    """What `state.json` holds; written atomically after every unit."""

    round: int = 0
    completed: list[str] = field(default_factory=list)
    pool: dict | None = None  # TaskPool.state_dict()
    rounds: dict[str, dict] = field(default_factory=dict)  # "r" -> {"api_sets": ..., "coder_tasks": ..., ...}
    models: dict[str, str | None] = field(default_factory=lambda: {"coder": None, "proposer": None})
    finished: bool = False

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> RunState:
        return cls(**{f.name: d[f.name] for f in dataclasses.fields(cls) if f.name in d})


class CoEvolution:
    """One run directory and the loop over it. `run()` does (or finishes) every round; `say` receives progress."""

    def __init__(self, config: RunConfig, run_dir: str | Path, *, say: Callable[[str], None] | None = None,
                 progress: Any = None, policies: dict[str, Any] | None = None):  # fmt: skip
        """policies: generation backends to use instead of a role's current weights for the loop's own sampling
        (task batch, l(m) samples), by role; for tests (a scripted Proposer). The trainers always train weights."""
        self.config = config
        self.brief = config.prompts == "brief"  # both roles' prompts (roles.coder.PROMPTS)
        # Under `accelerate launch`/torchrun every rank runs the loop: all ranks train in the phases (TRL), rank 0
        # alone runs the task batch and the frontier update and writes every file; the others wait, then re-read
        # state.json. Rank 0's records hold what TRL gathers to it (a phase's rewards) and its own l(m) samples.
        self.rank, self.world = int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
        self.is_main = self.rank == 0
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.say = say or (lambda msg: logger.info("%s", msg))
        self.progress = progress  # a rich Progress, or None
        saved = read_json(self.run_dir / CONFIG_FILE)
        if saved is None:
            if self.is_main:
                write_json_atomic(self.run_dir / CONFIG_FILE, config.to_dict())
        elif _plain(outcome_dict(config_from_dict(saved))) != _plain(outcome_dict(config)):  # a field added since:
            # its default; the judge's workers and slots may differ (how fast, not what)
            raise ValueError(f"{self.run_dir} holds a run with a different config; resume it with --resume only")
        self.state = RunState.from_dict(read_json(self.run_dir / STATE_FILE, {}))
        self.tasks_log = KeyedLog(self.run_dir / TASKS_FILE, repair=self.is_main)
        self.verdicts_log = KeyedLog(self.run_dir / VERDICTS_FILE, repair=self.is_main)
        self.metrics_log = KeyedLog(self.run_dir / METRICS_FILE, repair=self.is_main)
        for log in (self.tasks_log, self.verdicts_log, self.metrics_log):
            if log.dropped_torn_line:
                self.say(f"resume: dropped a torn last line of {log.path.name}")
        self._judge = None
        self._tb = None
        self.fallback_notes: list[str] = []
        self.policies = dict(policies or {})
        # round -> the Coder phase's verdicts, kept by the unit that wrote them for the frontier unit that follows
        self._coder_verdicts: dict[int, list[VerdictRecord]] = {}

    @classmethod
    def resume(cls, run_dir: str | Path, **kw: Any) -> CoEvolution:
        saved = read_json(Path(run_dir) / CONFIG_FILE)
        if saved is None:
            raise FileNotFoundError(f"{run_dir} is not a run directory (no {CONFIG_FILE})")
        return cls(config_from_dict(saved), run_dir, **kw)

    # ------------------------------------------------------------------ plumbing
    def pool(self):
        pool = TaskPool()
        if self.state.pool is not None:
            pool.load_state_dict(self.state.pool)
        return pool

    def commit(self, unit: str, pool=None, next_round: bool = False, **round_data: Any) -> None:
        """Mark `unit` complete, with the pool and round data it produced, in one atomic write of state.json."""
        r = str(self.state.round)
        if pool is not None:
            self.state.pool = pool.state_dict()
        if round_data:
            self.state.rounds.setdefault(r, {}).update(round_data)
        self.state.completed.append(unit)
        if next_round:
            self.state.round += 1
        if self.is_main:
            write_json_atomic(self.run_dir / STATE_FILE, self.state.to_dict())
            fault(f"committed:{unit}")

    def _sync(self) -> None:
        """With several processes: wait for every rank, then take rank 0's committed state."""
        if self.world == 1:
            return
        from accelerate import PartialState

        PartialState().wait_for_everyone()
        if not self.is_main:
            self.state = RunState.from_dict(read_json(self.run_dir / STATE_FILE, {}))

    def judge(self):
        if self._judge is None:
            from kernelzero.judge.pool import JudgePool

            self._judge = JudgePool(self.config.judge, workers=self.config.judge_workers,
                                    slots_per_gpu=self.config.judge_slots)  # fmt: skip
        return self._judge

    def tensorboard(self):
        if self._tb is None and self.config.tensorboard:
            from torch.utils.tensorboard import SummaryWriter

            self._tb = SummaryWriter(str(self.run_dir / "tensorboard"))
        return self._tb

    def log_metrics(self, r: int, phase: str, step: int, values: dict[str, float]) -> None:
        clean = {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in values.items()}
        if self.metrics_log.append((r, phase, step, 0), {"round": r, "phase": phase, "step": step, **clean}):
            tb = self.tensorboard()
            if tb is not None:
                x = self._global_step(r, phase, step)
                for k, v in clean.items():
                    if isinstance(v, (int, float)) and v is not None:
                        tb.add_scalar(k, v, x)
                tb.flush()

    def _global_step(self, r: int, phase: str, step: int) -> int:
        per = {"proposer": self.config.proposer.max_steps, "coder": self.config.coder.max_steps}
        return r * per.get(phase, 1) + step

    def _advance(self, label: str, total: int | None = None) -> Callable[[], None]:
        if self.progress is None:
            return lambda: None
        job = self.progress.add_task(label, total=total)
        return lambda: self.progress.advance(job)

    def _phase_config(self, role: str, r: int):
        base = getattr(self.config, role)
        overrides = dict(base.grpo_overrides)
        overrides.setdefault("disable_tqdm", self.progress is not None)
        report_to = list(base.report_to)
        if self.config.tensorboard and "tensorboard" not in report_to:
            report_to.append("tensorboard")
        model = self.state.models.get(role) or base.model
        return dataclasses.replace(base, output_dir=str(self.run_dir / "checkpoints" / f"round-{r}" / role),
                                   model=model, seed=self.config.seed + 1000 * r + (0 if role == "proposer" else 1),
                                   report_to=report_to, grpo_overrides=overrides)  # fmt: skip

    def _policy(self, role: str):
        """The current (frozen) weights of a role as a generation backend."""
        if role in self.policies:
            return self.policies[role]
        path = self.state.models.get(role) or getattr(self.config, role).model
        device = "cpu" if getattr(self.config, role).use_cpu else "auto"
        return load_policy(path, device=device) if path else load_policy(None, device=device)

    def _sampling(self, r: int, salt: int):
        loop = self.config.loop
        return SamplingConfig(temperature=loop.temperature, max_new_tokens=loop.max_new_tokens,
                              seed=self.config.seed * 7919 + 1000 * r + salt)  # fmt: skip

    def _validator(self, pool):
        return Validator(self.config.validation, pool=pool.index, kernelbench=self.config.loop.kernelbench)

    # ------------------------------------------------------------------ the loop
    def run(self) -> RunState:
        if self.state.finished:
            self.say("the run is already complete")
            return self.state
        if self.state.completed:
            self.say(f"resuming at round {self.state.round}, after {self.state.completed[-1]}")
        try:
            while self.state.round < self.config.rounds:
                r = self.state.round
                for unit in UNITS:
                    if unit_name(r, unit) not in self.state.completed:
                        start = time.monotonic()
                        if self.is_main or unit in ("proposer", "coder"):  # the phases need every rank
                            getattr(self, f"_unit_{unit}")(r)
                        self._sync()
                        self._time_unit(r, unit, time.monotonic() - start)
            self.state.finished = True
            if self.is_main:
                write_json_atomic(self.run_dir / STATE_FILE, self.state.to_dict())
        except KeyboardInterrupt:  # the judge's workers killed: else the close below waits out their running jobs
            if self._judge is not None:
                self._judge.close(kill=True)
                self._judge = None
            raise
        finally:
            if self._judge is not None:
                self._judge.close()
                self._judge = None
            if self._tb is not None:
                self._tb.close()
                self._tb = None
        return self.state

    def _time_unit(self, r: int, unit: str, seconds: float) -> None:
        """A finished unit's wall time, said and appended to `units.jsonl` (where a round's time went: the judge,
        the phases' generation and updates; a unit resumed part-way counts from its resume)."""
        self.say(f"round {r}: {unit} done in {seconds:.1f} s")
        if self.is_main:
            with (self.run_dir / UNITS_FILE).open("a", encoding="utf-8") as f:
                f.write(json.dumps({"unit": unit_name(r, unit), "seconds": round(seconds, 2),
                                    "finished": time.strftime("%Y-%m-%dT%H:%M:%S")}) + "\n")  # fmt: skip

    # ------------------------------------------------------------------ r.proposer
    def _api_sets(self, r: int, pool) -> list[list[str]]:
        loop = self.config.loop
        if loop.api_sets is not None:
            sets = read_api_sets(loop.api_sets)
            n = loop.api_sets_per_round
            return [list(sets[(r * n + i) % len(sets)]) for i in range(n)]
        sampler = SamplerConfig(n=loop.api_sets_per_round, seed=self.config.seed * 1009 + r,
                                pair_fraction=loop.pair_fraction, cover=False)  # fmt: skip
        return [list(s) for s in sample_api_sets(load_cooccurrence(), sampler, avoid=pool.api_sets())]

    def _unit_proposer(self, r: int) -> None:
        from kernelzero.trainers.proposer import run_proposer_phase

        pool = self.pool()
        api_sets = self._api_sets(r, pool)
        if not self.config.loop.train_proposer:
            self.say(f"round {r}: Proposer phase skipped (loop.train_proposer is off: the Proposer stays frozen)")
            self.commit(unit_name(r, "proposer"), api_sets=api_sets)
            return
        cfg = self._phase_config("proposer", r)
        steps, updates = _judged_steps(cfg)
        self.say(f"round {r}: Proposer phase ({steps} step(s) x {cfg.num_generations} generations over "
                 f"{len(api_sets)} API sets{updates}; the Coder is frozen)")  # fmt: skip
        validator = self._validator(pool)
        k, backend = self.config.loop.coder_k, self.config.backend
        coder = self._policy("coder") if k > 0 else None
        lm_sampling = self._sampling(r, 1)

        def coder_samples_fn(tasks: list[Task]) -> list[list[Judged]]:
            """l(m)'s samples of a reward batch's valid tasks: one Coder `generate` (one config, so one call) and one
            judging batch. The trainer calls it once per batch, one batch after another, so the Coder policy is
            never asked from two threads at once."""
            if coder is None:
                return [[] for _ in tasks]
            return coder_samples(tasks, coder, k=k, backend=backend, judge_many=self.judge().judge_many,
                                 sampling=lm_sampling, brief=self.brief)  # fmt: skip

        advance = self._advance(f"round {r} Proposer steps", steps)

        def on_rewards(rec) -> None:
            raw = rec.raw[:, 0].tolist()
            for i, p in enumerate(rec.proposals):
                line = TaskRecord(r, "proposer", rec.step, i, p, reward_raw=_num(raw[i]))
                self.tasks_log.append(line.key, line.to_dict())
                for j, judged in enumerate(p.judged):
                    self._write_verdict((r, "proposer", rec.step, i * max(k, 1) + j), p.task(), judged)
            self.log_metrics(r, "proposer", rec.step, rec.metrics)
            valid = sum(p.valid for p in rec.proposals)
            self.say(f"  proposer step {rec.step}: {valid}/{len(rec.proposals)} valid tasks")
            advance()
            fault(f"proposer:step{rec.step}")

        self._run_phase("proposer", cfg, lambda: run_proposer_phase(
            cfg, api_sets, validator.validate_async, coder_samples_fn, on_rewards=on_rewards,
            prompt_fn=functools.partial(proposer_messages, brief=self.brief)))
        self.state.models["proposer"] = str(Path(cfg.output_dir) / "final")
        self.commit(unit_name(r, "proposer"), api_sets=api_sets)

    def _run_phase(self, role: str, cfg, run: Callable[[], Any]) -> bool:
        """Run (or finish) a phase; True when it ran from its first step in this process, so that every one of its
        batches went through `on_rewards` here (False: resumed from a checkpoint, or finished before)."""
        removed = clean_torn_checkpoints(Path(cfg.output_dir))
        if removed:
            self.say(f"resume: removed torn checkpoint(s) {', '.join(removed)} of the {role} phase")
        done = finished_checkpoint(Path(cfg.output_dir), cfg.max_steps)
        if done is not None:
            # transformers 5.24 resumed from a checkpoint at max_steps trains (and generates) one step more
            export_final(done, Path(cfg.output_dir) / "final")
            self.say(f"  {role} phase had finished ({done.name}): its final weights taken from that checkpoint")
            return False
        with checkpoint_fault(role), quiet_trainer_prints(self.progress is not None):
            result = run()
        if result.resumed_from:
            self.say(f"  {role} phase resumed from {Path(result.resumed_from).name}")
        return not result.resumed_from

    def _write_verdict(self, key: Key, task: Task, judged: Judged) -> VerdictRecord | None:
        """Append one judged solution to verdicts.jsonl; its record, or None when the key was written before (by an
        earlier attempt of the same work, whose record is the one kept)."""
        record = VerdictRecord.of(key, task, judged, self.config.backend)
        return record if self.verdicts_log.append(record.key, record.to_dict()) else None

    # ------------------------------------------------------------------ r.tasks
    def _unit_tasks(self, r: int) -> None:
        loop = self.config.loop
        pool = self.pool()
        api_sets = self.state.rounds[str(r)]["api_sets"][: loop.tasks_per_round]
        self.say(f"round {r}: the trained Proposer writes {len(api_sets)} tasks; validating them in the sandbox")
        proposer = self._policy("proposer")
        proposals = propose(proposer, api_sets, self._validator(pool), sampling=self._sampling(r, 2), brief=self.brief)
        del proposer
        valid = [p for p in proposals if p.valid]
        if valid and loop.coder_k > 0:
            coder = self._policy("coder")
            self.say(f"  judging {loop.coder_k} frozen-Coder samples on each of {len(valid)} valid tasks (l(m))")
            judge = self.judge()
            measure(proposals, coder, k=loop.coder_k, backend=self.config.backend, judge_fn=judge.judge,
                    sampling=lambda i: self._sampling(r, 3 + i), judge_many=judge.judge_many,
                    brief=self.brief)  # fmt: skip
        reward_batch(proposals, self.config.proposer.reward)
        for i, p in enumerate(proposals):
            for j, judged in enumerate(p.judged):
                self._write_verdict((r, "tasks", 0, i * loop.coder_k + j), p.task(), judged)
        for i, p in enumerate(proposals):
            line = TaskRecord(r, "tasks", 0, i, p)
            self.tasks_log.append(line.key, line.to_dict())
            fault("tasks:written")
        summary = ProposeSummary(proposals)
        hard = pool.draw_hard(loop.hard_per_round)
        for p in valid:
            pool.add(p.task())
            if p.samples:
                pool.record(p.name, p.successes or 0, p.samples)
        coder_tasks = [p.task() for p in valid] + hard
        seeds_used = False
        if not coder_tasks or loop.seed_tasks_always:
            seeds = seed_tasks(loop.seed_tasks)
            fallback = not coder_tasks and seeds
            seeds_used = bool(seeds)
            coder_tasks = fill_with_seeds(coder_tasks, seeds, loop.coder_tasks_max, f"{self.config.seed}:{r}")
            if fallback:
                where = "shipped in the package" if loop.seed_tasks == "builtin" else f"of {loop.seed_tasks}"
                some = "the" if len(coder_tasks) == len(seeds) else f"{len(coder_tasks)} of the"
                note = (f"round {r}: the Proposer produced no valid task ({len(summary.proposals)} proposed: "
                        f"{_reasons(summary.counts)}) and the pool has no hard task to recycle, so the Coder phase "
                        f"trains on {some} {len(seeds)} seed tasks {where}")  # fmt: skip
                self.say(note)
                self.fallback_notes.append(note)
            for t in coder_tasks:  # the seeds the Coder attempts (the pool tracks attempts; a seed it never
                if t.name not in pool:  # attempted would only turn a proposal like it into a duplicate)
                    pool.add(t)
        coder_tasks = coder_tasks[: loop.coder_tasks_max]
        self.log_metrics(r, "tasks", 0, {"tasks/proposed": len(summary.proposals), "tasks/valid": len(valid),
                                         "tasks/valid_share": len(valid) / max(1, len(summary.proposals)),
                                         "tasks/recycled_hard": len(hard), "tasks/coder_tasks": len(coder_tasks)})
        self.say(f"  {len(valid)}/{len(summary.proposals)} valid ({_reasons(summary.counts)}); "
                 f"{len(hard)} hard task(s) recycled; the Coder trains on {len(coder_tasks)} task(s)")  # fmt: skip
        self.commit(unit_name(r, "tasks"), pool=pool, coder_tasks=[task_to_record(t) for t in coder_tasks],
                    seed_fallback=seeds_used, valid=len(valid), proposed=len(summary.proposals))  # fmt: skip
        pool.save(self.run_dir)

    # ------------------------------------------------------------------ r.coder
    def _unit_coder(self, r: int) -> None:
        from kernelzero.trainers.coder import coder_prompt, run_coder_phase

        tasks = [task_from_record(t, "state.json", 0) for t in self.state.rounds[str(r)]["coder_tasks"]]
        if not tasks:
            self.say(f"round {r}: no Coder tasks (seed_tasks = none): Coder phase skipped")
            self._coder_verdicts[r] = []
            self.commit(unit_name(r, "coder"))
            return
        by_name = {t.name: t for t in tasks}
        cfg = self._phase_config("coder", r)
        per_step = max(1, cfg.per_device_train_batch_size * cfg.gradient_accumulation_steps // cfg.num_generations)
        if len(tasks) < per_step:  # TRL yields no batch at all from fewer prompts than a step holds: repeat them
            tasks = [tasks[i % len(tasks)] for i in range(per_step)]
        rollouts = cfg.per_device_train_batch_size * cfg.gradient_accumulation_steps
        steps, updates = _judged_steps(cfg)
        self.say(f"round {r}: Coder phase, CA-GRPO ({steps} step(s) x {rollouts} rollouts{updates}, "
                 f"{cfg.num_generations} per task, over {len(by_name)} task(s); the Proposer is frozen)")  # fmt: skip
        advance = self._advance(f"round {r} Coder steps", steps)

        written: list[VerdictRecord | None] = []

        def on_rewards(rec) -> None:
            for i, (name, judged) in enumerate(zip(rec.task_names, rec.judged, strict=True)):
                task = by_name.get(name) or Task(name=name, source="")
                written.append(self._write_verdict((r, "coder", rec.step, i), task, judged))
            self.log_metrics(r, "coder", rec.step, rec.metrics)  # the trainer's own, the gate's decisions among them
            statuses = Counter(v.status for v in rec.verdicts)
            self.say(f"  coder step {rec.step}: {sum(v.correct for v in rec.verdicts)}/{len(rec.verdicts)} correct "
                     f"({', '.join(f'{s} {n}' for s, n in statuses.most_common())})")  # fmt: skip
            advance()
            fault(f"coder:step{rec.step}")

        prompt_fn = functools.partial(coder_prompt, brief=self.brief)
        whole = self._run_phase("coder", cfg, lambda: run_coder_phase(cfg, tasks, self.judge().ajudge,
                                                                      on_rewards=on_rewards, prompt_fn=prompt_fn))
        if whole and None not in written:  # every verdict of the phase is in `written`, as the file holds it
            self._coder_verdicts[r] = [v for v in written if v is not None]
        self.state.models["coder"] = str(Path(cfg.output_dir) / "final")
        self.commit(unit_name(r, "coder"))

    # ------------------------------------------------------------------ r.frontier
    def _unit_frontier(self, r: int) -> None:
        pool = self.pool()
        verdicts = self._coder_verdicts.pop(r, None)
        if verdicts is None:  # the Coder phase ran (or began) in an earlier process: its verdicts are on disk
            verdicts = [v for v in read_verdict_records(self.run_dir) if v.round == r and v.phase == "coder"]
        per_task: dict[str, list[bool | None]] = {}
        for v in verdicts:
            per_task.setdefault(v.task, []).append(v.verdict.scored_correct)
        for name, correct in per_task.items():
            successes, scored = tally(correct)
            if name in pool and scored:
                pool.record(name, successes, scored)
        hard = len(pool.hard())
        pairs, apis = pair_rates(pool.records()), api_rates(pool.records())
        self.log_metrics(r, "round", 0, {"pool/tasks": len(pool), "pool/hard": hard, "pool/api_pairs": len(pairs),
                                         "pool/apis": len(apis),
                                         "coder/round_pass_rate": mean_correct([c for cs in per_task.values()
                                                                                for c in cs])})  # fmt: skip
        pool.next_round()
        self.say(f"round {r}: frontier updated: {len(pool)} task(s) in the pool, {hard} hard")
        self.commit(unit_name(r, "frontier"), pool=pool, next_round=True)
        pool.save(self.run_dir)


def fill_with_seeds(tasks: list[Task], seeds: list[Task], cap: int, draw: str) -> list[Task]:
    """`tasks`, then seed tasks not among them, `cap` in all. When more seeds are left than fit, a draw seeded by
    `draw` (the run's seed and the round) picks which, so that the rounds do not all take the file's first ones."""
    names = {t.name for t in tasks}
    left = [t for t in seeds if t.name not in names]
    room = cap - len(tasks)
    if 0 < room < len(left):
        left = random.Random(f"seed-tasks:{draw}").sample(left, room)
    return (tasks + left)[:cap]


def _plain(d: dict) -> dict:
    return json.loads(json.dumps(d, default=str))


def _judged_steps(cfg) -> tuple[int, str]:
    """A phase's GRPO steps as the loop counts them (judged batches: `on_rewards` runs once each) and, where GRPO's
    mu (TRL's `num_iterations`) gives each several optimizer updates (`max_steps` counts those), a note saying so."""
    mu = int(cfg.grpo_overrides.get("num_iterations", 1))
    return -(-cfg.max_steps // mu), (f", {mu} updates each" if mu > 1 else "")


def _num(x: float) -> float | None:
    return None if math.isnan(x) else x


def _reasons(counts: Counter) -> str:
    return ", ".join(f"{reason} {n}" for reason, n in counts.most_common()) or "none"


__all__ = ["CONFIG_FILE", "STATE_FILE", "TASKS_FILE", "UNITS", "VERDICTS_FILE", "CoEvolution", "RunState",
           "unit_name"]  # fmt: skip
