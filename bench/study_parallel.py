"""Run a queue of the learning study's arms and seeds on one GPU machine, then merge them into one report.

Each ARM:SEED is its own `kernelzero study` process in its own folder under --root (`ROOT/ARM-sSEED`), so no two
processes write one file; an arm other than `main` waits for its seed's main run to finish the evaluation after SFT
and starts from a copy of that seed's SFT (`study.merge.seed_arm_folder`), so both are measured against one
evaluation after SFT. A run whose folder already holds every result is not started again
(`study.weights.run_finished`). At --limit seconds every run still going gets SIGINT (each stage resumes: rerun the same
command on the same machine). At the end the folders are merged (`study.merge.merge`) into ROOT/merged, whose report
is the study's, packed without weights to OUT/study.tgz; beside it go the weights the runs still need (WEIGHTS parts),
within --weights-mb the last checkpoint of each loop phase cut part-way, and the runs' logs (study-logs.tgz). On a
fresh machine, --from-pack OUT/study.tgz (its weights parts beside it) splits both back into the run folders under the
same --root, and every run resumes where it stopped (a phase whose checkpoint did not fit, from its start).

--parallel above 1 runs several at once on the one GPU. Measured on an H100 80 GB (2026-12-06, configs/study_h200.yaml,
3 seeds at once): it does not pay. Each run's SFT took 120-167 s (59 s alone in the pilot) and its evaluation after
SFT 271-298 s (128 s alone), about 1.3x the work per device second; the judges' workers (624 MB of GPU memory each,
about 40 of them) and three trainers (14-22 GB each) filled the 80 GB and one run died out of memory in its Coder
phase. Runs at once also time each verdict beside the others' kernels (each judge's timing lock holds only its own):
speedups, fast_1 and the reward's speed term then carry that noise. The default is 1: a queue. With the second
study's 1M-parameter models (configs/study_h200_v2.yaml, 2026-12-06, 3 then 4 runs at once on an H100 and an H200)
memory is no limit (35-40 GB of the GPU's, 16-19 GB of the host's) and the CPU sat 15-50% busy at a load of 15-40,
yet one judged Proposer batch took 12-218 s: each valid proposed task's l(m) samples wait on a fresh reference
(`ref.sized`, the worker's start then included, 9 s and `ref.run` 23 s for a 1024 x 512 GELU-exp-sum, against 1.9 s
and 0.06 s on the dev box's CPU), more so the more valid tasks a seed's Proposer writes. A verdict's stages now split
both (`ref.start`, `ref.start.cuda_init`, `ref.run.trials`, ...) to say where.

    python bench/study_parallel.py --root /tmp/kz-study --runs main:0 main:1 main:2 --out $OUT \\
        -- --config configs/study_h200.yaml --corpus-from bench/results/study_h100_d1bb4a6.tgz
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

from kernelzero.loop.runlog import read_records
from kernelzero.study.config import ARMS
from kernelzero.study.run import LOOP_API_SETS, LOOP_TASKS, PROPOSER_EVAL_SFT
from kernelzero.study.weights import WEIGHTS_PACK

WEIGHTS = WEIGHTS_PACK
"""The weights the runs still need (`study.weights.needed_weights`), written beside study.tgz in parts WEIGHTS.00,
.01, ... of at most 15 MiB (what a lent GPU machine returns); carried back with it, a fresh machine resumes exactly,
and another study starts its seeds from them (`kernelzero study --sft-from OUT/study.tgz`)."""


def parse_runs(items: list[str]) -> list[tuple[str, int]]:
    runs = []
    for item in items:
        arm, sep, seed = item.partition(":")
        if not sep or arm not in ARMS or not seed.isdigit():
            raise ValueError(f"--runs takes ARM:SEED with ARM one of {', '.join(ARMS)}, got {item!r}")
        runs.append((arm, int(seed)))
    if len(set(runs)) != len(runs):
        raise ValueError("a run is named twice in --runs")
    return runs


def folder(root: Path, arm: str, seed: int) -> Path:
    return root / f"{arm}-s{seed}"


def arm_seed(run_dir: Path) -> tuple[str, int]:
    """The arm and seed of a run folder named by `folder`."""
    arm, _, seed = run_dir.name.rpartition("-s")
    return arm, int(seed)


class Run:
    def __init__(self, arm: str, seed: int, root: Path, out: Path, study_args: list[str]):
        self.arm, self.seed, self.dir = arm, seed, folder(root, arm, seed)
        self.main = folder(root, "main", seed)
        self.log = out / f"study-{arm}-s{seed}.log"
        self.study_args, self.proc, self.started, self.rc = study_args, None, None, None
        self.finished_before = False  # every result was in its folder when the queue began: never started

    @property
    def name(self) -> str:
        return f"{self.arm}:{self.seed}"

    def ready(self) -> bool:
        """main runs at once; another arm once its folder exists or its seed's evaluations after SFT are done."""
        seed_dir = self.main / f"seed-{self.seed}"
        return (self.arm == "main" or self.dir.is_dir()
                or all((seed_dir / name / "summary.json").is_file() for name in ("eval-sft", PROPOSER_EVAL_SFT)))

    def start(self) -> None:
        from kernelzero.study.merge import seed_arm_folder

        if self.arm != "main" and not self.dir.is_dir():
            seed_arm_folder(self.main, self.dir, self.seed)
        cmd = [sys.executable, "-m", "kernelzero.cli", "study", "--out", str(self.dir), "--arm", self.arm,
               "--seed", str(self.seed), *self.study_args]  # fmt: skip
        self.started = time.monotonic()
        with self.log.open("a", encoding="utf-8") as log:  # a rerun appends: the log tells every invocation
            log.write(f"== {time.strftime('%H:%M:%S')} {' '.join(cmd)}\n")
            log.flush()
            # its own process group, so the limit's SIGINT reaches the study and nothing else here
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        print(f"{time.strftime('%H:%M:%S')} started {self.name} (pid {self.proc.pid})", flush=True)

    def poll(self) -> bool:
        if self.proc is not None and self.rc is None:
            self.rc = self.proc.poll()
            if self.rc is not None:
                took = time.monotonic() - self.started
                print(f"{time.strftime('%H:%M:%S')} {self.name} ended rc={self.rc} after {took:.0f} s", flush=True)
        return self.rc is not None

    def signal(self, sig: int) -> None:
        if self.proc is not None and self.rc is None:
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                pass


def stage_lines(study_dir: Path) -> list[str]:
    """What a run's invocations ran (stages.jsonl), and inside its loop the units it committed (each seed's
    `ARM/run/units.jsonl`) and the last step it logged past them: a call cut inside the loop still says how far it
    got (a stage is recorded only once it ends)."""
    stages = read_records(study_dir / "stages.jsonl")
    lines = [f"{r['stage']} ran {r['seconds']:.0f}s" for r in stages if r["action"] == "ran"]
    arm, seed = arm_seed(study_dir)
    run = study_dir / f"seed-{seed}" / arm / "run"
    units = list(read_records(run / "units.jsonl"))
    if units:
        lines.append("loop units " + ", ".join(f"{u['unit']} {u['seconds']:.0f}s" for u in units))
    done = {u["unit"] for u in units}
    steps = [m for m in read_records(run / "metrics.jsonl") if f"r{m.get('round')}.{m.get('phase')}" not in done]
    if steps and not (run / "finished.json").is_file():
        last = steps[-1]
        lines.append(f"last logged: round {last['round']} {last['phase']} step {last['step']}")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    ap.add_argument("--root", required=True, help="one folder per run under it (ARM-sSEED), and merged/")
    ap.add_argument("--runs", nargs="+", required=True, help="ARM:SEED ... (an arm other than main needs its seed's "
                    "main run here or its folder under --root)")  # fmt: skip
    ap.add_argument("--parallel", type=int, default=1, help="runs at once (default 1; see above before raising it)")
    ap.add_argument("--limit", type=float, default=540.0, help="seconds until every run still going gets SIGINT")
    ap.add_argument("--out", required=True, help="logs and study.tgz (the merged folder without weights)")
    ap.add_argument("--from-pack", help="a fresh machine: unpack this merged pack and start each run's folder from it")
    ap.add_argument("--weights-mb", type=float, default=48.0, help="MiB the weights parts may hold: the weights the "
                    "runs need always go, then the checkpoints of phases cut part-way while they fit, so those phases "
                    "resume where they were on the next machine (default 48: a lent machine's carry is 64 MiB, the "
                    "repository and the pack included)")  # fmt: skip
    ap.add_argument("study_args", nargs=argparse.REMAINDER, help="after --: arguments of every `kernelzero study`")
    args = ap.parse_args(argv)
    try:
        runs_spec = parse_runs(args.runs)
    except ValueError as e:
        ap.error(str(e))  # exit 2, before any study starts
    if args.from_pack and not Path(args.from_pack).is_file():
        ap.error(f"--from-pack {args.from_pack}: no such file")
    study_args = args.study_args[1:] if args.study_args[:1] == ["--"] else args.study_args
    root, out = Path(args.root).resolve(), Path(args.out).resolve()
    for arm, seed in runs_spec:
        if arm != "main" and ("main", seed) not in runs_spec and not folder(root, "main", seed).is_dir():
            ap.error(f"{arm}:{seed} needs main:{seed} in --runs or {folder(root, 'main', seed)}")
    out.mkdir(parents=True, exist_ok=True)
    if args.from_pack and not root.is_dir():
        split_pack(Path(args.from_pack), root, runs_spec)
    root.mkdir(parents=True, exist_ok=True)

    from kernelzero.study.weights import run_finished

    runs = [Run(arm, seed, root, out, study_args) for arm, seed in runs_spec]
    for r in runs:  # a finished run costs a process start and, with its weights gone, an SFT trained again
        r.finished_before = run_finished(r.dir, r.arm, ARMS[r.arm].train_proposer, r.seed)
        if r.finished_before:
            print(f"{r.name}: every result is in {r.dir}: not started", flush=True)
    deadline = time.monotonic() + args.limit
    interrupted = False
    while True:
        live = [r for r in runs if r.proc is not None and not r.poll()]
        if not interrupted and time.monotonic() >= deadline:
            interrupted = True
            print(f"{time.strftime('%H:%M:%S')} limit: SIGINT to {', '.join(r.name for r in live) or 'none'}")
            for r in live:
                r.signal(signal.SIGINT)
            kill_at = time.monotonic() + 60
        if interrupted:
            if not live:
                break
            if time.monotonic() >= kill_at:
                for r in live:
                    r.signal(signal.SIGKILL)
                kill_at = float("inf")
        else:
            waiting = [r for r in runs if r.proc is None and not r.finished_before]
            for r in waiting:
                if len(live) < args.parallel and r.ready():
                    r.start()
                    live.append(r)
            if not live and not any(r.proc is None and r.ready() for r in waiting):
                if waiting:  # an arm whose seed's main run ended without its evaluation after SFT
                    print(f"cannot start: {', '.join(r.name for r in waiting)} (their seed's eval-sft is not done)")
                break
        time.sleep(2)

    print("\n== runs")
    for r in runs:
        state = "finished before" if r.finished_before else "not started" if r.proc is None else f"rc={r.rc}"
        print(f"{r.name:22s} {state:12s} ran: {'; '.join(stage_lines(r.dir)) or '-'}")
    return report(root, [r.dir for r in runs if r.dir.is_dir()], out, args.weights_mb)


def split_pack(pack_path: Path, root: Path, runs: list[tuple[str, int]]) -> None:
    """Unpack a merged pack into one folder per run, then the weights packed beside it (`WEIGHTS`: parts `.00`,
    `.01`, ...) where there are: each study then resumes where it stopped; a stage whose weights did not come runs
    again (`study.weights`)."""
    from kernelzero.study.merge import SEED_SHARED
    from kernelzero.study.weights import unpack, unpack_weights

    src = root.with_name(root.name + ".pack")
    shutil.rmtree(src, ignore_errors=True)
    unpack(pack_path, src)
    for arm, seed in runs:
        dest = folder(root, arm, seed)
        dest.mkdir(parents=True, exist_ok=True)
        for name in ("study_config.json", "corpus", LOOP_TASKS, LOOP_API_SETS):
            if (src / name).exists():
                (shutil.copytree if (src / name).is_dir() else shutil.copy2)(src / name, dest / name)
        for part in (*SEED_SHARED, "retired", arm):
            if (src / f"seed-{seed}" / part).is_dir():
                shutil.copytree(src / f"seed-{seed}" / part, dest / f"seed-{seed}" / part)
    print(f"split {pack_path} into {len(runs)} run folder(s) under {root}")
    first = pack_path.with_name(WEIGHTS + ".00")
    if first.is_file():
        unpacked = unpack_weights(first, root)
        for arm, seed in runs:  # an arm's SFT travels once, in its seed's main folder
            for sft in folder(root, "main", seed).glob(f"seed-{seed}/sft/*/final"):
                dest = folder(root, arm, seed) / sft.relative_to(folder(root, "main", seed))
                if arm != "main" and not dest.exists():
                    shutil.copytree(sft, dest)
        print(f"weights from {first.name}: {', '.join(unpacked)}")


def report(root: Path, folders: list[Path], out: Path, budget_mb: float = 48.0) -> int:
    from kernelzero.study.merge import merge
    from kernelzero.study.report import write_study_report
    from kernelzero.study.weights import folder_bytes, needed_weights, pack, pack_weights, resume_checkpoints

    if not folders:
        print("nothing to merge")
        return 1
    merged = root / "merged"
    shutil.rmtree(merged, ignore_errors=True)
    folders.sort(key=lambda f: (arm_seed(f)[0] != "main", f.name))  # each seed's main first: its SFT is shared
    for line in merge(folders, merged):
        print("merged:", line)
    smoke = json.loads((merged / "study_config.json").read_text(encoding="utf-8")).get("smoke", False)
    write_study_report(merged, smoke=smoke)
    size = pack(merged, out / "study.tgz")
    print(f"packed {merged} to {out / 'study.tgz'} ({size} bytes)")
    items = []  # what each run still needs to go on; a seed's SFT once, from its main folder
    for f in folders:
        arm, seed = arm_seed(f)
        main = arm == "main" or not folder(root, "main", seed).is_dir()
        items += [(f / rel, f"{f.name}/{rel}") for rel in needed_weights(f) if main or rel.parts[1] != "sft"]
    # then the checkpoints of phases cut part-way, the furthest first, while the weights stay within the budget
    # (what a lent machine takes back in: its whole carry is 64 MiB)
    room = budget_mb * 2**20 - sum(folder_bytes(f) for f, _ in items)
    resumable = sorted(((step, f / rel, f"{f.name}/{rel}") for f in folders for step, rel in resume_checkpoints(f)),
                       key=lambda x: -x[0])  # fmt: skip
    carried, left = [], []
    for step, path, name in resumable:
        size = folder_bytes(path)
        label = f"{name} (step {step}, {size / 2**20:.1f} MiB)"
        if size <= room:
            items.append((path, name))
            carried.append(label)
            room -= size
        else:
            left.append(label)
    parts = pack_weights(items, out / WEIGHTS)
    print(f"weights still needed: {len(items)} folder(s) in {len(parts)} part(s) of at most 15 MiB: "
          f"{', '.join(p.name for p in parts) or '-'}")
    for what, names in (("carried", carried), (f"left out (over the {budget_mb:.0f} MiB budget)", left)):
        if names:
            print(f"phases cut part-way, {what}: {'; '.join(names)}")
    print()
    print((merged / "report.md").read_text(encoding="utf-8"))
    logs = sorted(out.glob("study-*.log"))  # one file for them all: a lent machine returns at most 8 files
    if logs:
        with tarfile.open(out / "study-logs.tgz", "w:gz") as tar:
            for log in logs:
                tar.add(log, arcname=log.name)
        for log in logs:
            log.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
