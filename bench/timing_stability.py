"""The same correct candidates timed again and again: alone, and inside the realistic mix.

16 correct candidates of `throughput_cases/mix.py` (8 CUDA, 8 Triton; one per task; half of them on the small
64 x 256 tasks, a few microseconds of GPU work, half on 4096 x 4096) are judged:

- alone, `--repeats` times: each time by a fresh `JudgePool` (workers, references and timing all new), one
  candidate in flight at a time, nothing else running;
- inside the batch, `--repeats` times: the full realistic mix (64 CUDA + 64 Triton: compile errors, wrong results,
  crashes, hangs) with the 16 among them, all submitted at once to one pool, so builds, checks and other candidates'
  work run beside each timing.

A fresh pool reuses no verdict, so the alone passes judge the same sources and their CUDA builds come from one cache
folder after the first pass, as a restarted judge's would; each batch pass uses new sources (a comment differs), so
the other candidates' builds and checks run again beside the timed ones. Per candidate: its speedups over eager, their
spread ((max - min) / median), its median kernel time, and how many of its verdicts flag the speed as noisy
(`Verdict.speed_noisy`). A candidate passes when its spread is within 5% (kernels of 50 us or more) or 15% (launch-
bound, under 50 us), or every one of its verdicts flags its speed as noisy (then no reward counts it). Exits 1 if any
candidate fails or a batch verdict is unlike its case's expected status (each is named), 2 on bad arguments.

    python bench/timing_stability.py --out timing_stability.json            # H200: about 11 minutes (2026-12-04)
    python bench/timing_stability.py --only alone --out a.json              # or in halves, one command each:
    python bench/timing_stability.py --only batch --out b.json              #   a.partial.json, b.partial.json
    python bench/timing_stability.py --merge a.partial.json b.partial.json --out timing_stability.json
    python bench/timing_stability.py --no-launch-cover --out before.json    # the same without the launch cover
    python bench/timing_stability.py --no-timing-pool --out no_pool.json     # without each timing's memory pool
    python bench/timing_stability.py --no-graphs --out eager.json            # eager calls only, no graph replay
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from throughput_cases.mix import TASKS, mix  # noqa: E402

LONG_KERNEL_MS = 0.05  # 50 us: at or above, the spread must be within 5%; below (launch-bound), within 15%
BOUNDS = {True: 0.05, False: 0.15}


def chosen() -> list:
    """The 16 candidates: the first correct one of each task per backend, tasks 0-3 at 4096 x 4096, 4-7 small."""
    picked = []
    for backend in ("cuda", "triton"):
        for small in (False, True):
            ok = [c for c in mix(backend, small=small) if c.kind == "ok"]  # names: backend_index_op_kind
            picked += [next(c for c in ok if c.name.split("_")[2] == op) for op in (TASKS[4:] if small else TASKS[:4])]
    return picked


def judge_alone(cases: list, opts, cache: Path, mark: str) -> list:
    """A fresh pool, the candidates one at a time."""
    from kernelzero.judge.pool import JudgePool
    from kernelzero.tasks import Task

    with JudgePool(opts, cache_dir=str(cache)) as pool:
        return [pool.judge(Task(name=c.name, source=c.task), c.source + mark, c.backend) for c in cases]


def judge_in_batch(cases: list, batch: list, pool, mark: str) -> tuple[list, list[str]]:
    """`cases` among `batch`, all submitted at once: the verdicts of `cases`, in order, and every verdict of the
    batch unlike its case's expected status (`name: got`), so a timing protocol is seen to judge the mix as before."""
    from kernelzero.tasks import Task

    items = batch + cases
    futures = [pool.submit(Task(name=c.name, source=c.task), c.source + mark, c.backend) for c in items]
    verdicts = [f.result() for f in futures]
    wrong = [f"{c.name}: {v.status}" for c, v in zip(items, verdicts) if v.status not in c.expected]
    return verdicts[len(batch) :], wrong


def raw(runs: dict) -> dict:
    """Per candidate, each verdict as [where, status, speedup over eager, kernel median ms, speed noise, noisy,
    the eager reference's median ms (which of the two moved a speedup), how both were timed (`Verdict.timed_by`),
    its fastest call on new inputs over its timed median (`Verdict.fresh_ratio`: the `fresh_inputs` guard's margin)]."""
    return {name: [[k, v.status, v.speedup_eager, v.runtime.median_ms if v.runtime else None, v.speed_noise,
                    v.speed_noisy, v.ref_runtime.median_ms if v.ref_runtime else None, v.timed_by, v.fresh_ratio]
                   for k, v in vs]
            for name, vs in runs.items()}  # fmt: skip


def _spread(xs: list[float]) -> float | None:
    """(max - min) / median, or None without figures."""
    return (max(xs) - min(xs)) / statistics.median(xs) if xs else None


def progress(out: Path | None, runs: dict) -> None:
    """After each pass, the figures so far, so a run cut short (or one half of a split run) keeps them."""
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.with_suffix(".partial.json").write_text(json.dumps(raw(runs), indent=1) + "\n")


def table(figures: dict) -> tuple[list[dict], int]:
    """Rows per candidate from `raw` figures (alone runs first), and how many candidates fail their bound."""
    rows, failed = [], 0
    print(f"\n{'candidate':<28} {'kernel us':>9} {'speedups alone | in batch':<44} {'spread':>7} {'noisy':>5}  ok")
    for name, vs in figures.items():
        vs = sorted(vs, key=lambda v: v[0] != "alone")
        speed, kernel = [v[2] for v in vs], [v[3] for v in vs if v[3]]
        if any(x is None for x in speed) or not kernel:
            rows.append({"candidate": name, "statuses": [v[1] for v in vs], "pass": False})
            failed += 1
            print(f"{name:<28} not timed in every run: {[v[1] for v in vs]}")
            continue
        spread = _spread(speed)
        ref = [v[6] for v in vs if len(v) > 6 and v[6]]  # older records have no reference figure
        long = statistics.median(kernel) >= LONG_KERNEL_MS
        noisy = sum(bool(v[5]) for v in vs)
        ok = spread <= BOUNDS[long] or noisy == len(vs)
        failed += not ok
        rows.append({"candidate": name, "kernel_ms": statistics.median(kernel), "speedups": [[v[0], v[2]] for v in vs],
                     "spread": spread, "bound": BOUNDS[long], "noisy_runs": noisy,
                     "speed_noise": [v[4] for v in vs], "kernel_spread": _spread(kernel),
                     "reference_ms": ref, "reference_spread": _spread(ref), "pass": ok,
                     "timed_by": [v[7] if len(v) > 7 else None for v in vs],
                     "fresh_ratio": [v[8] if len(v) > 8 else None for v in vs]})  # fmt: skip
        alone = " ".join(f"{v[2]:.2f}" for v in vs if v[0] == "alone")
        cells = alone + " | " + " ".join(f"{v[2]:.2f}" for v in vs if v[0] != "alone")
        moved = f"  (kernel {_spread(kernel):.1%}, reference {_spread(ref):.1%})" if ref else ""
        graphs = sum(len(v) > 7 and v[7] == "graphs" for v in vs)
        moved += f"  graphs in {graphs} of {len(vs)}" if graphs else ""
        print(f"{name:<28} {statistics.median(kernel) * 1e3:>9.1f} {cells:<44} {spread:>6.1%} {noisy:>5}  "
              f"{'yes' if ok else 'NO'}{moved}")  # fmt: skip
    return rows, failed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3, help="passes alone and passes in the batch (default 3 each)")
    ap.add_argument("--no-launch-cover", action="store_true", help="time without the launch cover (for comparison)")
    ap.add_argument("--no-timing-pool", action="store_true",
                    help="time small tasks without a memory pool of each timing's own (JudgeOptions.timing_pool)")
    ap.add_argument("--no-graphs", action="store_true",
                    help="speedups from eager calls only, never from replayed CUDA graphs (JudgeOptions.timing_graphs "
                         "off; for comparison)")
    ap.add_argument("--only", choices=["alone", "batch"], default=None,
                    help="run one half (a command's time limit): its figures go to OUT.partial.json for --merge")
    ap.add_argument("--merge", type=Path, nargs="+", default=None,
                    help="no judging: the table from these .partial.json files (the halves of one commit's run)")
    ap.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    args = ap.parse_args(argv)
    if args.repeats < 2:
        print("timing_stability: --repeats must be at least 2 (a spread needs two figures)", file=sys.stderr)
        return 2
    if args.merge:
        figures: dict = {}
        for f in args.merge:
            try:
                for name, vs in json.loads(f.read_text()).items():
                    figures.setdefault(name, []).extend(vs)
            except (OSError, ValueError) as exc:
                print(f"timing_stability: --merge {f}: {exc}", file=sys.stderr)
                return 2
        return finish(figures, {"merged": [str(f) for f in args.merge]}, args.out)
    import torch

    if not torch.cuda.is_available():
        print("timing_stability: no CUDA GPU visible (timing needs one)", file=sys.stderr)
        return 2
    from kernelzero.judge import JudgeOptions
    from kernelzero.judge.pool import JudgePool

    opts = JudgeOptions(device="cuda", compile_baseline=False, launch_cover=not args.no_launch_cover,
                        timing_pool=not args.no_timing_pool, timing_graphs=not args.no_graphs)  # fmt: skip
    opts.run_timeout_s = 30.0  # the mix's hangs end here, as in judge_throughput --mix
    cases = chosen()
    batch = mix("cuda") + mix("triton")
    cache = Path(tempfile.mkdtemp(prefix="kz-timing-stability-")) / "build-cache"
    runs: dict[str, list] = {c.name: [] for c in cases}
    mismatches: list[str] = []
    t0 = time.perf_counter()
    for r in range(args.repeats if args.only != "batch" else 0):
        for c, v in zip(cases, judge_alone(cases, opts, cache, "\n# alone\n")):
            runs[c.name].append(("alone", v))
        print(f"alone pass {r + 1}: {time.perf_counter() - t0:.0f} s", flush=True)
        progress(args.out, runs)
    with JudgePool(opts, cache_dir=str(cache)) as pool:
        for r in range(args.repeats if args.only != "alone" else 0):
            verdicts, wrong = judge_in_batch(cases, batch, pool, f"\n# batch, pass {r}\n")
            for c, v in zip(cases, verdicts):
                runs[c.name].append(("batch", v))
            mismatches += wrong
            print(f"batch pass {r + 1}: {time.perf_counter() - t0:.0f} s, {len(wrong)} of {len(batch) + len(cases)} "
                  f"verdicts unlike their expected status{': ' + ', '.join(wrong) if wrong else ''}", flush=True)
            progress(args.out, runs)
    about = {"gpu": torch.cuda.get_device_name(0), "launch_cover": opts.launch_cover, "timing_pool": opts.timing_pool,
             "timing_graphs": opts.timing_graphs, "repeats": args.repeats, "only": args.only, "mismatches": mismatches,
             "wall_s": round(time.perf_counter() - t0, 1)}  # fmt: skip
    return finish(raw(runs), about, args.out)


def finish(figures: dict, about: dict, out: Path | None) -> int:
    rows, failed = table(figures)
    summary = {**about, "failed": failed, "rows": rows}
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(summary, indent=2) + "\n")
    print(f"\n{len(rows) - failed}/{len(rows)} within their bound or flagged noisy in every run")
    wrong = about.get("mismatches") or []
    if "mismatches" in about:
        print(f"{len(wrong)} verdicts of the batch passes unlike their expected status")
    return 1 if failed or wrong else 0


if __name__ == "__main__":
    sys.exit(main())
