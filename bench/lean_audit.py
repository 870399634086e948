"""Audit torch's headers for the lean host build (judge/build/lean.py): writes the table the judge needs.

The lean build compiles a bound candidate's host TU against fewer headers than torch/extension.h: of torch/all.h's own
headers only `lean.KEPT` (torch/types.h, torch/cuda.h), no pybind11, and the standard headers and Python.h. That
is only the same program if nothing the candidate's code names is declared in the headers left out. This script
lists, with libclang, every declaration those headers add (the files torch/extension.h reaches and the lean set
does not), and sorts the names into what the judge's guard needs:

- `blocked`: a host TU naming one of these is not built lean. Functions and function templates at namespace scope
  in any namespace the lean set already has (ADL can reach those from any argument type), every declaration in the
  namespaces candidates' code and torch's argument types live in (global, std, at, c10, torch, and any namespace a
  using-directive or alias makes reachable), and macros the left-out headers define or change.
- `scoped`: other declarations (namespaces new to the lean set among them) in deeper namespaces (torch::jit::Foo):
  blocked only when the code also names one of that namespace's own components (jit), which reaching them by name
  requires.
- `adl`: functions in deeper namespaces the lean set declares types in: as `scoped`, and also where the code calls
  the name unqualified (argument-dependent lookup can find them from a lean type).
- Redeclarations of entities the lean set declares (a forward declaration, a using-declaration of a lean entity,
  an out-of-line member definition) are left out of both: they add no new entity. A missing inline definition fails
  the build or the import (undefined symbol), and the build falls back.
- `review`: template specializations and using-directives in the left-out headers, for a person to check that
  none specializes a lean template for a lean type. Printed; the table records them.

The table is keyed by a digest of the audited torch headers; the judge uses the lean build only where the installed
headers match it. libclang is needed here only (`pip install libclang`), not by the judge.

    python bench/lean_audit.py --out src/kernelzero/judge/build/lean_tables/           # the installed torch
    python bench/lean_audit.py --torch-include /tmp/t211/x/torch/include --torch-version 2.11.0 --std c++17 --out ...
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from kernelzero.judge.build.lean import KEPT, TOP_NAMESPACES, fingerprint, table_name  # noqa: E402

FUNCTION_KINDS = {"FUNCTION_DECL", "FUNCTION_TEMPLATE", "CONVERSION_FUNCTION"}
SPECIALIZATION_KINDS = {"CLASS_TEMPLATE_PARTIAL_SPECIALIZATION"}
TYPE_KINDS = {"CLASS_DECL", "STRUCT_DECL", "UNION_DECL", "ENUM_DECL", "CLASS_TEMPLATE", "TYPEDEF_DECL",
              "TYPE_ALIAS_DECL", "TYPE_ALIAS_TEMPLATE_DECL"}


def gcc_include_dirs(cxx: str) -> list[str]:
    err = subprocess.run([cxx, "-E", "-x", "c++", "-", "-v"], input="", capture_output=True, text=True).stderr
    dirs, on = [], False
    for line in err.splitlines():
        if line.startswith("#include <...> search starts here"):
            on = True
        elif line.startswith("End of search list"):
            on = False
        elif on:
            dirs.append(line.strip())
    return dirs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--torch-include", default=None, help="torch's include dir (default: the installed torch's)")
    ap.add_argument("--torch-version", default=None, help="the version those headers belong to (default: installed)")
    ap.add_argument("--python-include", default=None, help="Python.h's dir (default: this Python's)")
    ap.add_argument("--std", default=None, help="-std= value (default: c++20 from torch 2.12 on, else c++17, as their "
                    "ninja files use)")  # fmt: skip
    ap.add_argument("--cxx", default="g++", help="compiler whose standard library headers and macros to use")
    ap.add_argument("--extra-include", action="append", default=[], help="another -isystem dir (stub headers)")
    ap.add_argument("--out", required=True, help="directory to write the table into")
    ap.add_argument("--why", default="", help="comma-separated names: print the declarations that list them")
    args = ap.parse_args()

    import sysconfig

    import clang.cindex as ci
    import torch

    include = Path(args.torch_include or Path(torch.__file__).parent / "include").resolve()
    version = args.torch_version or torch.__version__.split("+")[0]
    std = args.std or ("c++20" if tuple(int(x) for x in version.split(".")[:2]) >= (2, 12) else "c++17")
    pyinc = args.python_include or sysconfig.get_paths()["include"]
    gcc = gcc_include_dirs(args.cxx)
    flags = [f"-std={std}", "-D_GLIBCXX_USE_CXX11_ABI=1", "-DTORCH_API_INCLUDE_EXTENSION_H",
             "-isystem", str(include), "-isystem", str(include / "torch/csrc/api/include"), "-isystem", pyinc,
             *[x for d in args.extra_include for x in ("-isystem", d)]]  # fmt: skip
    work = Path(tempfile.mkdtemp(prefix="kz-lean-audit-"))
    index = ci.Index.create()

    def parse(text: str, name: str):
        path = work / name
        path.write_text(text)
        t0 = time.monotonic()
        tu = index.parse(str(path), args=["-x", "c++", *flags, *[x for d in gcc for x in ("-isystem", d)]],
                         options=ci.TranslationUnit.PARSE_SKIP_FUNCTION_BODIES)  # fmt: skip
        errors = [str(d) for d in tu.diagnostics if d.severity >= ci.Diagnostic.Error]
        if errors:
            sys.exit(f"lean_audit: {name} does not parse: {errors[:3]}")
        print(f"parsed {name} in {time.monotonic() - t0:.1f} s", file=sys.stderr)
        return tu, {str(i.include.name) for i in tu.get_includes()}

    full, full_files = parse("#include <torch/extension.h>\n", "full.cpp")
    # the lean set: all.h's own includes that lean.KEPT names, the standard headers torch includes, and Python.h
    all_h = (include / "torch/csrc/api/include/torch/all.h").read_text()
    all_includes = re.findall(r"#include <(torch/\w+\.h)>", all_h)
    torch_includes = [h for h in all_includes if h in KEPT]
    if sorted(torch_includes) != sorted(KEPT):
        sys.exit(f"lean_audit: torch/all.h does not include {sorted(set(KEPT) - set(torch_includes))}")
    # and the standard and Python headers torch's own files include (their content is not torch's to audit)
    dirs = [*gcc, pyinc]
    def spelled(name: str) -> str | None:  # as an #include <...> names it: relative to its deepest search dir
        d = max((d for d in dirs if name.startswith(d + "/")), key=len, default=None)
        return Path(name).relative_to(d).as_posix() if d else None

    outside = sorted({spelled(str(i.include.name)) for i in full.get_includes()
                      if str(i.source.name).startswith(str(include))} - {None})  # fmt: skip
    includes = [*outside, *torch_includes, "Python.h"]
    lean, lean_files = parse("".join(f"#include <{h}>\n" for h in includes), "lean.cpp")
    extra = full_files - lean_files
    print(f"{len(extra)} files only in the full set ({len(full_files)} vs {len(lean_files)})", file=sys.stderr)
    stray = sorted(f for f in extra if not f.startswith(str(include)))
    if stray:
        sys.exit(f"lean_audit: files outside torch's include dir only in the full set: {stray[:5]}")

    def in_lean(cursor) -> bool:
        loc = cursor.location.file
        return loc is not None and str(loc.name) in lean_files

    lean_namespaces: set[str] = set()
    top = set(TOP_NAMESPACES)
    blocked: set[str] = set()
    scoped: dict[str, set[tuple[str, ...]]] = {}
    adl: dict[str, set[tuple[str, ...]]] = {}
    review: list[str] = []
    decls: list[tuple[tuple[str, ...], object]] = []
    typed: set[str] = set()  # namespaces the lean set declares types in (ADL can reach their functions)

    def qualified(cursor) -> str:
        parts, p = [], cursor.referenced if cursor.referenced is not None else cursor
        while p is not None and p.kind != ci.CursorKind.TRANSLATION_UNIT:
            parts.append(p.spelling)
            p = p.semantic_parent
        return "::".join(reversed(parts))

    def walk(cursor, path: tuple[str, ...], collect: bool) -> None:
        for c in cursor.get_children():
            kind = c.kind.name
            if kind == "LINKAGE_SPEC":
                walk(c, path, collect)
            elif kind == "NAMESPACE":
                inline = any(t.spelling == "inline" for t in list(c.get_tokens())[:2])
                sub = path if inline else (*path, c.spelling)
                if not collect:
                    lean_namespaces.add("::".join(sub))
                elif not in_lean(c) and "::".join(sub) not in lean_namespaces | {"::".join(path)}:
                    if "::".join(path) in lean_namespaces | {""}:
                        decls.append((path, c))  # a namespace new to one the lean set has: its name, like a type's
                walk(c, sub, collect)
            elif kind in ("USING_DIRECTIVE", "NAMESPACE_ALIAS") and (kind == "USING_DIRECTIVE" or not collect):
                refs = [x for x in c.get_children() if x.kind.name == "NAMESPACE_REF"]
                target = qualified(refs[-1]) if refs else ""
                here = "::".join(path) in lean_namespaces | {""}
                if (kind == "USING_DIRECTIVE" and here) or target in lean_namespaces:
                    top.add(target)  # its names reachable without its own: treated like the top namespaces
                # (a using-directive in a namespace new to the lean set acts only through that namespace's name)
                if collect and not in_lean(c):
                    review.append(f"{kind} {'::'.join(path)} -> {target} ({c.location.file}:{c.location.line})")
            elif collect and not in_lean(c):  # in a namespace new to the lean set only if reachable another way
                decls.append((path, c))
            elif not collect and kind in TYPE_KINDS:
                typed.add("::".join(path))

    walk(lean.cursor, (), collect=False)
    walk(full.cursor, (), collect=True)
    for path, c in decls:
        kind, name = c.kind.name, c.spelling
        if not name or kind in ("STATIC_ASSERT", "VISIBILITY_ATTR", "UNEXPOSED_DECL"):
            continue
        if c.semantic_parent is not None and c.semantic_parent.kind.is_declaration() and \
                c.semantic_parent.kind.name not in ("NAMESPACE", "TRANSLATION_UNIT", "LINKAGE_SPEC"):
            continue  # an out-of-line member definition: found only through its class
        target = c.canonical
        if kind == "USING_DECLARATION":  # what it names: every declaration its last reference stands for
            ref = list(c.get_children())[-1] if list(c.get_children()) else c
            n = ci.conf.lib.clang_getNumOverloadedDecls(ref)
            named = [ci.conf.lib.clang_getOverloadedDecl(ref, k) for k in range(n)] or [ref.referenced]
            if all(d is not None and in_lean(d.canonical) for d in named):
                continue  # names only lean entities
        elif target is not None and in_lean(target):
            continue  # a redeclaration of a lean entity
        if kind in SPECIALIZATION_KINDS or (kind in ("STRUCT_DECL", "CLASS_DECL") and "<" in c.displayname):
            review.append(f"{kind} {'::'.join((*path, c.displayname))} ({c.location.file}:{c.location.line})")
        names = [name]
        if kind == "ENUM_DECL" and not c.is_scoped_enum():
            names += [e.spelling for e in c.get_children() if e.kind.name == "ENUM_CONSTANT_DECL"]
        ns = "::".join(path)
        if ns not in lean_namespaces | top:
            continue  # in a namespace the lean set lacks: reached only through its name, blocked above
        for n in names:
            if n in args.why.split(","):
                print(f"why {n}: {kind} in {ns} ({c.location.file}:{c.location.line})", file=sys.stderr)
            comps = tuple(p for p in path if p not in {"", *TOP_NAMESPACES})
            if ns in top:
                blocked.add(n)
            elif kind in FUNCTION_KINDS and ns in typed:  # by name, or unqualified by ADL from a lean type
                adl.setdefault(n, set()).add(comps)
            else:
                scoped.setdefault(n, set()).add(comps)

    def macros(text: str) -> dict[str, str]:
        path = work / "m.cpp"
        path.write_text(text)
        out = subprocess.run([args.cxx, "-dM", "-E", *flags, str(path)], capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit(f"lean_audit: {args.cxx} -dM failed: {out.stderr[-400:]}")
        return {m.group(1): line for line in out.stdout.splitlines() if (m := re.match(r"#define (\w+)", line))}

    full_m = macros("#include <torch/extension.h>\n")
    lean_m = macros("".join(f"#include <{h}>\n" for h in includes))
    changed = {n for n in full_m.keys() | lean_m.keys() if full_m.get(n) != lean_m.get(n)}
    blocked |= changed
    table = {"torch": version, "std": std, "includes": includes, "left_out": sorted(set(all_includes) - set(KEPT)),
             "fingerprint": fingerprint(include), "blocked": sorted(blocked),
             "scoped": {n: sorted(sorted(c) for c in v) for n, v in sorted(scoped.items())},
             "adl": {n: sorted(sorted(c) for c in v) for n, v in sorted(adl.items())},
             "review": sorted(set(review)), "macros_changed": len(changed)}  # fmt: skip
    out = Path(args.out) / table_name(version)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(table, indent=0) + "\n")
    print(f"{out}: {len(table['blocked'])} blocked names ({len(changed)} macros), {len(scoped)} scoped, "
          f"{len(adl)} ADL, "
          f"fingerprint of {include}; for review:", file=sys.stderr)  # fmt: skip
    for line in table["review"]:
        print("  " + line, file=sys.stderr)


if __name__ == "__main__":
    main()
