"""Near-duplicate detection for task sources: a normalised AST hash (exact structure) and n-gram similarity.

Both views ignore what does not change the computation: comments, docstrings, layout, local identifier names and
numeric literals (a task with other sizes is the same task). The hash catches structural copies in O(1); the
Jaccard similarity of normalised token n-grams (the Proposer reward's own measure, `rewards.proposer`) catches near
copies with an op added or removed. `SimilarityIndex` holds one set of sources (the pool, or a KernelBench
checkout) and answers "what is the closest entry to this source, and how close".
"""

from __future__ import annotations

import ast
import builtins
import hashlib
import keyword
from dataclasses import dataclass

from kernelzero.rewards.proposer import jaccard, ngram_set, normalised_tokens
from kernelzero.syntax import parse

_KEPT = frozenset(keyword.kwlist) | frozenset(dir(builtins)) | {"torch", "nn", "F", "self", "Model"}


class _Normaliser(ast.NodeTransformer):
    """Rename local identifiers to `ID` (attributes of modules such as `torch.relu` stay), numbers to 0, and drop
    docstrings. `self.x` attributes are locals too: `self.conv` and `self.c` are the same thing."""

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return ast.copy_location(ast.Name(id=node.id if node.id in _KEPT else "ID", ctx=node.ctx), node)

    def visit_arg(self, node: ast.arg) -> ast.AST:
        return ast.copy_location(ast.arg(arg="ID", annotation=None), node)

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.value, ast.Name) and node.value.id == "self":
            node.attr = "ID"
        return node

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        if isinstance(node.value, (int, float, complex)) and not isinstance(node.value, bool):
            return ast.copy_location(ast.Constant(value=0), node)
        return node

    def _named(self, node):
        node.name = "Model" if node.name == "Model" else "ID"
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
            if isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
        if not isinstance(node, ast.ClassDef):
            node.returns = None  # annotations say nothing about the computation
        self.generic_visit(node)
        return node

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _named


def ast_hash(source: str) -> str | None:
    """SHA-1 of the normalised AST dump; None when the source does not parse. Imports are dropped (they only say
    how names are spelled, which the extractor already canonicalises)."""
    try:
        tree = parse(source)
    except (SyntaxError, ValueError):
        return None
    tree.body = [n for n in tree.body if not isinstance(n, (ast.Import, ast.ImportFrom))]
    if tree.body and isinstance(tree.body[0], ast.Expr) and isinstance(getattr(tree.body[0], "value", None),
                                                                       ast.Constant):  # fmt: skip
        tree.body = tree.body[1:]
    dump = ast.dump(_Normaliser().visit(tree), annotate_fields=False, include_attributes=False)
    return hashlib.sha1(dump.encode()).hexdigest()


def grams(source: str, n: int = 3) -> frozenset:
    """The normalised token n-grams of a source (numbers included: the n-gram view keeps sizes, the hash does not)."""
    return ngram_set(normalised_tokens(source), n)


@dataclass(frozen=True)
class Match:
    """The closest entry of an index to a query source."""

    name: str
    similarity: float  # Jaccard of n-gram sets, 1.0 for an AST-hash match
    exact: bool  # True when the normalised AST hashes are equal


class SimilarityIndex:
    """Sources by name, with their hash and n-gram set precomputed; `closest` is a linear scan (pools of
    thousands: fine; KernelBench has ~270 tasks)."""

    def __init__(self, ngram: int = 3):
        self.ngram = ngram
        self._hashes: dict[str, str] = {}
        self._grams: dict[str, frozenset] = {}

    def __len__(self) -> int:
        return len(self._grams)

    def add(self, name: str, source: str) -> None:
        h = ast_hash(source)
        if h is not None:
            self._hashes.setdefault(h, name)
        self._grams[name] = grams(source, self.ngram)

    def remove(self, name: str) -> None:
        self._grams.pop(name, None)
        self._hashes = {h: n for h, n in self._hashes.items() if n != name}

    def closest(self, source: str) -> Match | None:
        """The most similar entry (an exact AST match wins), or None for an empty index."""
        h = ast_hash(source)
        if h is not None and h in self._hashes:
            return Match(self._hashes[h], 1.0, True)
        query = grams(source, self.ngram)
        best: Match | None = None
        for name, g in self._grams.items():
            s = jaccard(query, g)
            if best is None or s > best.similarity:
                best = Match(name, s, False)
        return best
