"""What the study's CPU proxies (`study_rl_proxy.py`, `study_proposer_proxy.py`) share: the study's corpus copied into
the proxy's folder, the proxy's model size, its resumable record, and one role's cold start (the study's own
tokenizer and initial models, `Study.build_models`, then `sft_role`), each done once per folder."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from kernelzero.generation.tiny import ModelShape
from kernelzero.loop.runlog import read_records
from kernelzero.study.config import StudyConfig
from kernelzero.study.models import StudyModelConfig
from kernelzero.study.weights import corpus_source


def proxy_config(sft_max_steps: int, hidden: int = 128, layers: int = 4, train_tasks: int = 512) -> StudyConfig:
    """The proxies' study: configs/study_h200.yaml's corpus sizes (`train_tasks` aside), model (1M parameters at
    hidden 128, 4 layers) and SFT, on CPU."""
    shape = ModelShape(hidden_size=hidden, intermediate_size=3 * hidden, num_hidden_layers=layers,
                       num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=2048)  # fmt: skip
    return StudyConfig(device="cpu", train_tasks=train_tasks, proposer_tasks=256, loop_tasks=512,
                       models=StudyModelConfig(1024, shape), sft_lr=2e-3, sft_batch=8,
                       sft_max_steps=sft_max_steps)  # fmt: skip


def copy_corpus(source: str | Path, out: Path, train_tasks: int | None = None, triples: int | None = None) -> Path:
    """`out/corpus`, copied from a study folder or pack holding a finished corpus the first time. With `train_tasks`
    above its rows, the Coder's rows in `corpus.jsonl` (what SFT reads; `dataset/` keeps the pack's) are extended to
    the family's first `train_tasks` training tasks with the writer's solutions, unjudged: the exact-match proxy needs
    no verdict (the GPU judge passed all 512 it was given), a GPU study with that many judges them all. With
    `triples`, only the first that many rows of 3-API tasks are kept (0: pairs only): a corpus short of the 3-API
    chains the loop's tasks (half pairs, half triples) then ask of RL."""
    corpus = out / "corpus"
    if not corpus.is_dir():
        with corpus_source(source) as (_, src):
            shutil.copytree(src, corpus)
        rows = list(read_records(corpus / "corpus.jsonl")) if train_tasks or triples is not None else []
        if rows and train_tasks and train_tasks > len(rows):
            from kernelzero.study import family
            from kernelzero.study.writer import write_solution

            have = {r["task_name"] for r in rows}
            rows += [{"task_name": t.name, "task_source": t.source, "apis": list(t.apis), "backend": "triton",
                      "solution": write_solution(t)}
                     for t in family.train_tasks(train_tasks) if t.name not in have]  # fmt: skip
        if rows:
            if triples is not None:
                kept = {r["task_name"] for r in [r for r in rows if len(r["apis"]) == 3][:triples]}
                rows = [r for r in rows if len(r["apis"]) == 2 or r["task_name"] in kept]
            (corpus / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return corpus


def open_record(out: Path, args: dict) -> tuple[dict, Callable[[], None]]:
    """`out/proxy.json` as left by an earlier invocation (or a new one holding `args`), and the function that saves
    it: every figure is saved as it is made, so an invocation cut short keeps what it measured."""
    path = out / "proxy.json"
    record = json.loads(path.read_text()) if path.is_file() else {"args": args, "runs": {}}

    def save() -> None:
        path.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")

    return record, save


def cold_start(role: str, corpus: Path, out: Path, cfg: StudyConfig, seed: int, record: dict,
               save: Callable[[], None]) -> Path:  # fmt: skip
    """`out/sft/final`: `role` cold-started from the study's initial models, trained once (record["sft"])."""
    from kernelzero.study.run import Study
    from kernelzero.study.sft import sft_role

    final = out / "sft" / "final"
    if not final.is_dir():
        Study(cfg, out, seed=seed).build_models(corpus, out / "models")
        t0 = time.monotonic()
        done = sft_role(role, corpus, out / "models" / f"{role}-init", out / "sft", cfg, seed, print)
        record["sft"] = {**{k: done[k] for k in ("steps", "stopped", "best_eval_loss")},
                         "seconds": round(time.monotonic() - t0, 1)}  # fmt: skip
        save()
    return final
