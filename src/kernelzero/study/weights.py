"""A study folder that travels without its weights, and the stages that then run again.

A lent GPU machine keeps nothing after its lease, and what comes back from it is small (a few files of at most
16 MiB): the study's models are too large to come back, its text is not (verdicts, task lists, SFT and loop records,
evaluations: a few MB). `pack` writes that text as one .tar.gz; unpacked into `--out` on a later machine, the study
resumes from it. What needed the weights is then decided here, from the files alone:

- a role's SFT (`done.json` without `final/` weights) is trained again with the same data, seed and settings, and
  its weights' digest is compared with the one recorded: `reproduced` says whether it came out bit for bit;
- the evaluation after SFT stands only for the weights it evaluated: when the Coder's SFT did not reproduce, it is
  retired to `seed-S/retired/` (done or part-way) and runs again (its `summary.json` records the digest);
- an arm's loop resumes only from weights: one that stopped part-way, or whose rounds are not all evaluated, with
  any of those weights missing, is retired with its evaluations and runs again from its start;
- an arm records the digests it started from (`start.json`), so the report can say when an arm and the evaluation
  after SFT saw different weights (an SFT trained again that did not reproduce).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tarfile
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from kernelzero.loop.checkpoints import last_checkpoint

WEIGHT_FOLDERS = ("models", "final")
"""Folders of weights and tokenizer (the initial models, each role's `final/`), left out of a pack."""
WEIGHT_PREFIX = "checkpoint"
"""Trainer checkpoints (`checkpoint-N/`) and the loop's `checkpoints/` (its phases' weights), left out of a pack."""


def weights_digest(model_dir: str | Path) -> str | None:
    """A digest of a model folder's weight files (`*.safetensors`, or `pytorch_model*.bin` of the older format), None
    when it holds none. Nothing else counts: the trainer's `training_args.bin` beside them names its own folder."""
    files = sorted(p for p in Path(model_dir).glob("*") if p.is_file() and (
        p.suffix == ".safetensors" or (p.suffix == ".bin" and p.name.startswith("pytorch_model"))))  # fmt: skip
    if not files:
        return None
    h = hashlib.sha256()
    for p in files:
        with p.open("rb") as f:
            h.update(p.name.encode() + b"\0" + hashlib.file_digest(f, "sha256").digest())
    return h.hexdigest()[:16]


WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth")
"""Files of weights (or optimizer state), wherever they lie, left out of a pack."""


def is_weights(name: str, is_file: bool) -> bool:
    """Whether a path component named `name` is weights a pack (and a merge, `study.merge`) leaves out: a weights
    folder, a trainer checkpoint, or a file of weights."""
    return (name in WEIGHT_FOLDERS or name.startswith(WEIGHT_PREFIX)
            or (is_file and Path(name).suffix in WEIGHT_SUFFIXES))  # fmt: skip


def weightless(folder: str, names: list[str]) -> set[str]:
    """`shutil.copytree`'s ignore for copies that leave weights out, as a pack does (`is_weights`)."""
    return {n for n in names if is_weights(n, (Path(folder) / n).is_file())}


def _weightless(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    *folders, name = Path(info.name).parts
    return None if any(is_weights(p, False) for p in folders) or is_weights(name, info.isfile()) else info


def pack(out: str | Path, dest: str | Path) -> int:
    """Write study folder `out` without weights, tokenizers or checkpoints to the .tar.gz `dest` (its paths relative
    to `out`); returns its size in bytes. Written beside `dest` and renamed, so a pack cut short leaves the last."""
    out, dest = Path(out), Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".partial")
    with tarfile.open(tmp, "w:gz") as tar:
        for path in sorted(out.iterdir()):
            tar.add(path, arcname=path.name, filter=_weightless)
    tmp.replace(dest)
    return dest.stat().st_size


def needed_weights(out: str | Path) -> list[Path]:
    """The weight folders study folder `out` still needs to go on, small enough to travel with it for the study's
    small models (about 4 MB a role): each seed's SFT `final/` of both roles (arms not yet run start from them), and
    each loop round's `final/` whose evaluation after that round is not done (a run part-way resumes from its last
    round's; an unevaluated round needs its own). Trainer checkpoints (optimizer state, three times the weights) are
    not among them: without one a phase cut part-way runs again from its start (`resume_checkpoints` lists those a
    carrier may add). Relative to `out`."""
    out = Path(out)
    found = [p for p in sorted(out.glob("seed-*/sft/*/final")) if weights_digest(p)]
    for final in sorted(out.glob("seed-*/*/run/checkpoints/round-*/*/final")):
        arm_dir, r, role = final.parents[4], int(final.parents[1].name.rsplit("-", 1)[1]), final.parent.name
        done = arm_dir / (f"eval-round-{r + 1}" if role == "coder" else f"proposer-eval-round-{r + 1}") / "summary.json"
        if not done.is_file() and weights_digest(final):
            found.append(final)
    return [p.relative_to(out) for p in found]


def resume_checkpoints(out: str | Path) -> list[tuple[int, Path]]:
    """(step, folder) of the latest complete trainer checkpoint of each loop phase cut part-way (no `final/` weights
    yet), relative to `out`. `needed_weights` leaves them out (a checkpoint is its weights and
    three times as much optimizer state); carried where room allows, the phase resumes at that step on another
    machine, as it does on the same one, instead of from its start."""
    out, found = Path(out), []
    for phase in sorted(out.glob("seed-*/*/run/checkpoints/round-*/*")):
        if phase.is_dir() and not weights_digest(phase / "final") and (last := last_checkpoint(phase)):
            found.append((last[0], last[1].relative_to(out)))
    return found


def folder_bytes(folder: str | Path) -> int:
    return sum(p.stat().st_size for p in Path(folder).rglob("*") if p.is_file())


WEIGHT_PART_BYTES = 15 * 2**20
"""A weights pack is written in parts of at most this size: a lent GPU machine returns files of up to 16 MiB."""


def pack_weights(items: Sequence[tuple[Path, str]], dest: str | Path,
                 part_bytes: int = WEIGHT_PART_BYTES) -> list[Path]:  # fmt: skip
    """Folders of weights (`(folder, name in the archive)`, e.g. from `needed_weights`) as one .tar.gz cut into parts
    `dest.00`, `dest.01`, ... of at most `part_bytes` (earlier parts at `dest` removed); [] for no items.
    `unpack_weights` joins them."""
    dest = Path(dest)
    for old in dest.parent.glob(dest.name + ".[0-9][0-9]"):
        old.unlink()
    if not items:
        return []
    tmp = dest.with_name(dest.name + ".partial")
    with tarfile.open(tmp, "w:gz") as tar:
        for folder, name in items:
            tar.add(folder, arcname=name)
    parts = []
    with tmp.open("rb") as f:
        while chunk := f.read(part_bytes):
            parts.append(dest.with_name(f"{dest.name}.{len(parts):02d}"))
            parts[-1].write_bytes(chunk)
    tmp.unlink()
    return parts


def unpack_weights(first_part: str | Path, root: str | Path) -> list[str]:
    """Join `first_part` (`X.00`) and the parts after it and unpack them into `root`; the folders unpacked."""
    first = Path(first_part)
    parts = sorted(first.parent.glob(first.name[:-2] + "[0-9][0-9]"))
    with tempfile.TemporaryFile() as joined:
        for part in parts:
            joined.write(part.read_bytes())
        joined.seek(0)
        with tarfile.open(fileobj=joined, mode="r:gz") as tar:
            names = sorted({str(Path(m.name).parent) for m in tar.getmembers() if m.isfile()})
            tar.extractall(root, filter="data")
    return names


def unpack(archive: str | Path, out: str | Path) -> None:
    """Unpack a `pack` archive into `out` (regular files and folders only, no path outside `out`)."""
    with tarfile.open(archive, "r:gz") as tar:
        tar.extractall(out, filter="data")


WEIGHTS_PACK = "weights.tgz"
"""The name of the weights a pack's runs still need, written beside it in parts `.00`, `.01`, ... (`pack_weights`;
`bench/study_parallel.py` writes them with the folder of each run, `ARM-sSEED/`, in front of its paths)."""
CARRIED = ".weights"
"""Where `study_source` unpacks a pack's weights parts, under the folder it yields."""


@contextmanager
def study_source(source: str | Path, weights: bool = False) -> Iterator[tuple[dict, Path]]:
    """The config (`study_config.json`) and folder of a study folder or pack, for the time of the `with`: a pack is
    unpacked to a temporary folder, its weights parts beside it (`WEIGHTS_PACK.NN`) under `CARRIED/` there when
    `weights`; ValueError when it holds no finished corpus."""
    source = Path(source)
    with tempfile.TemporaryDirectory() as tmp:
        root = source
        if source.is_file():
            with tarfile.open(source, "r:gz") as tar:
                wanted = [m for m in tar.getmembers() if weights or m.name == "study_config.json"
                          or Path(m.name).parts[:1] == ("corpus",)]  # fmt: skip
                tar.extractall(tmp, members=wanted, filter="data")
            root = Path(tmp)
            first = source.with_name(WEIGHTS_PACK + ".00")
            if weights and first.is_file():
                unpack_weights(first, root / CARRIED)
        config, corpus = root / "study_config.json", root / "corpus"
        if not config.is_file() or not (corpus / "done.json").is_file():
            raise ValueError(f"{source}: holds no finished study corpus (study_config.json and corpus/done.json)")
        yield json.loads(config.read_text(encoding="utf-8")), root


@contextmanager
def corpus_source(source: str | Path) -> Iterator[tuple[dict, Path]]:
    """The config (`study_config.json`) and `corpus/` folder of a study folder or pack (`study_source`)."""
    with study_source(source) as (config, root):
        yield config, root / "corpus"


def sft_weights(root: Path, seed: int) -> dict[str, tuple[Path, str]]:
    """Seed SEED's SFT weights of both roles in study folder `root` (a `study_source`'s): for each role, the `final/`
    whose digest its `done.json` records, in `root` or among the weights carried beside its pack, and that digest.
    ValueError naming what is missing."""
    found = {}
    for role in ("coder", "proposer"):
        done = root / f"seed-{seed}" / "sft" / role / "done.json"
        if not done.is_file():
            raise ValueError(f"{root}: no finished SFT of the {role} at seed {seed} (seed-{seed}/sft/{role}/done.json)")
        digest = json.loads(done.read_text(encoding="utf-8")).get("weights")
        finals = [done.parent / "final", *sorted(root.glob(f"{CARRIED}/*/seed-{seed}/sft/{role}/final"))]
        final = next((f for f in finals if digest and weights_digest(f) == digest), None)
        if final is None:
            raise ValueError(f"the {role}'s SFT weights of seed {seed} ({digest}) are not there (a pack's come from "
                             f"{WEIGHTS_PACK}.NN beside it)")  # fmt: skip
        found[role] = (final, digest)
    return found


def retire(path: Path, seed_dir: Path, why: str) -> Path:
    """Move `path` (an evaluation, an arm's run) to `seed_dir/retired/<name>-<time>/` with a note of `why`: kept for
    the record, out of the report (which reads `seed-S/eval-sft` and `seed-S/ARM/`)."""
    dest = seed_dir / "retired" / f"{path.name}-{time.strftime('%Y%m%dT%H%M%S')}"
    dest.mkdir(parents=True, exist_ok=True)
    shutil.move(str(path), str(dest / path.name))
    (dest / "why.txt").write_text(why + "\n", encoding="utf-8")
    return dest


def run_needs_lost_weights(run_dir: Path, evals_missing: list[int]) -> bool:
    """Whether the loop in `run_dir` cannot go on from its files: it stopped part-way and a role's current weights
    (`state.json` models, those the run trained) are gone, or round r's Coder weights are gone while its evaluation
    (`evals_missing`: rounds, from 1) is still to run."""
    state_file = run_dir / "state.json"
    if not state_file.is_file():
        return False
    state = json.loads(state_file.read_text(encoding="utf-8"))
    needed = [] if state.get("finished") else [Path(p) for p in (state.get("models") or {}).values() if p]
    done = set(state.get("completed") or [])
    needed += [run_dir / "checkpoints" / f"round-{r - 1}" / "coder" / "final" for r in evals_missing
               if f"r{r - 1}.coder" in done]  # fmt: skip
    return any(weights_digest(p) is None for p in needed)


def run_finished(out: str | Path, arm: str, train_proposer: bool, seed: int) -> bool:
    """Whether study folder `out` holds every result of ARM at SEED: the evaluations after SFT, the loop, and each
    round's evaluations (the Proposer's where the arm trains it). Nothing of such a run needs weights any more; started
    again without them, its SFT would train again (`Study._sft_done`), so a queue does not start it at all."""
    out = Path(out)
    config = out / "study_config.json"
    if not config.is_file():
        return False
    rounds = int(json.loads(config.read_text(encoding="utf-8"))["rounds"])
    seed_dir = out / f"seed-{seed}"
    arm_dir = seed_dir / arm
    marks = [seed_dir / "eval-sft" / "summary.json", seed_dir / "proposer-eval-sft" / "summary.json",
             arm_dir / "run" / "finished.json"]  # fmt: skip
    for r in range(1, rounds + 1):
        marks.append(arm_dir / f"eval-round-{r}" / "summary.json")
        if train_proposer:
            marks.append(arm_dir / f"proposer-eval-round-{r}" / "summary.json")
    return all(m.is_file() for m in marks)


__all__ = ["CARRIED", "WEIGHTS_PACK", "corpus_source", "folder_bytes", "is_weights", "needed_weights", "pack",
           "pack_weights", "resume_checkpoints", "retire", "run_finished", "run_needs_lost_weights", "sft_weights",
           "study_source", "unpack", "unpack_weights", "weightless", "weights_digest"]
