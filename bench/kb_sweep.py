"""Sweep of the judge over every KernelBench task at its real size: one candidate per task, one JSON line per verdict.

It proves the judge can take KernelBench as written (6-8 GB tensors) on one GPU: each task's reference runs, the
candidate runs, the outputs are compared, and the verdict's peak memory is recorded. The default candidate is
deliberately wrong (a Triton kernel that writes one element and returns it), so every judgeable task should come back
`incorrect` (guard `structure` or `shape`) and any other status points at the judge or the task, not the candidate.

    python bench/kb_sweep.py --kernelbench .kb/KernelBench --levels 1 --out /tmp/sweep --time-limit 540
    python bench/kb_sweep.py --kernelbench .kb/KernelBench --solutions bench/kb_solutions --out /tmp/sweep-sol
    python bench/kb_sweep.py --kernelbench .kb/KernelBench --out /tmp/sweep --summary-only

Outputs under OUT: `sweep.jsonl` (one line per task, flushed as each verdict arrives; a rerun with the same OUT skips
recorded tasks, `--retry-infra` re-judges infra errors the task does not explain and, with the wrong
candidate, any verdict other than `incorrect`), `runs.jsonl` (one line per invocation with its
elapsed seconds, summed in the summary), `summary.md` and `summary.json`. `--time-limit` stops submitting new tasks
once that many seconds have passed (tasks in flight finish and are recorded), so each invocation fits a bounded
command and the next one resumes. Exit code: 0 when every task is recorded, every infra_error is one the task
explains (guard reference, too_large or degenerate; not the judge out of GPU memory) and, with the wrong candidate,
every other verdict is `incorrect`; 1 otherwise, 2 for bad input.
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import math
import os
import sys
import time
from pathlib import Path

SWEEP, RUNS = "sweep.jsonl", "runs.jsonl"
# infra_error guards that are the task's fault (its reference fails, it cannot fit, it cannot tell right from wrong)
EXPLAINED_INFRA = frozenset({"reference", "too_large", "degenerate"})
WRONG = "wrong_template"  # the `candidate` of records judged with the deliberately wrong default candidate
MISSING_GUARD = "missing_solution"
FEEDBACK_CHARS = 300

WRONG_TEMPLATE = '''"""Deliberately wrong candidate for KernelBench task {name}: one element from its own kernel."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def one_element_kernel(out_ptr):
    tl.store(out_ptr, 1.0)


class ModelNew(nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, *args, **kwargs):
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        device = tensors[0].device if tensors else torch.device("cuda" if torch.cuda.is_available() else "cpu")
        out = torch.empty(1, device=device, dtype=torch.float32)
        one_element_kernel[(1,)](out)
        return out
'''


def wrong_candidate(task_name: str) -> str:
    """The deliberately wrong Triton candidate for one task: accepts any constructor and forward arguments, launches
    its own one-element kernel (so the launch counter sees a kernel of its own) and returns a 1-element tensor."""
    return WRONG_TEMPLATE.format(name=task_name)


# ------------------------------------------------------------------------------------------------------------ input
class BadInput(Exception):
    """A missing or malformed argument: one line, exit code 2."""


def task_files(kernelbench: Path, levels: list[int]) -> list[tuple[int, str, Path]]:
    """(level, name, path) of every task of `levels`, level by level, numerically by task number. No torch."""
    root = next((c for c in (kernelbench, kernelbench / "KernelBench") if (c / f"level{levels[0]}").is_dir()), None)
    if root is None:
        raise BadInput(f"--kernelbench {kernelbench}: no level{levels[0]}/ folder in it or in its KernelBench/")
    out = []
    for level in levels:
        folder = root / f"level{level}"
        if not folder.is_dir():
            raise BadInput(f"--kernelbench {kernelbench}: no {folder.name}/ folder next to level{levels[0]}/")
        files = [f for f in folder.glob("*.py") if f.name != "__init__.py"]
        if not files:
            raise BadInput(f"--kernelbench {kernelbench}: {folder} holds no task files")
        for f in sorted(files, key=_number):
            out.append((level, f.stem, f))
    return out


def _number(p: Path) -> tuple[int, str]:
    head = p.stem.split("_", 1)[0]
    return (int(head) if head.isdigit() else 1 << 30, p.stem)


def check_args(args: argparse.Namespace) -> None:
    """Everything checkable before torch is imported; raises BadInput naming the argument."""
    if args.kernelbench is None:
        raise BadInput("--kernelbench: give a KernelBench checkout (or set $KERNELBENCH_DIR)")
    if not args.kernelbench.is_dir():
        raise BadInput(f"--kernelbench {args.kernelbench}: no such folder")
    if not args.levels or any(level < 1 for level in args.levels):
        raise BadInput(f"--levels {args.levels}: give level numbers >= 1")
    if args.solutions is not None and args.candidate is not None:
        raise BadInput("--solutions and --candidate: give at most one")
    if args.solutions is not None and not args.solutions.is_dir():
        raise BadInput(f"--solutions {args.solutions}: no such folder")
    if args.candidate is not None and not args.candidate.is_file():
        raise BadInput(f"--candidate {args.candidate}: no such file")
    if args.out.exists() and not args.out.is_dir():
        raise BadInput(f"--out {args.out}: exists and is not a folder")
    if args.summary_only and not (args.out / SWEEP).is_file():
        raise BadInput(f"--summary-only: {args.out / SWEEP} does not exist")
    if args.workers is not None and args.workers < 1:
        raise BadInput(f"--workers {args.workers}: must be >= 1")


def solution_path(level: int, name: str, solutions: Path) -> Path | None:
    """`DIR/levelL/NAME.py`, else `DIR/NAME.py` (the lookup of `kernelzero.eval.evaluate.find_solution`)."""
    paths = (solutions / f"level{level}" / f"{name}.py", solutions / f"{name}.py")
    return next((p for p in paths if p.is_file()), None)


# ----------------------------------------------------------------------------------------------------------- records
def read_jsonl(path: Path) -> list[dict]:
    """Lines of a JSONL file; [] when missing. A torn last line (an interrupted write) is dropped."""
    if not path.is_file():
        return []
    out = []
    lines = path.read_text(encoding="utf-8").split("\n")
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            if i < len(lines) - 2 or (i == len(lines) - 2 and lines[-1]):
                raise ValueError(f"{path}:{i + 1}: not JSON; the file is corrupt, not just interrupted") from None
    return out


def latest(records: list[dict]) -> dict[tuple[int, str], dict]:
    """The last record per (level, task): a retried task's new verdict replaces its old one."""
    return {(r["level"], r["task"]): r for r in records}


def explained(record: dict) -> bool:
    """Whether an infra_error is the task's: its guard says so, and a `reference` failure is not the judge running
    out of GPU memory beside other workers (that is the judge's capacity, not the task)."""
    text = (record.get("feedback") or "").lower()
    oom = "out of memory" in text or "cuda error 2" in text  # the driver's CUDA_ERROR_OUT_OF_MEMORY, by number
    return record.get("guard") in EXPLAINED_INFRA and not (record.get("guard") == "reference" and oom)


def unexpected(record: dict) -> bool:
    """With the deliberately wrong candidate every task should come back `incorrect` (or an infra_error its task
    explains): any other status points at the judge."""
    return record.get("candidate") == WRONG and record["status"] not in ("incorrect", "infra_error")


def needs_retry(record: dict) -> bool:
    return (record["status"] == "infra_error" and not explained(record)) or unexpected(record)


def make_record(level: int, name: str, verdict, wall_s: float, candidate: str) -> dict:
    """One sweep line from a Verdict: status, guard, first feedback line, wall seconds, stages and peak memory."""
    memory = {k: float(v) for k, v in (verdict.memory or {}).items()}
    first = (verdict.feedback or "").strip().splitlines()
    return {"level": level, "task": name, "candidate": candidate, "status": verdict.status, "guard": verdict.guard,
            "feedback": first[0][:FEEDBACK_CHARS] if first else "", "wall_s": round(wall_s, 3),
            "stage_s": dict(verdict.stage_s or {}), "memory": memory,
            "peak_gpu_gb": _peak(memory, ("gpu", "ref_gpu", "admitted_gpu")),
            "peak_host_gb": _peak(memory, ("host", "ref_host", "admitted_host")),
            "device": verdict.device}  # fmt: skip


def _peak(memory: dict[str, float], keys: tuple[str, ...]) -> float | None:
    present = [memory[k] for k in keys if k in memory and memory[k] is not None and not math.isnan(memory[k])]
    return max(present) if present else None


class Log:
    """An append-only JSONL file: each `write` is one line, flushed before it returns."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_file() and path.stat().st_size and not path.read_bytes().endswith(b"\n"):
            data = path.read_bytes()
            path.write_bytes(data[: data.rfind(b"\n") + 1])  # cut a torn last line so appends start clean
        self._f = open(path, "a", encoding="utf-8")

    def write(self, record: dict) -> None:
        self._f.write(json.dumps(record, sort_keys=True) + "\n")
        self._f.flush()
        os.fsync(self._f.fileno())

    def close(self) -> None:
        self._f.close()


# ----------------------------------------------------------------------------------------------------------- judging
def sweep(args: argparse.Namespace, files: list[tuple[int, str, Path]], say=print) -> dict:
    """Judge every task not yet recorded under `args.out`; returns this invocation's run record."""
    t0 = time.monotonic()
    recorded = latest(read_jsonl(args.out / SWEEP))
    todo = [(lvl, name, path) for lvl, name, path in files
            if (lvl, name) not in recorded or (args.retry_infra and needs_retry(recorded[(lvl, name)]))]  # fmt: skip
    run = {"started": time.strftime("%Y-%m-%d %H:%M:%S"), "levels": args.levels, "candidate": candidate_kind(args),
           "todo": len(todo), "judged": 0, "stopped_by_time_limit": False}  # fmt: skip
    say(f"kb_sweep: {len(files)} tasks, {len(files) - len(todo)} recorded, {len(todo)} to judge -> {args.out}")
    log = Log(args.out / SWEEP)
    try:
        if todo:
            _judge_all(args, todo, log, run, t0, say)
    finally:
        log.close()
        run["elapsed_s"] = round(time.monotonic() - t0, 3)
        runs = Log(args.out / RUNS)
        runs.write(run)
        runs.close()
    return run


def candidate_kind(args: argparse.Namespace) -> str:
    if args.solutions is not None:
        return f"solutions:{args.solutions}"
    return f"candidate:{args.candidate}" if args.candidate is not None else WRONG


def _judge_all(args, todo, log: Log, run: dict, t0: float, say) -> None:
    from concurrent.futures import FIRST_COMPLETED, wait

    from kernelzero.judge.options import JudgeOptions
    from kernelzero.judge.pool import JudgePool
    from kernelzero.tasks import load_task

    fixed = args.candidate.read_text(encoding="utf-8") if args.candidate is not None else None
    options = JudgeOptions(device=args.device, compile_baseline=args.compile_baseline)
    kind = candidate_kind(args)
    backend = "triton" if args.solutions is None and args.candidate is None else args.backend
    n, done = len(todo), 0

    def report(record: dict) -> None:
        nonlocal done
        log.write(record)
        done += 1
        run["judged"] += 1
        mem = " ".join(f"{k} {record[f'peak_{k}_gb']:.2f} GB" for k in ("gpu", "host")
                       if record[f"peak_{k}_gb"] is not None)  # fmt: skip
        guard = f" ({record['guard']})" if record["guard"] else ""
        say(f"[{done}/{n}] level{record['level']}/{record['task']}: {record['status']}{guard} "
            f"{record['wall_s']:.1f} s {mem}".rstrip(), flush=True)  # fmt: skip

    with JudgePool(options, workers=args.workers) as pool:
        # In flight at once (the rest wait here, so --time-limit can stop them): on a GPU, one per candidate slot.
        # Each request takes a reference worker, then a candidate worker; more in flight than the pool keeps warm
        # start cold workers all at once, and 25 of them took 21-32 s each to size their task on the H200.
        window = args.workers or (pool.slots_per_gpu * len(pool.judges) if pool.slots_per_gpu else pool.workers)
        pending = list(todo)
        inflight: dict = {}
        while pending or inflight:
            while pending and len(inflight) < window:
                if args.time_limit is not None and time.monotonic() - t0 >= args.time_limit:
                    run["stopped_by_time_limit"] = True
                    say(f"kb_sweep: --time-limit {args.time_limit:g} s reached; {len(pending)} task(s) left for the "
                        "next run", flush=True)  # fmt: skip
                    pending = []
                    break
                level, name, path = pending.pop(0)
                if args.solutions is not None:
                    sol = solution_path(level, name, args.solutions)
                    if sol is None:
                        report({"level": level, "task": name, "candidate": kind, "status": "format_error",
                                "guard": MISSING_GUARD, "feedback": f"no solution file under {args.solutions}",
                                "wall_s": 0.0, "stage_s": {}, "memory": {}, "peak_gpu_gb": None,
                                "peak_host_gb": None, "device": None})  # fmt: skip
                        continue
                    source = sol.read_text(encoding="utf-8")
                else:
                    source = fixed if fixed is not None else wrong_candidate(f"level{level}/{name}")
                task = load_task(path, level=level)
                stamp = {"submit": time.monotonic()}
                fut = pool.submit(task, source, backend)
                fut.add_done_callback(lambda _f, s=stamp: s.setdefault("done", time.monotonic()))
                inflight[fut] = (level, name, stamp)
            if not inflight:
                continue
            finished, _ = wait(list(inflight), timeout=args.stall_report, return_when=FIRST_COMPLETED)
            if not finished:  # no verdict for a while: say who waits on what, so a stall explains itself
                say(f"kb_sweep: no verdict for {args.stall_report:g} s; {len(inflight)} in flight "
                    f"({', '.join(name for _, name, _ in inflight.values())}); {pool.gate.describe()}", flush=True)
                faulthandler.dump_traceback(file=sys.stdout, all_threads=True)
                continue
            for fut in finished:
                level, name, stamp = inflight.pop(fut)
                wall = stamp.get("done", time.monotonic()) - stamp["submit"]
                report(make_record(level, name, fut.result(), wall, kind))


# ----------------------------------------------------------------------------------------------------------- summary
def summarize(files: list[tuple[int, str, Path]], out: Path, levels: list[int]) -> tuple[dict, int]:
    """(summary, exit code) from what `out` holds: per level counts by status, wall seconds, peak memory, and every
    infra_error. Exit 0 when every task is recorded and every infra_error is explained by its task, else 1."""
    recorded = latest(read_jsonl(out / SWEEP))
    runs = read_jsonl(out / RUNS)
    per_level: dict[str, dict] = {}
    infra, missing = [], []
    for level in levels:
        names = [name for lvl, name, _ in files if lvl == level]
        recs = [recorded[(level, name)] for name in names if (level, name) in recorded]
        missing += [f"level{level}/{name}" for name in names if (level, name) not in recorded]
        counts: dict[str, int] = {}
        for r in recs:
            counts[r["status"]] = counts.get(r["status"], 0) + 1
        per_level[f"level{level}"] = {
            "tasks": len(names), "recorded": len(recs), "by_status": dict(sorted(counts.items())),
            "task_wall_s": round(sum(r.get("wall_s") or 0.0 for r in recs), 1),
            "max_task_wall_s": max((r.get("wall_s") or 0.0 for r in recs), default=None),
            "peak_gpu_gb": _max_of(recs, "peak_gpu_gb"), "peak_host_gb": _max_of(recs, "peak_host_gb"),
        }  # fmt: skip
        infra += [
            {
                "task": f"level{level}/{r['task']}",
                "guard": r.get("guard"),
                "reason": r.get("feedback", ""),
                "explained": explained(r),
            }
            for r in recs
            if r["status"] == "infra_error"
        ]
    unexplained = [i for i in infra if not i["explained"]]
    odd = [{"task": f"level{r['level']}/{r['task']}", "status": r["status"], "guard": r.get("guard"),
            "reason": r.get("feedback", "")}
           for r in recorded.values() if r["level"] in levels and unexpected(r)]  # fmt: skip
    code = 0 if not missing and not unexplained and not odd else 1
    summary = {"levels": per_level, "runs": len(runs), "run_wall_s": round(sum(r.get("elapsed_s", 0) for r in runs), 1),
               "tasks": len(files), "recorded": len(files) - len(missing), "missing": missing,
               "infra_errors": infra, "unexplained_infra_errors": len(unexplained), "unexpected": odd,
               "exit_code": code}  # fmt: skip
    return summary, code


def _max_of(recs: list[dict], key: str) -> dict | None:
    """{"gb": max, "task": which} of one per-task figure, None when no record has it."""
    have = [r for r in recs if r.get(key) is not None]
    if not have:
        return None
    top = max(have, key=lambda r: r[key])
    return {"gb": round(top[key], 3), "task": top["task"]}


def render(summary: dict) -> str:
    lines = ["# KernelBench sweep", "",
             f"{summary['recorded']} of {summary['tasks']} tasks recorded over {summary['runs']} run(s), "
             f"{summary['run_wall_s']:.0f} s of wall time in all; exit code {summary['exit_code']}.", "",
             "| level | tasks | recorded | by status | task wall s (sum / max) | peak GPU GB | peak host GB |",
             "|---|---|---|---|---|---|---|"]  # fmt: skip
    for level, s in summary["levels"].items():
        status = ", ".join(f"{k} {v}" for k, v in s["by_status"].items()) or "-"
        peak = {k: f"{s[k]['gb']:.2f} ({s[k]['task']})" if s[k] else "-" for k in ("peak_gpu_gb", "peak_host_gb")}
        wall = f"{s['task_wall_s']:.0f} / {s['max_task_wall_s']:.0f}" if s["recorded"] else "-"
        lines.append(f"| {level} | {s['tasks']} | {s['recorded']} | {status} | {wall} | {peak['peak_gpu_gb']} | "
                     f"{peak['peak_host_gb']} |")  # fmt: skip
    n_infra, unexplained = len(summary["infra_errors"]), summary["unexplained_infra_errors"]
    lines += ["", f"## infra_error ({n_infra}, {unexplained} not explained by the task)", ""]
    lines += [f"- {i['task']}: guard `{i['guard']}`{'' if i['explained'] else ' (UNEXPLAINED)'}: {i['reason']}"
              for i in summary["infra_errors"]] or ["none"]  # fmt: skip
    if summary.get("unexpected"):
        lines += ["", f"## unexpected for the wrong candidate ({len(summary['unexpected'])})", ""]
        lines += [f"- {u['task']}: {u['status']} [{u['guard']}]: {u['reason']}" for u in summary["unexpected"]]
    if summary["missing"]:
        shown = ", ".join(summary["missing"][:20]) + (" ..." if len(summary["missing"]) > 20 else "")
        lines += ["", f"## not yet recorded ({len(summary['missing'])})", "", shown]
    return "\n".join(lines) + "\n"


def write_summary(files, out: Path, levels: list[int], say=print) -> int:
    summary, code = summarize(files, out, levels)
    text = render(summary)
    (out / "summary.md").write_text(text, encoding="utf-8")
    (out / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    say(text, end="")
    return code


# -------------------------------------------------------------------------------------------------------------- main
def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="kb_sweep.py",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Judge one candidate per KernelBench task at its real size; record status, guard, wall time "
        "and peak memory per task; resumable.",
        epilog="example: python bench/kb_sweep.py --kernelbench .kb/KernelBench --levels 1 --out /tmp/sweep "
        "--time-limit 540\nexit code: 0 all recorded and no unexplained infra_error, 1 otherwise, 2 bad input",
    )
    env = os.environ.get("KERNELBENCH_DIR")
    p.add_argument(
        "--kernelbench",
        type=Path,
        default=Path(env) if env else None,
        help="KernelBench checkout holding level1.. folders, or its parent (default: $KERNELBENCH_DIR)",
    )
    p.add_argument("--levels", type=int, nargs="+", default=[1, 2, 3], help="levels to sweep (default: 1 2 3)")
    p.add_argument("--out", type=Path, required=True, help="output folder; an existing one is resumed")
    which = p.add_mutually_exclusive_group()
    which.add_argument(
        "--solutions",
        type=Path,
        help="one solution per task: DIR/levelL/NAME.py or DIR/NAME.py "
        "(a task without one is recorded as format_error, guard missing_solution)",
    )
    which.add_argument("--candidate", type=Path, help="one candidate source judged against every task")
    p.add_argument(
        "--backend",
        choices=("triton", "cuda"),
        default="triton",
        help="backend of --solutions/--candidate (the default wrong candidate is Triton)",
    )
    p.add_argument(
        "--device",
        choices=("auto", "cuda", "cpu"),
        default="auto",
        help="judge device (cpu: Triton interpreter, for tests on tiny tasks only)",
    )
    p.add_argument(
        "--compile-baseline",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="also time torch.compile of each reference (default off: the sweep is about capacity)",
    )
    p.add_argument("--workers", type=int, help="concurrent judge requests (default: the pool's)")
    p.add_argument(
        "--time-limit",
        type=float,
        help="stop submitting new tasks after this many seconds (in-flight "
        "ones finish); rerun with the same --out to continue",
    )
    p.add_argument(
        "--stall-report",
        type=float,
        default=120.0,
        help="when no verdict arrives for this many seconds, print the admission gate's state and every thread's "
        "stack (default 120)",
    )
    p.add_argument(
        "--retry-infra",
        action="store_true",
        help="re-judge recorded infra_error tasks whose guard is not reference, too_large or degenerate",
    )
    p.add_argument("--summary-only", action="store_true", help="write the summary of an existing --out; judge nothing")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        check_args(args)
        levels = list(dict.fromkeys(args.levels))
        args.levels = levels
        files = task_files(args.kernelbench, levels)
        read_jsonl(args.out / SWEEP)  # a corrupt file is bad input, found before any judging
    except (BadInput, ValueError) as exc:
        print(f"kb_sweep: {exc}", file=sys.stderr)
        return 2
    if not args.summary_only:
        sweep(args, files)
    return write_summary(files, args.out, levels)


if __name__ == "__main__":
    sys.exit(main())
