"""Judge throughput: the same CUDA and Triton candidates judged the KernelBench way and by our judge, one run.

(a) KernelBench way, as its `scripts/eval_from_generations.py` runs on one GPU: every CUDA candidate's `load_inline`
    build in parallel on all cores (its compile step, one fresh TORCH_EXTENSIONS_DIR per candidate), then each
    candidate evaluated in a newly spawned process (`batch_eval` opens `mp.Pool(num_gpus)` per batch): import,
    5 correctness trials (atol=rtol=1e-2), 100 CUDA-event timed trials. Reference runtimes are not measured
    (KernelBench precomputes them). With `--warm-bound`, also the warm bound: every candidate in one process.
(b) Our judge: `JudgePool` (sandboxed workers, CPU build farm for CUDA, one judge per GPU), 5 correctness trials
    on fresh seeds, reference and candidate timed (torch.compile baseline off, as (a) has none).
Both start cold: fresh extension, Triton and build-cache directories. Prints candidates per minute and the ratio.

    python bench/judge_throughput.py --out results.json            # GPU: 20 CUDA + 20 Triton candidates
    python bench/judge_throughput.py --quick --out results.json    # GPU: 16 + 16 (< 8 min on a 16-core H200)
    python bench/judge_throughput.py --device cpu --backends triton --out r.json   # plumbing, Triton interpreter
"""

from __future__ import annotations

import argparse
import atexit
import importlib.util
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import proc_acct  # noqa: E402  (beside this script)
from proc_acct import cpu_seconds  # noqa: E402


def _load(path: str, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def _kb_build(path: str, ext_dir: str) -> tuple[bool, float, str]:
    """One candidate's load_inline build in a pool process (KernelBench's parallel compile step)."""
    os.environ["TORCH_EXTENSIONS_DIR"] = ext_dir
    t0 = time.perf_counter()
    try:
        _load(path, f"kb_build_{Path(path).stem}")
        return True, time.perf_counter() - t0, ""
    except Exception as exc:
        return False, time.perf_counter() - t0, str(exc)[-500:]


def _kb_eval(task_path: str, cand_path: str, ext_dir: str, device: str, tag: str) -> bool:
    """KernelBench's eval of one candidate: import (load_inline finds its prebuilt extension), 5 correctness
    trials (atol=rtol=1e-2), then 100 CUDA-event timed trials synchronised per trial."""
    import torch

    os.environ["TORCH_EXTENSIONS_DIR"] = ext_dir
    task, cand = _load(task_path, f"kb_task_{tag}"), _load(cand_path, f"kb_cand_{tag}")
    init = task.get_init_inputs()  # as KernelBench: both modules built from the task's init inputs
    torch.manual_seed(42)
    ref = task.Model(*init).to(device)
    torch.manual_seed(42)
    new = cand.ModelNew(*init).to(device)
    good = True
    with torch.no_grad():
        for trial in range(5):
            torch.manual_seed(1000 + trial)
            inputs = [x.to(device) for x in task.get_inputs()]
            good &= torch.allclose(ref(*inputs), new(*inputs), atol=1e-2, rtol=1e-2)
        if good and device == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            for _ in range(100):
                start.record()
                new(*inputs)
                end.record()
                torch.cuda.synchronize()
                start.elapsed_time(end)
    return bool(good)


def _kb_eval_fresh(args: tuple) -> bool:
    return _kb_eval(*args)


def kernelbench_way(items: list[tuple[str, str, str, str]], device: str, work: Path, mode: str = "fresh",
                    built: dict | None = None, timeout_s: float | None = None, progress=None,
                    prior: dict | None = None) -> dict:  # fmt: skip
    """`fresh` (KernelBench's batch_eval with one GPU: each candidate evaluated by a newly spawned `mp.Pool`, so a
    process start, `import torch` and a cold Triton JIT per candidate) or `warm` (every candidate in this one
    process: an optimistic bound KernelBench's scripts do not reach). CUDA builds run first on all cores, once.
    `progress(figures)`, if given, gets the figures so far after the builds and after each evaluation (seconds per
    candidate under `evals`, the correct ones under `passed`), so a run cut short keeps what it measured.
    `prior`: such figures of a run cut short, resumed: its build phase's seconds stand (the candidates left are built
    again, not counted: `rebuild_s`) and only the candidates it did not evaluate are; the wall is then the build
    phase plus every evaluation's seconds, as one run would have spent them (evaluations run one after another)."""
    t0 = time.perf_counter()
    done = dict(prior["evals"]) if prior else {}
    todo = [it for it in items if it[0] not in done]
    paths = []
    for name, task_src, cand_src, _ in todo:
        (work / f"{name}_task.py").write_text(task_src)
        (work / f"{name}.py").write_text(cand_src)
        paths.append((str(work / f"{name}_task.py"), str(work / f"{name}.py"), str(work / "ext" / name)))
    spawn = multiprocessing.get_context("spawn")  # the parent may hold a CUDA context: do not fork it
    cuda = [p for p, it in zip(paths, todo) if it[3] == "cuda"]
    if built is None:
        built = {}
        if cuda:
            with ProcessPoolExecutor(max_workers=os.cpu_count(), mp_context=spawn) as ex:
                for (_, cand, _), res in zip(cuda, ex.map(_kb_build, [c[1] for c in cuda], [c[2] for c in cuda])):
                    built[cand] = res
    build_s = time.perf_counter() - t0 if cuda else 0.0
    rebuild_s = None
    if prior:
        build_s, rebuild_s = prior["build_s"], build_s
    evals, passed = done, list(prior.get("passed", [])) if prior else []
    ok = len(passed)
    for i, (task_path, cand_path, ext_dir) in enumerate(paths):
        if progress is not None:
            progress({"mode": mode, "build_s": build_s, "correct": ok, "evals": evals, "passed": passed,
                      "n": len(items)})  # fmt: skip
        if cand_path in built and not built[cand_path][0]:
            evals[Path(cand_path).stem] = 0.0  # KernelBench's eval skips a candidate that did not build
            continue
        t1 = time.perf_counter()
        args = (task_path, cand_path, ext_dir, device, f"{mode}_{i}")
        try:
            if mode == "fresh":
                with spawn.Pool(1) as pool:  # as batch_eval: `with mp.Pool(batch_size) as pool` per batch
                    # (its `timeout` per evaluation: a hanging candidate's pool is terminated on the way out)
                    good = bool(pool.apply_async(_kb_eval_fresh, (args,)).get(timeout_s))
            else:
                good = bool(_kb_eval(*args))
            ok += good
            if good:
                passed.append(Path(cand_path).stem)
        except Exception as exc:
            print(f"  kernelbench-way ({mode}): {Path(cand_path).stem}: {type(exc).__name__}: {str(exc)[-200:]}")
        evals[Path(cand_path).stem] = round(time.perf_counter() - t1, 2)
    wall = time.perf_counter() - t0 if prior is None else build_s + sum(evals.values())
    return {"mode": mode, "wall_s": wall, "build_s": build_s, "correct": ok, "n": len(items),
            "per_min": 60 * len(items) / wall, "evals": evals, "passed": passed, "built": built,
            "rebuild_s": rebuild_s, "resumed": prior is not None}  # fmt: skip


STEADY_MARK = "\n# steady-state set: a distinct source, so no build, Triton kernel or verdict is reused\n"


def ours(items: list[tuple[str, str, str, str]], device: str, work: Path, workers: int | None,
         steady: bool = False, farm_sizes: tuple[int, ...] = (), slot_counts: tuple[int, ...] = (),
         no_bind: bool = False, run_timeout_s: float | None = None,
         no_template: bool = False) -> dict:  # fmt: skip
    """Cold: pool start, precompiled headers, references, builds, all timed. Steady (the same pool, then the same
    candidates as new sources): what a long training run sees per batch once references and headers exist.
    `slot_counts`, then `farm_sizes`: one more steady pass each (new sources again), with that many candidate workers
    per GPU, or that many concurrent builds. `no_bind`: then one more with builds that keep pybind11 in the host TU
    (no bridge, judge/bind.py).
    `no_template`: last, one more steady pass whose workers start through the exec chain, not forked from a template
    (sandbox/template.py; the warm workers already forked serve their jobs first)."""
    from kernelzero.judge import JudgeOptions
    from kernelzero.judge.pool import JudgePool
    from kernelzero.tasks import Task

    t0, cpu0 = time.perf_counter(), cpu_seconds()
    cold_acct = proc_acct.Accounting().__enter__()  # left at the end of the cold pass (or at an error: atexit)
    atexit.register(cold_acct.__exit__, None, None, None)
    tasks = {}
    for name, task_src, _, _ in items:
        p = work / f"ours_{name}_task.py"
        p.write_text(task_src)
        tasks.setdefault(task_src, Task.from_file(p))
    opts = JudgeOptions(device=device, compile_baseline=False)
    if run_timeout_s:
        opts.run_timeout_s = run_timeout_s
    with JudgePool(opts, workers, cache_dir=str(work / "build-cache")) as pool:
        verdicts, _, latency = _judged(pool, [(tasks[t], c, b) for _, t, c, b in items])
        cold_cpu = cpu_seconds() - cpu0
        cold_acct.__exit__(None, None, None)
        reference_s = sorted(r.seconds for j in pool.judges for r in j._refs.values())
        cold_in_pool = time.perf_counter() - t0

        def steady_pass(mark: str) -> dict:  # the same candidates as new sources: nothing built or judged is reused
            t1, cpu1 = time.perf_counter(), cpu_seconds()
            with proc_acct.Accounting() as acct:
                again, done_s, lat = _judged(pool, [(tasks[t], c + mark, b) for _, t, c, b in items])
            return {**_summary(items, again, time.perf_counter() - t1, cpu_seconds() - cpu1), "done_s": done_s,
                    "latency_s": lat, "cpu_by_command": acct.result}

        warm = None
        if steady:
            warm = steady_pass(STEADY_MARK)
            warm["farm_workers"] = pool.farm.workers if pool.farm else None
        # as the cold and first steady passes ran (the passes below change slots, farm size or bridge)
        farm = pool.farm.state_dict() if pool.farm else None
        slots = pool.slots_per_gpu
        if steady:
            warm["other_slot_counts"], warm["other_farm_sizes"] = [], []
            for count in slot_counts if pool.slots_per_gpu else ():
                pool.resize_slots(count)
                other = steady_pass(STEADY_MARK + f"# candidate workers per GPU: {count}\n")
                warm["other_slot_counts"].append({"slots_per_gpu": count, **other})
            for size in farm_sizes if pool.farm else ():
                pool.farm.resize(size)
                other = steady_pass(STEADY_MARK + f"# concurrent builds: {size}\n")
                warm["other_farm_sizes"].append({"farm_workers": size, **other})
            warm["no_bind"] = None
            if no_bind and pool.farm:
                pool.farm.bind = False
                warm["no_bind"] = steady_pass(STEADY_MARK + "# built without the bridge\n")
                warm["no_bind"]["farm"] = pool.farm.state_dict()
            warm["no_template"] = None
            if no_template:
                before = os.environ.get("KERNELZERO_WORKER_TEMPLATE")
                os.environ["KERNELZERO_WORKER_TEMPLATE"] = "0"  # read at each worker's start
                try:
                    warm["no_template"] = steady_pass(STEADY_MARK + "# workers started without the template\n")
                finally:
                    os.environ.pop("KERNELZERO_WORKER_TEMPLATE")
                    if before is not None:
                        os.environ["KERNELZERO_WORKER_TEMPLATE"] = before
    wall = time.perf_counter() - t0
    if warm is not None:  # the cold figure is the first pass alone
        others = warm["other_slot_counts"] + warm["other_farm_sizes"]
        others += [warm[k] for k in ("no_bind", "no_template") if warm[k]]
        wall -= warm["wall_s"] + sum(o["wall_s"] for o in others)
    return {**_summary(items, verdicts, wall, cold_cpu), "cpu_by_command": cold_acct.result, "farm": farm,
            "reference_s": reference_s,
            "slots_per_gpu": slots, "cold_in_pool_s": cold_in_pool, "steady": warm, "latency_s": latency}  # fmt: skip


RESTART_MARK = "\n# warm restart: a second judge process, the same build cache, new sources\n"


def restart_pass(items: list[tuple[str, str, str, str]], device: str, cache: str, run_timeout_s: float | None,
                 launched: float, cpu_at_launch: float = 0.0) -> dict:  # fmt: skip
    """Run in a freshly spawned process: a second judge on this machine, started after the first, with the same build
    cache (precompiled headers and bridge already there, as a restarted trainer finds them), judging the candidates
    as new sources. Seconds are counted from `launched` (the parent's clock when it spawned this process)."""
    from kernelzero.judge import JudgeOptions
    from kernelzero.judge.pool import JudgePool
    from kernelzero.tasks import Task

    opts = JudgeOptions(device=device, compile_baseline=False)
    if run_timeout_s:
        opts.run_timeout_s = run_timeout_s
    tasks = {t: Task(name=f"restart_{i}", source=t) for i, t in enumerate(dict.fromkeys(t for _, t, _, _ in items))}
    with JudgePool(opts, cache_dir=cache) as pool:
        started = time.time() - launched
        verdicts, done_s, latency = _judged(pool, [(tasks[t], c + RESTART_MARK, b) for _, t, c, b in items])
        wall, cpu_s = time.time() - launched, cpu_seconds() - cpu_at_launch
        farm = pool.farm.state_dict() if pool.farm else None
    return {**_summary(items, verdicts, wall, cpu_s), "pool_started_s": round(started, 2), "latency_s": latency,
            "first_verdict_s": round(started + done_s[0], 2) if done_s else None, "farm": farm}  # fmt: skip


def _judged(pool, requests: list) -> tuple[list, list[float], list[float]]:
    """The verdicts, in order; when each arrived (seconds after the pass began, sorted): with the builds' seconds
    (all start at once), where the pass's wall goes after the last build; and each one's latency, in order."""
    from concurrent.futures import as_completed

    t0 = time.perf_counter()
    futures, sent = [], []
    for r in requests:
        sent.append(time.perf_counter())
        futures.append(pool.submit(*r))
    arrived: dict = {}
    for f in futures:
        f.add_done_callback(lambda f: arrived.setdefault(id(f), time.perf_counter()))
    done_s = [round(time.perf_counter() - t0, 2) for _ in as_completed(futures)]
    latency = [round(arrived.get(id(f), time.perf_counter()) - t, 2) for f, t in zip(futures, sent)]
    return [f.result() for f in futures], done_s, latency


def check_mix(items: list, expected: dict, statuses: list[str], latency: list[float]) -> dict:
    """Verdicts' statuses against the mix's expected ones, and how fast compile errors were answered."""
    wrong = [(name, got, expected[name]) for (name, *_), got in zip(items, statuses) if got not in expected[name]]
    for name, got, want in wrong:
        print(f"  MISMATCH {name}: {got}, expected {' or '.join(want)}")
    compile_lat = [t for (name, *_), t in zip(items, latency) if expected[name] == ("compile_error",)]
    return {"mismatches": len(wrong), "compile_error_latency_median_s": statistics.median(compile_lat)
            if compile_lat else None}  # fmt: skip


def fresh_line(figures: dict) -> str:
    """How near the timed candidates came to the `fresh_inputs` rule (3x the timed median): their ratios' range."""
    ratios = sorted(r for r in figures.get("fresh_ratios", []) if r is not None)
    if not ratios:
        return "no candidate timed on new inputs"
    return (f"{len(ratios)} timed on new inputs, fresh/timed median {statistics.median(ratios):.2f}, "
            f"max {ratios[-1]:.2f}; {figures['guards'].count('fresh_inputs')} rejected by fresh_inputs")


def cpu(figures: dict) -> str:
    """A pass's CPU seconds and how busy they kept the machine, for the printed lines."""
    by_command = figures.get("cpu_by_command")
    where = f"; by command: {proc_acct.top(by_command)}" if by_command else ""
    return f"{figures['cpu_s']} CPU s ({100 * (figures['cpu_busy'] or 0):.0f}% of the cores){where}"


def _summary(items: list, verdicts: list, wall: float, cpu_s: float | None = None) -> dict:
    from kernelzero.judge.sandbox import template

    for (name, *_), v in zip(items, verdicts):
        if not v.correct:
            print(f"  ours: {name}: {v.status} {v.feedback[:300]}")
    builds = [v.stage_s.get("build_farm") for v in verdicts if "build_farm" in v.stage_s]
    stages = sorted({k for v in verdicts for k in v.stage_s})
    per_stage = {k: round(statistics.median(v.stage_s[k] for v in verdicts if k in v.stage_s), 3) for k in stages}
    sum_stage = {k: round(sum(v.stage_s.get(k, 0.0) for v in verdicts), 2) for k in stages}
    return {"wall_s": wall, "correct": sum(v.correct for v in verdicts), "n": len(items),
            "per_min": 60 * len(items) / wall, "build_farm_s": builds, "stage_median_s": per_stage,
            "stage_total_s": sum_stage, "statuses": [v.status for v in verdicts],
            "guards": [v.guard for v in verdicts],  # which guard rejected (`fresh_inputs` must never hit honest ones)
            "fresh_ratios": [v.fresh_ratio for v in verdicts],  # calls on new inputs over the timed median
            "stage_s": [{k: round(s, 3) for k, s in v.stage_s.items()} for v in verdicts],
            "cpu_s": cpu_s and round(cpu_s, 1),
            "cpu_busy": cpu_s and round(cpu_s / (wall * (os.cpu_count() or 1)), 3),
            "templates": template.summary()}  # worker environments forked from a template / started fresh  # fmt: skip


def candidates_sha(items: list[tuple[str, str, str, str]]) -> str:
    """What a KernelBench-way figure was measured on: every candidate's name, task and source, in order."""
    import hashlib

    return hashlib.sha256(json.dumps(items).encode()).hexdigest()[:16]


def _commit() -> str | None:
    """The working tree's commit, for figures kept across runs (None outside a git checkout)."""
    import subprocess

    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10,
                             cwd=Path(__file__).parent)  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="auto", choices=["auto", "cuda", "cpu"])
    ap.add_argument("--backends", default="cuda,triton")
    ap.add_argument("--quick", action="store_true", help="16 candidates per backend instead of 20")
    ap.add_argument("--workers", type=int, default=None, help="JudgePool threads (default: its own)")
    ap.add_argument(
        "--warm-bound",
        action="store_true",
        help="also time the KernelBench way in one warm process (an optimistic bound its scripts do not reach)",
    )
    ap.add_argument(
        "--no-steady",
        action="store_true",
        help="skip the steady-state pass (the same pool judging the candidates again as new sources)",
    )
    ap.add_argument(
        "--steady-farm",
        default="",
        help="comma-separated build-farm sizes: one more steady pass with each many concurrent builds (CUDA)",
    )
    ap.add_argument(
        "--steady-slots",
        default="",
        help="comma-separated candidate workers per GPU: one more steady pass with each (GPU)",
    )
    ap.add_argument(
        "--steady-no-bind",
        action="store_true",
        help="then one more steady pass with builds that keep pybind11 in the host TU (CUDA; the bridge's A/B)",
    )
    ap.add_argument(
        "--steady-no-template",
        action="store_true",
        help="then one more steady pass whose workers start as fresh processes, not forked from a template (the "
        "template's A/B)",
    )
    ap.add_argument(
        "--mix",
        action="store_true",
        help="the realistic mix instead (throughput_cases/mix.py: 64 candidates per backend over 8 tasks, 40%% "
        "correct, 30%% not compiling, 20%% wrong, 10%% crashing or hanging), each checked against its expected status",
    )
    ap.add_argument(
        "--warm-restart",
        action="store_true",
        help="then start a second judge process with the same build cache and judge the candidates again as new "
        "sources: candidates per minute and the first verdict's seconds, both from that process's spawn",
    )
    ap.add_argument(
        "--kernelbench-only",
        action="store_true",
        help="measure only the KernelBench way (written to --out, with every candidate's name): it does not depend "
        "on our code, so one measurement per candidate set serves later runs through --kernelbench-from",
    )
    ap.add_argument(
        "--kernelbench-from",
        type=Path,
        nargs="+",
        default=None,
        help="one or more --kernelbench-only runs' JSON for the same candidates (checked by their sources' digest; "
        "one file per backend where they were measured apart): their figures stand in for measuring the KernelBench "
        "way again",
    )
    ap.add_argument(
        "--kernelbench-resume",
        type=Path,
        default=None,
        help="with --kernelbench-only: the JSON of such a run cut short (by a command's time limit); its build phase "
        "and evaluations stand, the candidates it did not evaluate are evaluated now",
    )
    ap.add_argument("--skip-kernelbench", action="store_true",
                    help="measure our judge only (every ratio printed is then nan): for a look at our side alone")
    ap.add_argument("--timeout", type=float, default=None, help="seconds per evaluation for both ways (mix: 30)")
    ap.add_argument("--out", default=None, help="write the figures as JSON here (rewritten after each backend)")
    args = ap.parse_args()

    measured = None
    if args.kernelbench_from:
        measured = {}
        for path in args.kernelbench_from:  # a later file's backend replaces an earlier one's
            try:
                record = json.loads(path.read_text())
            except (OSError, ValueError) as exc:
                print(f"judge_throughput: --kernelbench-from {path}: {exc}", file=sys.stderr)
                sys.exit(2)
            for backend in ("cuda", "triton"):
                if backend in record:
                    measured[backend] = {**record[backend], "from": str(path), "date": record.get("date"),
                                         "commit": record.get("commit")}
        if args.warm_bound or args.kernelbench_only:
            print("judge_throughput: --kernelbench-from measures nothing of the KernelBench way (no --warm-bound, "
                  "no --kernelbench-only)", file=sys.stderr)  # fmt: skip
            sys.exit(2)
    if args.kernelbench_resume and not (args.kernelbench_only and args.kernelbench_resume.is_file()):
        print("judge_throughput: --kernelbench-resume needs --kernelbench-only and an existing JSON file",
              file=sys.stderr)  # fmt: skip
        sys.exit(2)
    work = Path(tempfile.mkdtemp(prefix="kz-throughput-"))
    os.environ["TRITON_CACHE_DIR"] = str(work / "triton-cache")  # cold for both ways
    import torch

    device = args.device if args.device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"
    from throughput_cases import cases
    from throughput_cases.mix import mix

    n = 16 if args.quick else 20
    backends = [b for b in args.backends.split(",") if b and not (b == "cuda" and device == "cpu")]
    every = cases(n, n, small=device == "cpu")
    missing = [b for b in backends if measured is not None and b not in measured]
    if missing and not args.skip_kernelbench:  # before any pass runs, not after the first backend's
        print(f"judge_throughput: no {', '.join(missing)} figures in --kernelbench-from", file=sys.stderr)
        sys.exit(2)
    expected: dict = {}
    timeout = args.timeout or (30.0 if args.mix else None)
    if args.mix:
        mixed = [c for b in backends for c in mix(b, small=device == "cpu")]
        every = [(c.name, c.task, c.source, c.backend) for c in mixed]
        expected = {c.name: c.expected for c in mixed}
    results: dict = {"device": device, "cpus": os.cpu_count(), "torch": torch.__version__,
                     "gpu": torch.cuda.get_device_name(0) if device == "cuda" else None,
                     "date": time.strftime("%Y-%m-%d"), "commit": _commit(),
                     "worker_template": os.environ.get("KERNELZERO_WORKER_TEMPLATE", "1") != "0"}  # fmt: skip

    def save(results: dict) -> None:
        if args.out:
            Path(args.out).write_text(json.dumps(results, indent=1))

    for backend in backends:
        items = [c for c in every if c[3] == backend]
        (work / backend).mkdir()
        if args.skip_kernelbench:
            kb, built = {"per_min": float("nan"), "wall_s": None, "correct": None, "n": len(items)}, None
        elif measured:
            kb, built = measured[backend]["kernelbench_way"], None
            if kb.get("candidates_sha") != candidates_sha(items):
                print(f"judge_throughput: {measured[backend]['from']} holds other {backend} candidates than this run's",
                      file=sys.stderr)  # fmt: skip
                sys.exit(2)
            print(f"== {backend}: KernelBench way from {measured[backend]['from']} (measured "
                  f"{measured[backend]['date']} at {measured[backend]['commit']}): {kb['correct']}/{kb['n']} correct, "
                  f"{kb['wall_s']:.1f} s, {kb['per_min']:.1f}/min", flush=True)  # fmt: skip
        else:
            print(f"== {backend}: {len(items)} candidates, KernelBench way (fresh process per candidate) ...",
                  flush=True)  # fmt: skip
            def progress(partial: dict, backend: str = backend) -> None:
                save({**results, backend: {"partial": partial}})

            prior = None
            if args.kernelbench_resume:
                earlier = json.loads(args.kernelbench_resume.read_text()).get(backend, {})
                prior = earlier.get("partial") or earlier.get("kernelbench_way")
            kb = kernelbench_way(items, device, work / backend, "fresh", timeout_s=timeout, progress=progress,
                                 prior=prior)  # fmt: skip
            kb["names"], kb["candidates_sha"] = [c[0] for c in items], candidates_sha(items)
            print(f"   {kb['correct']}/{kb['n']} correct, {kb['wall_s']:.1f} s (builds {kb['build_s']:.1f} s), "
                  f"{kb['per_min']:.1f}/min", flush=True)  # fmt: skip
            built = kb.pop("built")
        if args.kernelbench_only:
            results[backend] = {"kernelbench_way": kb}
            save(results)
            continue
        warm = None
        if args.warm_bound:
            os.environ["TRITON_CACHE_DIR"] = str(work / f"triton-cache-warm-{backend}")
            warm = kernelbench_way(items, device, work / backend, "warm", built=built)
            warm.pop("built")
            warm["wall_s"] += kb["build_s"]  # the same builds, counted once for each way
            warm["per_min"] = 60 * len(items) / warm["wall_s"]
            print(f"   warm bound (one process for all): {warm['correct']}/{warm['n']} correct, "
                  f"{warm['wall_s']:.1f} s, {warm['per_min']:.1f}/min", flush=True)  # fmt: skip
        print(f"== {backend}: our judge ...", flush=True)
        sizes = tuple(int(x) for x in args.steady_farm.split(",") if x.strip())
        counts = tuple(int(x) for x in args.steady_slots.split(",") if x.strip())
        us = ours(items, device, work / backend, args.workers, steady=not args.no_steady, farm_sizes=sizes,
                  slot_counts=counts, no_bind=args.steady_no_bind, run_timeout_s=timeout,
                  no_template=args.steady_no_template)
        if expected:
            us["mix"] = check_mix(items, expected, us["statuses"], us["latency_s"])
            print(f"   mix: {us['mix']['mismatches']} verdicts differ from their expected status; compile errors "
                  f"answered in a median {us['mix']['compile_error_latency_median_s']} s; {fresh_line(us)}",
                  flush=True)  # fmt: skip
        print(f"   {us['correct']}/{us['n']} correct, {us['wall_s']:.1f} s, {us['per_min']:.1f}/min, {cpu(us)}; "
              f"median stage seconds {json.dumps(us['stage_median_s'])}\n   summed over candidates "
              f"{json.dumps(us['stage_total_s'])}"
              f"\n   reference workers (s): {us['reference_s']}; slots per GPU {us['slots_per_gpu']}; "
              f"farm {json.dumps(us['farm'])}", flush=True)  # fmt: skip
        st = us["steady"]
        if st and expected:
            st["mix"] = check_mix(items, expected, st["statuses"], st["latency_s"])
            print(f"   mix, steady: {st['mix']['mismatches']} verdicts differ from their expected status; compile "
                  f"errors answered in a median {st['mix']['compile_error_latency_median_s']} s; {fresh_line(st)}",
                  flush=True)
        if st:
            print(f"   steady state (same pool; the same candidates as new sources): {st['correct']}/{st['n']} correct,"
                  f" {st['wall_s']:.1f} s, {st['per_min']:.1f}/min, {st['per_min'] / kb['per_min']:.2f}x the "
                  f"KernelBench way ({st['farm_workers']} concurrent builds, {cpu(st)}); median stage seconds "
                  f"{json.dumps(st['stage_median_s'])}\n   verdicts arrived at (s) {st['done_s']}; builds took (s) "
                  f"{sorted(st['build_farm_s'])}", flush=True)  # fmt: skip
            for o in st["other_slot_counts"]:
                print(f"   steady state, {o['slots_per_gpu']} candidate workers per GPU: {o['correct']}/{o['n']} "
                      f"correct, {o['wall_s']:.1f} s, {o['per_min']:.1f}/min, {o['per_min'] / kb['per_min']:.2f}x; "
                      f"median stage seconds {json.dumps(o['stage_median_s'])}", flush=True)  # fmt: skip
            if st["no_template"]:
                o = st["no_template"]
                print(f"   steady state, workers started without the template: {o['correct']}/{o['n']} correct, "
                      f"{o['wall_s']:.1f} s, {o['per_min']:.1f}/min, {o['per_min'] / kb['per_min']:.2f}x, {cpu(o)}",
                      flush=True)  # fmt: skip
            if st["no_bind"]:
                o = st["no_bind"]
                print(f"   steady state, built without the bridge: {o['correct']}/{o['n']} correct, "
                      f"{o['wall_s']:.1f} s, {o['per_min']:.1f}/min, {o['per_min'] / kb['per_min']:.2f}x; build_farm "
                      f"median {o['stage_median_s'].get('build_farm')} s; farm {json.dumps(o['farm'])}",
                      flush=True)  # fmt: skip
            for o in st["other_farm_sizes"]:
                print(f"   steady state, {o['farm_workers']} concurrent builds: {o['correct']}/{o['n']} correct, "
                      f"{o['wall_s']:.1f} s, {o['per_min']:.1f}/min, {o['per_min'] / kb['per_min']:.2f}x; build_farm "
                      f"median {o['stage_median_s'].get('build_farm')} s", flush=True)  # fmt: skip
        results[backend] = entry = {
            "kernelbench_way": kb, "kernelbench_warm": warm, "ours": us, "warm_restart": None,
            "ratio": us["per_min"] / kb["per_min"], "ratio_warm": us["per_min"] / warm["per_min"] if warm else None,
            "ratio_steady": us["steady"] and us["steady"]["per_min"] / kb["per_min"]}  # fmt: skip
        save(results)  # after each pass: a run cut short keeps every figure it measured
        if args.warm_restart:
            ctx = multiprocessing.get_context("spawn")  # a new process: nothing of this one's imports or caches
            with ProcessPoolExecutor(1, mp_context=ctx) as ex, proc_acct.Accounting() as acct:
                restart = ex.submit(restart_pass, items, device, str(work / backend / "build-cache"), timeout,
                                    time.time(), cpu_seconds()).result()  # fmt: skip
            restart["cpu_by_command"] = acct.result  # the second judge's processes that exited during it
            if expected:
                restart["mix"] = check_mix(items, expected, restart["statuses"], restart["latency_s"])
            print(f"   warm restart (second process, same cache, new sources): {restart['correct']}/{restart['n']} "
                  f"correct, {restart['wall_s']:.1f} s from spawn, {restart['per_min']:.1f}/min, "
                  f"{restart['per_min'] / kb['per_min']:.2f}x, {cpu(restart)}; pool up at "
                  f"{restart['pool_started_s']} s, first verdict at {restart['first_verdict_s']} s; farm "
                  f"{json.dumps(restart['farm'])}", flush=True)
            entry["warm_restart"] = restart
            save(results)
        vs_warm = f" (vs the warm bound {entry['ratio_warm']:.2f}x)" if warm else ""
        print(f"   ratio ours/KernelBench-way: {entry['ratio']:.2f}x{vs_warm}", flush=True)
    print(json.dumps({b: {"kb_per_min": r["kernelbench_way"]["per_min"], "ours_per_min": r["ours"]["per_min"],
                          "ratio": r["ratio"], "ratio_warm": r["ratio_warm"], "ratio_steady": r["ratio_steady"]}
                      for b, r in results.items() if isinstance(r, dict) and "ratio" in r}, indent=1))  # fmt: skip
    save(results)


if __name__ == "__main__":
    main()
