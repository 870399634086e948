"""Co-occurrence mining: which vocabulary APIs real PyTorch code uses together in one class's forward.

For every `.py` file under the sources, every class that defines `forward` contributes the set of vocabulary
entries it uses (`extract_classes`, without following other classes: a whole model would otherwise list every
op of every block). We count, over those classes, how many use each API and each pair of APIs. The counts are
saved as JSON; the packaged default (`kernelzero/data/api_cooccurrence.json`) was mined from the installed
`transformers` models and `torch.nn`, and is what the sampler reads unless told otherwise.

Files are parsed, never imported. Files that do not parse (another Python's syntax) are skipped and counted.
`modular_*.py` files are skipped: in `transformers` they are the templates its `modeling_*.py` files are
generated from, and counting both would count those classes twice.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from importlib import resources
from itertools import combinations
from pathlib import Path

from kernelzero.apis.extract import extract_classes
from kernelzero.apis.vocab import VOCABULARY, vocab_apis
from kernelzero.syntax import parse

FORMAT = "kernelzero.api_cooccurrence/1"
DEFAULT_SOURCES = ("transformers.models", "torch.nn")
PACKAGED = "api_cooccurrence.json"


@dataclass
class CoOccurrence:
    """Counts over mined classes: per API, and per unordered pair (keys sorted), of classes using them."""

    api_counts: dict[str, int]
    pair_counts: dict[tuple[str, str], int]
    classes: int = 0  # classes with a forward that were read
    files: int = 0
    skipped_files: int = 0  # files that did not parse
    sources: list[str] = field(default_factory=list)

    def pair(self, a: str, b: str) -> int:
        return self.pair_counts.get((a, b) if a < b else (b, a), 0)

    def to_json(self) -> dict:
        pairs = sorted(self.pair_counts.items(), key=lambda kv: (-kv[1], kv[0]))
        return {
            "format": FORMAT,
            "sources": self.sources,
            "files": self.files,
            "skipped_files": self.skipped_files,
            "classes": self.classes,
            "apis": dict(sorted(self.api_counts.items())),
            "pairs": [[a, b, n] for (a, b), n in pairs],
        }

    @classmethod
    def from_json(cls, data: dict, where: str = "co-occurrence JSON") -> CoOccurrence:
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError(f"{where}: not a co-occurrence file (expected format {FORMAT!r})")
        try:
            pairs = {(min(a, b), max(a, b)): int(n) for a, b, n in data["pairs"]}
            return cls(api_counts={k: int(v) for k, v in data["apis"].items()}, pair_counts=pairs,
                       classes=int(data["classes"]), files=int(data["files"]),
                       skipped_files=int(data.get("skipped_files", 0)), sources=list(data["sources"]))  # fmt: skip
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"{where}: malformed co-occurrence file ({type(e).__name__}: {e})") from None


def resolve_source(spec: str) -> tuple[Path, str]:
    """A folder (or file) to scan and its label: an existing path, or an installed package's dotted name.

    Packages are located without being imported (`transformers.models` -> `.../transformers/models`).
    """
    p = Path(spec)
    if p.exists():
        return p, str(p)
    top, *rest = spec.split(".")
    try:
        spec_obj = importlib.util.find_spec(top) if top.isidentifier() else None
    except (ImportError, ValueError):
        spec_obj = None
    if spec_obj is None or not spec_obj.submodule_search_locations:
        raise ValueError(f"{spec!r} is neither a path nor an installed package")
    folder = Path(next(iter(spec_obj.submodule_search_locations))).joinpath(*rest)
    if not folder.exists() and folder.with_suffix(".py").exists():
        folder = folder.with_suffix(".py")
    if not folder.exists():
        raise ValueError(f"{spec!r}: package {top!r} has no {'/'.join(rest)}")
    try:
        version = importlib.metadata.version(top)
    except importlib.metadata.PackageNotFoundError:
        version = "?"
    return folder, f"{spec} ({top} {version})"


def python_files(paths: Iterable[Path]) -> list[Path]:
    """Every `.py` file under the paths, sorted, without `modular_*.py` templates (see module docstring)."""
    out: set[Path] = set()
    for p in paths:
        files = [p] if p.is_file() else p.rglob("*.py")
        out.update(f for f in files if not f.name.startswith("modular_"))
    return sorted(out)


def count(api_sets: Iterable[tuple[str, ...]]) -> tuple[Counter, Counter, int]:
    """API counts, sorted-pair counts and number of sets, from per-class API sets. Pure; what mining sums."""
    singles: Counter = Counter()
    pairs: Counter = Counter()
    n = 0
    for apis in api_sets:
        n += 1
        uniq = sorted(set(apis))
        singles.update(uniq)
        pairs.update(combinations(uniq, 2))
    return singles, pairs, n


def mine(
    sources: Iterable[str] = DEFAULT_SOURCES, *, progress: bool | Callable[[list[Path]], Iterable[Path]] = False
) -> CoOccurrence:
    """Scan the sources (paths or package names) and count co-occurrence. `progress`: True shows a rich progress bar;
    a callable is given the file list and returns it wrapped in the caller's own progress (`kernelzero apis mine`)."""
    resolved = [resolve_source(s) for s in sources]
    files = python_files(p for p, _ in resolved)
    singles: Counter = Counter()
    pairs: Counter = Counter()
    classes = skipped = 0
    iterator: Iterable[Path] = files
    if callable(progress):
        iterator = progress(files)
    elif progress:
        from rich.console import Console
        from rich.progress import track

        bar_console = Console(stderr=True)  # stdout stays for results
        iterator = track(files, description=f"mining {len(files)} files", transient=True, console=bar_console)
    for f in iterator:
        try:
            tree = parse(f.read_bytes(), filename=str(f))
        except (SyntaxError, ValueError):
            skipped += 1
            continue
        s, p, n = count(vocab_apis(apis) for apis in extract_classes(tree).values())
        singles.update(s)
        pairs.update(p)
        classes += n
    api_counts = {name: singles.get(name, 0) for name in VOCABULARY}
    return CoOccurrence(api_counts=api_counts, pair_counts=dict(pairs), classes=classes, files=len(files),
                        skipped_files=skipped, sources=[label for _, label in resolved])  # fmt: skip


def save_cooccurrence(co: CoOccurrence, path: str | Path) -> Path:
    """Write the counts as JSON (pairs sorted by count), atomically."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".tmp")
    tmp.write_text(_dumps(co.to_json()), encoding="utf-8")
    tmp.replace(p)
    return p


def _dumps(data: dict) -> str:
    """JSON with one API or one pair per line: small, and a re-mine diffs line by line."""
    parts = []
    for key, value in data.items():
        if isinstance(value, dict):
            body = ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in value.items())
            parts.append(f" {json.dumps(key)}: {{\n{body}\n }}")
        elif key == "pairs":
            body = ",\n".join(f"  {json.dumps(v)}" for v in value)
            parts.append(f" {json.dumps(key)}: [\n{body}\n ]")
        else:
            parts.append(f" {json.dumps(key)}: {json.dumps(value)}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def load_cooccurrence(path: str | Path | None = None) -> CoOccurrence:
    """Counts from a JSON file, or the packaged default when `path` is None."""
    if path is None:
        text = resources.files("kernelzero").joinpath("data", PACKAGED).read_text(encoding="utf-8")
        return CoOccurrence.from_json(json.loads(text), f"packaged {PACKAGED}")
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"{p}: no such co-occurrence file") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{p}:{e.lineno}: invalid JSON: {e.msg}") from None
    return CoOccurrence.from_json(data, str(p))
