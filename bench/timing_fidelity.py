"""Timing fidelity: judge one correct kernel N times and report the spread of its speedup (GPU only).

If a KernelBench checkout is given (--kernelbench DIR with src/kernelbench), KernelBench's own evaluator times the
same pair in the same process, so the two harnesses' figures sit side by side.

    python bench/timing_fidelity.py --task T.py --solution S.py --backend cuda --repeats 5 [--kernelbench DIR]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", required=True)
    ap.add_argument("--solution", required=True)
    ap.add_argument("--backend", default="cuda", choices=["cuda", "triton"])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--kernelbench", default=None, help="KernelBench checkout (not committed)")
    ap.add_argument("--out", default=None, help="write the figures as JSON here")
    args = ap.parse_args()

    from kernelzero.judge import JudgeOptions
    from kernelzero.judge.core import Judge
    from kernelzero.tasks import Task

    task, source = Task.from_file(args.task), Path(args.solution).read_text()
    rows = []
    for i in range(args.repeats):
        judge = Judge(JudgeOptions(device="cuda"))  # a fresh judge each time: the reference is re-timed too
        t0 = time.perf_counter()
        v = judge.judge(task, source, args.backend)
        wall = time.perf_counter() - t0
        if not v.correct:
            sys.exit(f"repeat {i}: {v.status}: {v.feedback}")
        rows.append({"speedup_eager": v.speedup_eager, "speedup_compile": v.speedup_compile,
                     "cand_ms": v.runtime.median_ms, "cand_iqr_ms": v.runtime.iqr_ms,
                     "ref_ms": v.ref_runtime.median_ms, "wall_s": wall})
        print(f"ours  #{i}: cand {v.runtime.median_ms:.4f} ms (iqr {v.runtime.iqr_ms:.4f}), ref "
              f"{v.ref_runtime.median_ms:.4f} ms, speedup x{v.speedup_eager:.3f}, wall {wall:.1f} s", flush=True)
    sp = [r["speedup_eager"] for r in rows]
    summary = {"task": args.task, "repeats": args.repeats, "ours_speedup_median": statistics.median(sp),
               "ours_speedup_min": min(sp), "ours_speedup_max": max(sp),
               "ours_spread_pct": 100 * (max(sp) - min(sp)) / statistics.median(sp),
               "ours_wall_s_median": statistics.median(r["wall_s"] for r in rows), "rows": rows}
    if args.kernelbench:
        summary["kernelbench"] = kernelbench_timing(args, task.source, source)
    print(json.dumps({k: v for k, v in summary.items() if k != "rows"}, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(summary, indent=1))


def _stub_llm_clients() -> None:
    """KernelBench's utils imports LLM clients at module level; its evaluator never calls them."""
    import types

    for name, attr in (("dotenv", "load_dotenv"), ("openai", "OpenAI"), ("litellm", "completion")):
        try:
            __import__(name)
        except ImportError:
            mod = types.ModuleType(name)
            setattr(mod, attr, lambda *a, **k: None)
            sys.modules[name] = mod


def kernelbench_timing(args, ref_src: str, cand_src: str) -> dict:
    """KernelBench's eval_kernel_against_ref on the same pair, `repeats` times, in this process."""
    sys.path.insert(0, str(Path(args.kernelbench) / "src"))
    _stub_llm_clients()
    import torch
    from kernelbench.eval import eval_kernel_against_ref
    from kernelbench.timing import measure_ref_program_time

    out = []
    for i in range(args.repeats):
        t0 = time.perf_counter()
        res = eval_kernel_against_ref(ref_src, cand_src, num_correct_trials=5, num_perf_trials=100,
                                      measure_performance=True, backend=args.backend, device=0,
                                      build_dir=f"/tmp/kb_build_{i}")
        ref = measure_ref_program_time("ref", ref_src, num_trials=100, device=torch.device("cuda:0"))
        wall = time.perf_counter() - t0
        speedup = ref["mean"] / res.runtime if res.runtime and res.runtime > 0 else None
        out.append({"correct": res.correctness, "cand_ms": res.runtime, "ref_ms": ref["mean"], "speedup": speedup,
                    "wall_s": wall})
        print(f"KB    #{i}: correct={res.correctness} cand {res.runtime} ms, ref {ref['mean']} ms, "
              f"speedup {speedup}, wall {wall:.1f} s", flush=True)
    sp = [r["speedup"] for r in out if r["speedup"]]
    if sp:
        return {"speedup_median": statistics.median(sp), "min": min(sp), "max": max(sp),
                "spread_pct": 100 * (max(sp) - min(sp)) / statistics.median(sp), "rows": out}
    return {"rows": out}


if __name__ == "__main__":
    main()
