"""The Task record and loading of KernelBench-format task files and JSONL corpora (parsed, never executed).

A task is one Python source defining `class Model` (with `forward`), `get_inputs()` and `get_init_inputs()`,
KernelBench's format. `load_tasks` accepts:

- one `.py` file;
- a folder of `.py` files (a folder named `levelN` sets `level=N`);
- a KernelBench checkout: a folder holding `level1`..`level4` folders, or holding a `KernelBench/` folder that does;
- a `.jsonl` corpus, one task record per line, as `write_corpus` writes it.

`seed_tasks` gives the small set shipped in the package (`kernelzero/data/seed_tasks/`), which the loop falls back
on when the pool has no task for a Coder phase and which the SFT cold start pairs with their solutions.

Every file is checked with `ast` only. A malformed file is never skipped: loading collects one `TaskFormatError`
per bad file (its str is one line, `FILE:LINE: what is wrong`) and raises them together as a `TaskLoadError`.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path

from kernelzero.apis.extract import extract_apis
from kernelzero.syntax import parse

ORIGINS = ("kernelbench", "proposed", "user", "recycled")
REQUIRED_FUNCTIONS = ("get_inputs", "get_init_inputs")
_LEVEL_DIR = re.compile(r"level(\d+)")


@dataclass(frozen=True)
class Task:
    """One KernelBench-format module: `Model`, `get_inputs`, `get_init_inputs`."""

    name: str
    source: str
    origin: str = "user"  # kernelbench | proposed | user | recycled
    level: int | None = None
    apis: tuple[str, ...] = field(default=())
    path: str | None = None

    @classmethod
    def from_file(cls, path: str | Path, **kw) -> Task:
        p = Path(path)
        return cls(name=p.stem, source=p.read_text(), path=str(p), **kw)


class TaskFormatError(ValueError):
    """A task source (or corpus line) that is not a usable task. str(): `FILE:LINE: what is wrong`, one line."""

    def __init__(self, where: str, line: int, message: str):
        self.where, self.line, self.message = where, line, message
        super().__init__(f"{where}:{line}: {message}")


class TaskLoadError(ValueError):
    """Every malformed file met while loading; str() is one `FILE:LINE: ...` line per error."""

    def __init__(self, errors: list[TaskFormatError]):
        self.errors = list(errors)
        super().__init__("\n".join(str(e) for e in self.errors))


def parse_task(
    source: str,
    name: str,
    *,
    origin: str = "user",
    level: int | None = None,
    path: str | None = None,
    apis: tuple[str, ...] | None = None,
) -> Task:
    """Validate a task source with `ast` and build its Task; `apis` default to what the extractor finds.

    Raises TaskFormatError naming the file (`path`, else `name`), the line, and what is missing or malformed.
    """
    where = path or name
    if origin not in ORIGINS:
        raise ValueError(f"origin {origin!r} is not one of {', '.join(ORIGINS)}")
    tree = check_source(source, where)
    found = extract_apis(tree) if apis is None else tuple(apis)
    return Task(name=name, source=source, origin=origin, level=level, apis=found, path=path)


def check_source(source: str, where: str) -> ast.Module:
    """Parse a task source and check it defines the three names; return its tree or raise TaskFormatError."""
    try:
        tree = parse(source, filename=where)
    except SyntaxError as e:
        raise TaskFormatError(where, e.lineno or 1, f"syntax error: {e.msg}") from None
    except ValueError as e:  # null bytes in the source
        raise TaskFormatError(where, 1, f"not Python source: {e}") from None
    defined: dict[str, ast.stmt] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            defined[node.name] = node
        elif isinstance(node, ast.Assign):  # `get_init_inputs = get_inputs` or a lambda
            for t in node.targets:
                if isinstance(t, ast.Name):
                    defined[t.id] = node
    missing = [n for n in ("Model", *REQUIRED_FUNCTIONS) if n not in defined]
    if missing:
        what = ", ".join(("class " if n == "Model" else "function ") + n for n in missing)
        raise TaskFormatError(where, 1, f"missing {what} (a task defines class Model, get_inputs, get_init_inputs)")
    model = defined["Model"]
    if not isinstance(model, ast.ClassDef):
        raise TaskFormatError(where, model.lineno, "Model must be a class (an nn.Module subclass)")
    if not any(isinstance(n, ast.FunctionDef) and n.name == "forward" for n in model.body):
        raise TaskFormatError(where, model.lineno, "class Model has no forward method")
    for fname in REQUIRED_FUNCTIONS:
        fn = defined[fname]
        if isinstance(fn, ast.ClassDef):
            raise TaskFormatError(where, fn.lineno, f"{fname} must be a function, not a class")
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            args = fn.args
            required = len(args.posonlyargs) + len(args.args) - len(args.defaults)
            if required > 0 or any(d is None for d in args.kw_defaults):
                raise TaskFormatError(where, fn.lineno, f"{fname} must be callable with no arguments")
    return tree


def load_task(path: str | Path, *, origin: str | None = None, level: int | None = None) -> Task:
    """One `.py` task file; level and origin default to what its folder says (`KernelBench/levelN`)."""
    p = Path(path)
    try:
        source = p.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise TaskFormatError(str(p), 1, "not UTF-8 text") from None
    except OSError as e:
        raise TaskFormatError(str(p), 1, f"cannot read: {e.strerror}") from None
    folder_level = _folder_level(p.parent)
    if origin is None:
        origin = "kernelbench" if folder_level is not None and p.parent.parent.name == "KernelBench" else "user"
    return parse_task(source, p.stem, origin=origin, level=level if level is not None else folder_level, path=str(p))


def _folder_level(folder: Path) -> int | None:
    m = _LEVEL_DIR.fullmatch(folder.name)
    return int(m.group(1)) if m else None


def _level_dirs(folder: Path) -> list[Path]:
    return sorted((d for d in folder.iterdir() if d.is_dir() and _folder_level(d) is not None), key=_folder_level)


def _order(p: Path) -> tuple[int, str]:
    """KernelBench's order: by the problem number that starts the file name (`10_...` after `9_...`)."""
    head = p.stem.split("_", 1)[0]
    return (int(head) if head.isdigit() else 1 << 30, p.stem)


def _load_folder(folder: Path, origin: str | None, level: int | None, errors: list[TaskFormatError]) -> list[Task]:
    tasks = []
    files = sorted((f for f in folder.glob("*.py") if f.name != "__init__.py"), key=_order)
    for f in files:
        try:
            tasks.append(load_task(f, origin=origin, level=level))
        except TaskFormatError as e:
            errors.append(e)
    return tasks


def kernelbench_root(path: str | Path) -> Path | None:
    """The folder holding `levelN` folders if `path` is a KernelBench checkout (its root or its KernelBench/)."""
    p = Path(path)
    for candidate in (p, p / "KernelBench"):
        if candidate.is_dir() and _level_dirs(candidate):
            return candidate
    return None


def load_tasks(path: str | Path, *, levels: tuple[int, ...] | None = None) -> list[Task]:
    """Every task under `path` (file, folder, KernelBench checkout or `.jsonl` corpus; see the module docstring).

    `levels` keeps only tasks of those levels. Raises TaskLoadError listing every malformed file (or corpus line),
    and a one-line FileNotFoundError/ValueError when the path is missing or holds no tasks at all.
    """
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"{p}: no such file or folder")
    errors: list[TaskFormatError] = []
    if p.is_file() and p.suffix == ".jsonl":
        tasks = read_corpus(p)
    elif p.is_file():
        try:
            tasks = [load_task(p)]
        except TaskFormatError as e:
            errors.append(e)
            tasks = []
    else:
        root = kernelbench_root(p)
        if root is not None:
            tasks = []
            for d in _level_dirs(root):
                if levels is None or _folder_level(d) in levels:
                    tasks += _load_folder(d, "kernelbench", _folder_level(d), errors)
        else:
            tasks = _load_folder(p, None, None, errors)
            if not tasks and not errors:
                raise ValueError(f"{p}: no task files (*.py), level1..level4 folders or KernelBench/ folder")
    if errors:
        raise TaskLoadError(errors)
    if levels is not None:
        tasks = [t for t in tasks if t.level in levels]
    return tasks


def task_to_record(task: Task) -> dict:
    """The JSON-ready dict of a task: its fields, `apis` as a list."""
    return {"name": task.name, "level": task.level, "origin": task.origin, "apis": list(task.apis),
            "path": task.path, "source": task.source}  # fmt: skip


def task_from_record(record: object, where: str, line: int) -> Task:
    """A Task from one corpus record; the source is validated like a file's. Errors name the corpus line.

    A record's `apis` are kept as written (a proposed task records the set it was asked for); without them the
    extractor fills them in.
    """
    if not isinstance(record, dict):
        raise TaskFormatError(where, line, f"expected a JSON object, got {type(record).__name__}")
    for key, kind in (("name", str), ("source", str)):
        if not isinstance(record.get(key), kind):
            raise TaskFormatError(where, line, f"field {key!r} missing or not a {kind.__name__}")
    name = record["name"]
    level, origin, apis = record.get("level"), record.get("origin", "user"), record.get("apis")
    if level is not None and (not isinstance(level, int) or isinstance(level, bool)):
        raise TaskFormatError(where, line, f"task {name!r}: field 'level' must be an integer or null")
    if origin not in ORIGINS:
        raise TaskFormatError(where, line, f"task {name!r}: origin {origin!r} is not one of {', '.join(ORIGINS)}")
    if apis is not None and not (isinstance(apis, list) and all(isinstance(a, str) for a in apis)):
        raise TaskFormatError(where, line, f"task {name!r}: field 'apis' must be a list of strings")
    try:
        return parse_task(record["source"], name, origin=origin, level=level, path=record.get("path"),
                          apis=None if apis is None else tuple(apis))  # fmt: skip
    except TaskFormatError as e:
        raise TaskFormatError(where, line, f"task {name!r}: source line {e.line}: {e.message}") from None


def read_corpus(path: str | Path) -> list[Task]:
    """Tasks from a JSONL corpus. Raises TaskLoadError naming every bad line (and duplicate names per level)."""
    p = Path(path)
    tasks: list[Task] = []
    errors: list[TaskFormatError] = []
    seen: dict[tuple[str, int | None], int] = {}
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError:
        raise TaskLoadError([TaskFormatError(str(p), 1, "not UTF-8 text")]) from None
    for i, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            task = task_from_record(json.loads(text), str(p), i)
        except json.JSONDecodeError as e:
            errors.append(TaskFormatError(str(p), i, f"invalid JSON: {e.msg} (column {e.colno})"))
            continue
        except TaskFormatError as e:
            errors.append(e)
            continue
        key = (task.name, task.level)
        if key in seen:
            errors.append(
                TaskFormatError(str(p), i, f"task {task.name!r} (level {task.level}) repeats line {seen[key]}")
            )
            continue
        seen[key] = i
        tasks.append(task)
    if errors:
        raise TaskLoadError(errors)
    return tasks


def write_corpus(tasks: list[Task], path: str | Path) -> Path:
    """Write tasks as JSONL (one `task_to_record` per line), atomically: readers never see half a corpus."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as f:
        for task in tasks:
            f.write(json.dumps(task_to_record(task), ensure_ascii=False) + "\n")
    tmp.replace(p)
    return p


SEED_PREFIX = "seed-"  # seed tasks are named `seed-<name>` in the loop's records


def seed_tasks(spec: str) -> list[Task]:
    """The fallback Coder tasks: `builtin` (shipped in the package), a folder, a .jsonl corpus, or `none`. Each is
    named `seed-<name>`, with origin `user` and no path."""
    if spec == "none":
        return []
    if spec == "builtin":
        folder = resources.files("kernelzero").joinpath("data", "seed_tasks")
        with resources.as_file(folder) as path:
            tasks = load_tasks(path)
    elif spec.endswith(".jsonl"):
        tasks = read_corpus(spec)
    else:
        tasks = load_tasks(spec)
    return [replace(t, name=f"{SEED_PREFIX}{t.name}", origin="user", path=None) for t in tasks]
