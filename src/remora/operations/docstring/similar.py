"""Summaries of similar documented code, shown to the model as examples of the words wanted.

A small model writes a better summary when it sees how maintainers summed up code like the
one in front of it. The host finds such code by BM25 over words of the definitions: the
parts of the name (weighted most), of the parameters, and of the names the body uses. The
project's own documented functions come first (its words and conventions), then an index
of documented functions from the pinned training corpus shipped with Remora
(:data:`SHIPPED_INDEX`, built by ``remora train index``: data, not code). Only summaries a
maintainer wrote are shown (:func:`~.corpus.summary_problem` accepts them), never the
definition's own, and from the shipped index none of a definition with the same name,
which may be this very function in another copy.
"""

from __future__ import annotations

import ast
import gzip
import hashlib
import json
import math
import re
from collections import Counter, OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from remora import pyast
from remora.operations.base import CorpusFile
from remora.operations.docstring.corpus import summary_problem
from remora.tools.capabilities.project import is_test_file
from remora.tools.capabilities.registry import CapabilityContext
from remora.tools.capabilities.store_io import scan_text, walk_files

SHIPPED_INDEX = Path(__file__).resolve().parent / "data" / "summaries.json.gz"
"""The index of documented functions from the pinned training corpus."""
INDEX_FORMAT = 1
SHOWN = 3
"""How many similar summaries the model sees."""
MAX_PROJECT_FILES = 200
MAX_TOKENS = 48
"""Words kept of one definition (name and parameters first), so a long body does not
outweigh its name."""
_NAME_WEIGHT = 3
_PARAM_WEIGHT = 2
_K1 = 1.2
_B = 0.75
_PARTS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_IGNORED = frozenset(
    [
        *("self", "cls", "args", "kwargs", "kw", "return", "none", "true", "false", "get"),
        *("is", "to", "of", "in", "and", "or", "not", "the", "a", "an", "it", "obj", "x"),
    ]
)
_Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


@dataclass(frozen=True)
class Documented:
    """A documented definition: where it is, how it is called and its summary line."""

    path: str
    qualname: str
    signature: str
    summary: str
    tokens: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.qualname.rsplit(".", 1)[-1]

    def shown(self) -> str:
        return f"{self.signature}: {self.summary}"


def words_of(name: str) -> list[str]:
    """The lower-case words of an identifier (``parse_due_date``, ``HTTPServer``)."""
    return [
        part
        for part in (found.lower() for found in _PARTS.findall(name))
        if len(part) > 1 and part not in _IGNORED
    ]


def definition_tokens(node: _Definition) -> tuple[str, ...]:
    """The words BM25 compares a definition by: its name's (three times), its parameters'
    (twice), then the names and attributes its body uses, at most :data:`MAX_TOKENS`."""
    tokens = words_of(node.name) * _NAME_WEIGHT
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        arguments = node.args
        params = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
        for param in params:
            tokens += words_of(param.arg) * _PARAM_WEIGHT
    body: list[str] = []
    for child in ast.walk(ast.Module(body=list(node.body), type_ignores=[])):
        if isinstance(child, ast.Name):
            body += words_of(child.id)
        elif isinstance(child, ast.Attribute):
            body += words_of(child.attr)
    return tuple([*tokens, *body][:MAX_TOKENS])


def signature_of(node: _Definition) -> str:
    """``name(a, b, *rest)`` as the model reads it: parameter names only."""
    if isinstance(node, ast.ClassDef):
        return node.name
    arguments = node.args
    names = [param.arg for param in [*arguments.posonlyargs, *arguments.args]]
    if arguments.vararg is not None:
        names.append(f"*{arguments.vararg.arg}")
    names += [param.arg for param in arguments.kwonlyargs]
    if arguments.kwarg is not None:
        names.append(f"**{arguments.kwarg.arg}")
    return f"{node.name}({', '.join(name for name in names if name not in ('self', 'cls'))})"


def documented_in(text: str, path: str) -> list[Documented]:
    """The public definitions of a module whose docstring opens with a summary to learn
    from; none when it does not parse."""
    try:
        tree = pyast.parse(text)
    except (SyntaxError, ValueError):
        return []
    found: list[Documented] = []

    def visit(scope: Iterable[ast.stmt], prefix: str) -> None:
        for node in scope:
            if not isinstance(node, _Definition) or node.name.startswith("_"):
                continue
            qualname = f"{prefix}{node.name}"
            docstring = ast.get_docstring(node)
            if docstring and summary_problem(docstring, node.name) is None:
                summary = docstring.strip().split("\n")[0].strip()
                found.append(
                    Documented(path, qualname, signature_of(node), summary, definition_tokens(node))
                )
            if isinstance(node, ast.ClassDef):
                visit(node.body, f"{qualname}.")

    visit(tree.body, "")
    return found


class SummaryIndex:
    """BM25 over documented definitions (Okapi, k1 1.2, b 0.75)."""

    def __init__(self, entries: Sequence[Documented]) -> None:
        self.entries = list(entries)
        self._postings: dict[str, list[tuple[int, int]]] = {}
        self._lengths = [len(entry.tokens) for entry in self.entries]
        for index, entry in enumerate(self.entries):
            for token, count in Counter(entry.tokens).items():
                self._postings.setdefault(token, []).append((index, count))
        self._average = sum(self._lengths) / len(self._lengths) if self._lengths else 0.0

    def search(self, query: Sequence[str], limit: int) -> list[tuple[float, Documented]]:
        """The best ``limit`` entries for ``query`` words, best first, each with its score;
        only entries sharing a word of the name or parameters are candidates."""
        total = len(self.entries)
        scores: dict[int, float] = {}
        for token in set(query):
            postings = self._postings.get(token)
            if not postings:
                continue
            idf = math.log(1 + (total - len(postings) + 0.5) / (len(postings) + 0.5))
            for index, count in postings:
                length = self._lengths[index] / (self._average or 1.0)
                weight = count * (_K1 + 1) / (count + _K1 * (1 - _B + _B * length))
                scores[index] = scores.get(index, 0.0) + idf * weight
        ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
        return [(score, self.entries[index]) for index, score in ranked[:limit]]


def similar_summaries(
    ctx: CapabilityContext, relative: str, node: _Definition, qualname: str
) -> list[Documented]:
    """Up to :data:`SHOWN` documented definitions like ``node``: the project's first, then
    the shipped index's (none of the same name). Each shares a word of its name or
    parameters with ``node``'s."""
    query = definition_tokens(node)
    own = set(words_of(node.name))
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        for param in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]:
            own.update(words_of(param.arg))
    chosen: list[Documented] = []
    seen: set[str] = set()
    for index, keep in (
        (_project_index(ctx), lambda entry: (entry.path, entry.qualname) != (relative, qualname)),
        (shipped_index(), lambda entry: entry.name != node.name),
    ):
        for _, entry in index.search(query, 4 * SHOWN):
            if len(chosen) >= SHOWN:
                return chosen
            if keep(entry) and own & set(entry.tokens) and entry.summary not in seen:
                seen.add(entry.summary)
                chosen.append(entry)
    return chosen


_PARSED: OrderedDict[str, list[Documented]] = OrderedDict()
_PARSED_LIMIT = 2_000


def _project_index(ctx: CapabilityContext) -> SummaryIndex:
    """The project's documented definitions (tests left out), indexed once per job; each
    file is parsed once per content across jobs."""
    cached: SummaryIndex | None = ctx.state.get(f"{__name__}.project")
    if cached is not None:
        return cached
    entries: list[Documented] = []
    files = [path for path in walk_files(ctx, "", (".py",)) if not is_test_file(path)]
    for path in sorted(files)[:MAX_PROJECT_FILES]:
        text = scan_text(ctx, path)
        if text is None:
            continue
        key = hashlib.sha256(f"{path}\0{text}".encode()).hexdigest()
        if key not in _PARSED:
            _PARSED[key] = documented_in(text, path)
            while len(_PARSED) > _PARSED_LIMIT:
                _PARSED.popitem(last=False)
        entries += _PARSED[key]
    index = SummaryIndex(entries)
    ctx.state[f"{__name__}.project"] = index
    return index


@cache
def shipped_index() -> SummaryIndex:
    """The shipped index (empty when Remora ships none, or one of another format)."""
    try:
        data = json.loads(gzip.decompress(SHIPPED_INDEX.read_bytes()))
    except (OSError, ValueError):
        return SummaryIndex([])
    if not isinstance(data, dict) or data.get("format") != INDEX_FORMAT:
        return SummaryIndex([])
    return SummaryIndex(
        [
            Documented(row[0], row[1], row[2], row[3], tuple(row[4].split()))
            for row in data.get("entries", [])
        ]
    )


def write_index(entries: Sequence[Documented], path: Path, sources: Sequence[str]) -> int:
    """Write ``entries`` as the index at ``path`` (gzip'd JSON, one row per entry); the
    file's size in bytes."""
    rows = [
        [entry.path, entry.qualname, entry.signature, entry.summary, " ".join(entry.tokens)]
        for entry in entries
    ]
    data = {"format": INDEX_FORMAT, "sources": list(sources), "entries": rows}
    payload = gzip.compress(
        json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode(), mtime=0
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(payload)
    return len(payload)


def build_index(files: Sequence[CorpusFile], path: Path | None = None) -> str:
    """Index the documented definitions of the corpus ``files`` at ``path`` (default: the
    shipped index) for ``remora train index``; a line that says what was written. A
    summary seen twice for one name (a vendored copy) is kept once."""
    entries: list[Documented] = []
    seen: set[tuple[str, str]] = set()
    for file in files:
        try:
            text = file.path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        for entry in documented_in(text, file.source):
            if (entry.name, entry.summary) not in seen:
                seen.add((entry.name, entry.summary))
                entries.append(entry)
    target = path or SHIPPED_INDEX
    size = write_index(entries, target, sorted({file.entry.name for file in files}))
    shipped_index.cache_clear()
    return f"{len(entries)} documented definitions from {len(files)} files, {size:,} bytes"
