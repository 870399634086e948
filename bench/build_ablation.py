"""Which build tricks pay: the realistic mix's CUDA candidates built and judged with each level of the build farm.

Levels, each adding one part to the one before (`BuildFarm.tricks`):

- `plain`: every `load_inline` call built as written (torch's own way, one TU with torch/extension.h and pybind11);
- `split`: the host TU and the device TU compiled apart (judge/build/split.py), no precompiled header;
- `pch`: and the host TU against a precompiled torch/extension.h;
- `bridge`: and the host TU bound through the prebuilt bridge, without pybind11 (bind.py), against torch/all.h: what
  the judge uses by default.

A fifth level, a host TU against a lean subset of torch's headers, was measured here on the H200 (2026-12-06) and
removed: it saved -12.9% and 7.6% of the wall (passes 1 and 2), under the rule (bench/README.md).

One pool, warmed first (headers and bridge built, not counted; with `--warm-batch`, the whole mix judged once more).
Then two passes over the levels in alternating order (plain..bridge, then bridge..plain), each judging the 64 CUDA
candidates of `throughput_cases/mix.py` as new sources (nothing built or judged is reused). Per level: the steady
wall of each pass, candidates per minute, the median build seconds, and every verdict checked against its expected
status. A part is kept when it saves at least 10% of the steady wall of the level before it in both passes.

    python bench/build_ablation.py --passes 1 --levels plain split --out p1a.json  # one pass in two commands:
    python bench/build_ablation.py --passes 1 --levels pch bridge --out p1b.json    # on the H200 the whole mix's
    python bench/build_ablation.py --passes 2 --levels bridge pch --out p2b.json    # plain takes 199 s, split 76,
    python bench/build_ablation.py --passes 2 --levels split plain --out p2a.json   # pch 54-63, bridge 45-49, the
    python bench/build_ablation.py --merge p1a.json p1b.json p2b.json p2a.json      # warm-up 41-72 s (no GPU here)
    python bench/build_ablation.py --n 32 --out half.json   # half the mix, same proportions, both passes at once
    python bench/build_ablation.py --merge old.json:1 p2.json  # pass 1 of an earlier record, pass 2 run again
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from proc_acct import cpu_seconds  # noqa: E402
from throughput_cases.mix import mix  # noqa: E402

LEVELS = ("plain", "split", "pch", "bridge")  # farm.TRICKS, named here so --merge needs no torch
KEEP_SAVING = 0.10  # a part stays when it saves at least this share of the steady wall, in both passes


def settle(busy_below: float = 0.15, hold_s: float = 3.0, limit_s: float = 60.0) -> float:
    """Wait until the machine's CPUs have been under `busy_below` busy for `hold_s` (at most `limit_s`); the seconds
    waited. Each level then starts from the same quiet machine: the level before it leaves work behind (its pool
    spawning warm workers again), which otherwise falls on whichever level comes next."""
    cores = os.cpu_count() or 1
    t0 = time.monotonic()
    quiet_since = None
    while time.monotonic() - t0 < limit_s:
        c0, w0 = cpu_seconds(), time.monotonic()
        time.sleep(0.5)
        busy = (cpu_seconds() - c0) / ((time.monotonic() - w0) * cores)
        if busy >= busy_below:
            quiet_since = None
        elif quiet_since is None:
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since >= hold_s:
            break
    return round(time.monotonic() - t0, 1)


def one_pass(pool, cases: list, level: str, mark: str) -> dict:
    """The CUDA candidates judged once at `level`, all submitted at once, once the machine is quiet (`settle`)."""
    from kernelzero.tasks import Task

    pool.farm.tricks = level
    settled = settle()
    t0 = time.perf_counter()
    futures = [pool.submit(Task(name=c.name, source=c.task), c.source + mark, "cuda") for c in cases]
    done: dict[int, float] = {}
    for i, f in enumerate(futures):
        f.add_done_callback(lambda _, i=i: done.setdefault(i, time.perf_counter() - t0))
    verdicts = [f.result() for f in futures]
    wall = time.perf_counter() - t0
    wrong = [f"{c.name}: {v.status}" for c, v in zip(cases, verdicts) if v.status not in c.expected]
    builds = [v.stage_s["build_farm"] for v in verdicts if "build_farm" in v.stage_s]
    # the wall less the hangs: they end at their run timeout whatever the level, so the decision's wall, which
    # includes them, understates every part's saving (on an H100 at n=32: a 10-45 s tail at ~6 of 16 busy cores)
    others = [done.get(i, wall) for i, c in enumerate(cases) if "timeout" not in c.expected]
    return {"level": level, "wall_s": round(wall, 2), "per_min": round(60 * len(cases) / wall, 1),
            "wall_but_timeouts_s": round(max(others), 2) if others else None, "settle_s": settled,
            "build_median_s": round(statistics.median(builds), 2) if builds else None, "mismatches": wrong}  # fmt: skip


def decide(passes: list[list[dict]]) -> list[dict]:
    """Per part (each level after `plain`): its saving over the level before, in each pass, and whether it stays."""
    out = []
    for i, level in enumerate(LEVELS[1:], start=1):
        savings = []
        for p in passes:
            by = {r["level"]: r["wall_s"] for r in p}
            savings.append(round(1 - by[level] / by[LEVELS[i - 1]], 3))
        out.append({"part": level, "savings": savings, "keep": all(s >= KEEP_SAVING for s in savings)})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    ap.add_argument("--n", type=int, default=64, help="CUDA candidates of the mix (default 64)")
    ap.add_argument("--passes", type=int, nargs="+", choices=[1, 2], default=[1, 2],
                    help="which passes to run (1: plain..bridge, 2: bridge..plain; default both)")
    ap.add_argument("--levels", nargs="+", choices=LEVELS, default=list(LEVELS),
                    help="which levels this command judges, in its pass's order (default all; a pass in parts fits "
                         "commands of 10 minutes)")
    ap.add_argument("--warm-batch", action="store_true",
                    help="before the passes, judge the whole mix once at `bridge` (not counted), so no measured level "
                         "is the pool's first batch")
    ap.add_argument("--merge", nargs="+", default=None, metavar="JSON[:PASS]",
                    help="no judging: decide from these runs' JSON (passes or parts of passes); `FILE:1` takes only "
                         "pass 1's rows of FILE (a pass run again at a later commit replaces the other's)")
    args = ap.parse_args(argv)
    if args.merge:
        merged: dict[int, dict[str, dict]] = {1: {}, 2: {}}
        for spec in args.merge:
            name, _, only = spec.rpartition(":") if spec[-2:] in (":1", ":2") else (spec, "", "")
            f = Path(name)
            try:
                for k, rows in json.loads(f.read_text())["passes"].items():
                    if only and k != only:
                        continue
                    for row in rows:
                        if row["level"] in merged[int(k)]:
                            raise ValueError(f"pass {k} level {row['level']} is in two of the files")
                        merged[int(k)][row["level"]] = row
            except (OSError, ValueError, KeyError) as exc:
                print(f"build_ablation: --merge {spec}: {exc}", file=sys.stderr)
                return 2
        missing = [f"pass {k} {level}" for k in (1, 2) for level in LEVELS if level not in merged[k]]
        if missing:
            print(f"build_ablation: --merge needs every level of passes 1 and 2; missing {', '.join(missing)}",
                  file=sys.stderr)  # fmt: skip
            return 2
        order = {1: LEVELS, 2: LEVELS[::-1]}
        return report([[merged[k][level] for level in order[k]] for k in (1, 2)],
                      {"merged": args.merge}, args.out)  # fmt: skip
    import torch

    if not torch.cuda.is_available():
        print("build_ablation: no CUDA GPU visible (the mix's CUDA candidates are judged on one)", file=sys.stderr)
        return 2
    from kernelzero.judge import JudgeOptions
    from kernelzero.judge.pool import JudgePool
    from kernelzero.tasks import Task

    cases = mix("cuda", n=args.n)
    opts = JudgeOptions(device="cuda", compile_baseline=False)
    opts.run_timeout_s = 30.0  # the mix's hangs end here
    cache = Path(tempfile.mkdtemp(prefix="kz-ablation-")) / "build-cache"
    passes: dict[int, list[dict]] = {k: [] for k in args.passes}
    about = {"gpu": torch.cuda.get_device_name(0), "n": len(cases)}
    t0 = time.perf_counter()
    with JudgePool(opts, cache_dir=str(cache)) as pool:
        first = cases[0]
        pool.judge(Task(name="warm", source=first.task), first.source + "\n# warm-up\n", "cuda")
        pool.farm.pch_ready.wait(600)
        if args.warm_batch:  # the whole mix once, not counted: a pool's first batch builds slower (its build
            # sandboxes, header pages and candidate workers start: on the H200, 13.7 s build median against 2.6 s
            # for the next batch at the same level) and would bias whichever level comes first
            about["warm_batch"] = one_pass(pool, cases, "bridge", "\n# warm batch\n")
            print(f"warm batch (bridge, not counted): {about['warm_batch']['wall_s']:.1f} s, build median "
                  f"{about['warm_batch']['build_median_s']} s", flush=True)  # fmt: skip
        print(f"warm-up (headers, bridge, workers): {time.perf_counter() - t0:.0f} s", flush=True)
        for k in args.passes:
            for level in [level for level in (LEVELS if k == 1 else LEVELS[::-1]) if level in args.levels]:
                row = one_pass(pool, cases, level, f"\n# ablation pass {k}, {level}\n")
                passes[k].append(row)
                if args.out:  # after every level, so a command cut by its time limit keeps the levels it finished
                    save(args.out, {**about, "partial": True, "passes": passes})
                print(f"pass {k} {level:<7} {row['wall_s']:>7.1f} s {row['per_min']:>6.1f}/min, build median "
                      f"{row['build_median_s']} s, {len(row['mismatches'])} mismatches", flush=True)  # fmt: skip
    about["wall_s"] = round(time.perf_counter() - t0, 1)
    if len(passes) < 2 or len(args.levels) < len(LEVELS):  # a pass or part of one: its rows, for --merge
        if args.out:
            save(args.out, {**about, "passes": passes})
        return 1 if any(r["mismatches"] for p in passes.values() for r in p) else 0
    return report([passes[1], passes[2]], about, args.out)


def save(out: Path, record: dict) -> None:
    """Write `record` as JSON at `out`, its folder made if needed."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=2) + "\n")


def report(passes: list[list[dict]], about: dict, out: Path | None) -> int:
    """Print and write each part's savings and whether it stays; exit status 1 if any verdict was not as expected."""
    parts = decide(passes)
    for p in parts:
        print(f"{p['part']:<7} saves {', '.join(f'{s:.1%}' for s in p['savings'])}: "
              f"{'keep' if p['keep'] else 'REMOVE (under 10% in a pass)'}")  # fmt: skip
    if out:
        save(out, {**about, "passes": {1: passes[0], 2: passes[1]}, "parts": parts})
    return 1 if any(r["mismatches"] for p in passes for r in p) else 0


if __name__ == "__main__":
    sys.exit(main())
