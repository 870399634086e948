"""`tasks` and `apis`: task listing, API co-occurrence mining and API-set sampling."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from kernelzero.apis import vocab_apis
from kernelzero.apis.mine import DEFAULT_SOURCES, load_cooccurrence, mine, save_cooccurrence
from kernelzero.apis.sample import SamplerConfig, sample_api_sets, summarize
from kernelzero.apis.vocab import ALIASES, VOCABULARY
from kernelzero.commands.app import app
from kernelzero.commands.ui import Progress, fail, print_table
from kernelzero.tasks import TaskLoadError, load_tasks, write_corpus


# ---------------------------------------------------------------------------------------------------- tasks, apis
# Tasks are parsed, never executed; the apis commands read code, never import it.
@app.command("tasks")
def tasks_cmd(
    path: Path = typer.Argument(..., help="Task file, folder of task files, KernelBench checkout or .jsonl corpus."),
    level: list[int] = typer.Option(None, "--level", "-l", help="Keep only this level (repeatable)."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object per task: name, level, origin, apis, path."),
    out: Path | None = typer.Option(None, "--out", help="Also write the tasks as a JSONL corpus to this file."),
) -> None:
    """List tasks (name, level, the torch APIs each uses); exits non-zero naming every malformed file."""

    try:
        tasks = load_tasks(path, levels=tuple(level) if level else None)
    except TaskLoadError as exc:
        for err in exc.errors:
            typer.echo(f"kernelzero: error: {err}", err=True)
        fail(f"{len(exc.errors)} malformed task file(s) under {path}")
    except (OSError, ValueError) as exc:
        fail(str(exc))
    if as_json:
        for t in tasks:
            record = {"name": t.name, "level": t.level, "origin": t.origin, "apis": list(t.apis), "path": t.path}
            typer.echo(json.dumps(record))
    else:
        from rich.table import Table

        table = Table("level", "name", "APIs", box=None, pad_edge=False)
        table.columns[1].no_wrap = True  # names are identifiers: never cut them
        for t in tasks:
            table.add_row("-" if t.level is None else str(t.level), t.name, ", ".join(t.apis))
        print_table(table)
    if out is not None:
        write_corpus(tasks, out)
    per_level: dict[str, int] = {}
    for t in tasks:
        key = "no level" if t.level is None else f"level{t.level}"
        per_level[key] = per_level.get(key, 0) + 1
    empty = sum(not t.apis for t in tasks)
    no_vocab = sum(not vocab_apis(t.apis) for t in tasks)
    levels_text = ", ".join(f"{k}: {v}" for k, v in per_level.items())
    typer.echo(
        f"{len(tasks)} tasks ({levels_text}); {empty} with no API, {no_vocab} with no vocabulary API"
        + (f"; corpus written to {out}" if out is not None else ""),
        err=True,
    )


apis_app = typer.Typer(
    help="API vocabulary: mine co-occurrence from model code, sample API sets for the Proposer.",
    no_args_is_help=True,
)
app.add_typer(apis_app, name="apis")


@apis_app.command("mine")
def apis_mine_cmd(
    sources: list[str] = typer.Option(
        None, "--from", help="Folder or installed package to scan (repeatable). Default: transformers.models, torch.nn."
    ),
    out: Path = typer.Option(Path("api_cooccurrence.json"), "--out", help="Where to write the counts (JSON)."),
) -> None:
    """Count which vocabulary APIs appear together in one class's forward across real PyTorch code."""
    def progress(files):
        with Progress(len(files), f"mining {len(files)} files", every_s=2.0) as bar:
            yield from bar.track(files)

    try:
        co = mine(sources or DEFAULT_SOURCES, progress=progress)
    except ValueError as exc:
        fail(str(exc))
    save_cooccurrence(co, out)
    seen = sum(n > 0 for n in co.api_counts.values())
    typer.echo(
        f"mined {co.classes} classes in {co.files} files ({co.skipped_files} unparsable) from "
        f"{', '.join(co.sources)}: {seen}/{len(co.api_counts)} vocabulary APIs seen, "
        f"{len(co.pair_counts)} distinct pairs -> {out}"
    )


@apis_app.command("sample")
def apis_sample_cmd(
    n: int = typer.Option(4000, "--n", min=1, help="Number of API sets (half pairs, half triples)."),
    seed: int = typer.Option(0, "--seed", help="Random seed; the same seed gives the same sets."),
    exclude: list[str] = typer.Option(None, "--exclude", help="API never to draw (repeatable)."),
    counts: Path | None = typer.Option(None, "--counts", help="Counts from `apis mine` (default: packaged)."),
    as_json: bool = typer.Option(False, "--json", help='One JSON object per set: {"apis": [...]}.'),
    out: Path | None = typer.Option(None, "--out", help="Write the sets as JSONL here instead of printing them."),
) -> None:
    """Draw distinct API sets from mined co-occurrence, covering the whole vocabulary; summary on stderr."""

    try:
        config = SamplerConfig(n=n, seed=seed, exclude=tuple(exclude or ()))
        sets = sample_api_sets(load_cooccurrence(counts), config)
    except (OSError, ValueError) as exc:
        fail(str(exc))
    lines = [json.dumps({"apis": list(s)}) if as_json or out else " ".join(s) for s in sets]
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("".join(line + "\n" for line in lines))
    else:
        typer.echo("\n".join(lines))
    sm = summarize(sets, config.exclude)
    typer.echo(
        f"{sm.sets} sets ({sm.distinct} distinct): {sm.pairs} pairs, {sm.triples} triples; "
        f"{sm.covered}/{sm.vocabulary} vocabulary APIs present; seed {seed}"
        + (f"; missing {len(sm.missing)}: {', '.join(sm.missing[:8])}" if sm.missing else "")
        + (", ..." if len(sm.missing) > 8 else "")
        + (f" -> {out}" if out is not None else ""),
        err=True,
    )


@apis_app.command("vocab")
def apis_vocab_cmd(as_json: bool = typer.Option(False, "--json", help="One JSON object per API.")) -> None:
    """List the vocabulary of kernel-worthy APIs by category, with the other spellings each one accepts."""

    spellings: dict[str, list[str]] = {name: [] for name in VOCABULARY}
    for alias, name in ALIASES.items():
        if alias != name:
            spellings[name].append(alias)
    for name, cat in VOCABULARY.items():
        if as_json:
            typer.echo(json.dumps({"api": name, "category": cat, "aliases": spellings[name]}))
        else:
            typer.echo(f"{cat:<12} {name:<36} {' '.join(spellings[name])}")


# ---------------------------------------------------------------------------------------------------- end tasks, apis
