"""Turn one Python source into CSTNodes with tree-sitter query packs.

A query pack is a folder of ``.scm`` files under ``queries/python/<pack>/`` whose
captures are named ``@<kind>.def`` (the definition) and ``@<kind>.name`` (its name),
kind being file, class or function. Whether a function is a method, its qualname,
its decorators and its whole-line extent are worked out here from the tree, so packs
stay declarative.

Parsing and querying one file share a time budget (``discovery.parse_timeout``):
tree-sitter's parse and query costs grow quadratically on some broken inputs (100 KB of
``(`` took tens of seconds). The parse is cancelled through its progress callback. The
query runs in bounded pieces with the clock read between them: a small subtree in one
call, a large node only for the matches starting at it (``set_max_start_depth(0)``), then
its children. (py-tree-sitter 0.26's query progress callback is not used: it crashes the
interpreter once a match has been returned.) A pattern must therefore have one root node
(DISC_003 otherwise).

Long runs of comment lines are blanked (each byte but line ends made a space) before
parsing: at every line end the grammar's scanner reads ahead through all the comment lines
that follow, so a run costs its lines times its bytes, and one parser operation can take
tens of milliseconds while tree-sitter calls the progress callback only every hundred
operations (1 MB of comments: calls seconds apart, 8 s against a 5 s budget, 3 minutes
unbounded). Blank lines are read in one pass. Offsets and lines do not move, no comment is
part of a node's extent, and node text comes from the real bytes.
"""

from __future__ import annotations

import math
import re
import time
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

import tree_sitter
import tree_sitter_python

from remora.config import NodeType
from remora.discovery.encoding import (
    DecodedSource,
    FileOffsets,
    SourceDecodeError,
    decode_source,
)
from remora.discovery.models import CSTNode, DiscoveryProblem, make_node_id, source_hash
from remora.errors import DiscoveryError

QUERY_KINDS = ("file", "class", "function")
_DEFINITIONS = ("function_definition", "class_definition")
_READ_CHUNK = 64 * 1024
_SMALL_SUBTREE = 2048
"""Nodes of a subtree queried in one call (a call's cost can grow with their square)."""


@lru_cache(maxsize=1)
def python_language() -> tree_sitter.Language:
    return tree_sitter.Language(tree_sitter_python.language())


@dataclass(frozen=True)
class QueryPack:
    """The compiled queries of one or more packs, run in a single pass per file."""

    names: tuple[str, ...]
    query: tree_sitter.Query
    kinds: frozenset[str]
    """The kinds the packs capture (a file node is kept on a timeout only if "file" is one)."""


def _pack_sources(pack: str) -> list[tuple[str, str]]:
    """(file name, text) of every .scm in a bundled pack name or a directory path."""
    path = Path(pack)
    if path.is_dir():
        return [(p.name, p.read_text(encoding="utf-8")) for p in sorted(path.glob("*.scm"))]
    root = resources.files("remora.discovery").joinpath("queries", "python", pack)
    if not root.is_dir():
        return []
    return sorted(
        (entry.name, entry.read_text(encoding="utf-8"))
        for entry in root.iterdir()
        if entry.name.endswith(".scm")
    )


@lru_cache(maxsize=16)
def load_query_pack(names: tuple[str, ...]) -> QueryPack:
    """Compile the named packs into one query; DISC_003 when a pack is missing or broken."""
    sources: list[str] = []
    kinds: set[str] = set()
    for name in names:
        files = _pack_sources(name)
        if not files:
            raise DiscoveryError(
                "DISC_003",
                f"query pack '{name}' has no .scm files",
                "use a bundled pack such as 'core' or a directory of .scm files",
            )
        for file_name, text in files:
            try:
                query = tree_sitter.Query(python_language(), text)
            except tree_sitter.QueryError as exc:
                raise DiscoveryError(
                    "DISC_003", f"query {name}/{file_name} does not compile: {exc}", "fix the query"
                ) from None
            for index in range(query.capture_count):
                capture = query.capture_name(index)
                kind, _, role = capture.partition(".")
                if kind not in QUERY_KINDS or role not in ("def", "name"):
                    raise DiscoveryError(
                        "DISC_003",
                        f"query {name}/{file_name} has capture @{capture}",
                        "captures must be @<kind>.def or @<kind>.name with kind in "
                        + ", ".join(QUERY_KINDS),
                    )
                kinds.add(kind)
            for pattern in range(query.pattern_count):
                if not query.is_pattern_rooted(pattern):
                    raise DiscoveryError(
                        "DISC_003",
                        f"query {name}/{file_name}: pattern {pattern + 1} has several top-level "
                        "nodes",
                        "give every pattern one root node, e.g. wrap siblings in their parent",
                    )
            sources.append(text)
    return QueryPack(
        names=names,
        query=tree_sitter.Query(python_language(), "\n".join(sources)),
        kinds=frozenset(kinds),
    )


def _line_bounds(source: bytes, start: int, end: int) -> tuple[int, int]:
    """Widen [start, end) to whole lines; the end excludes the line terminator."""
    line_start = source.rfind(b"\n", 0, start) + 1
    line_end = source.find(b"\n", max(end - 1, start))
    if line_end == -1:
        line_end = len(source)
    if line_end > line_start and source[line_end - 1 : line_end] == b"\r":
        line_end -= 1
    return line_start, line_end


def _line_count(body: bytes) -> int:
    """Lines of a file, as its module node spans them (a final newline ends, not starts, one)."""
    return max(body.count(b"\n") + (0 if not body or body.endswith(b"\n") else 1), 1)


def _code_end(node: tree_sitter.Node) -> tree_sitter.Node:
    """The last token that is not a comment (ast's end_lineno ignores trailing comments).

    ``children`` is listed once per level: indexing children one by one from the end
    costs quadratic time in tree-sitter, and a body may end in thousands of comments.
    """
    while node.child_count:
        for child in reversed(node.children):
            if child.type != "comment":
                node = child
                break
        else:
            break
    return node


def _first_error_line(root: tree_sitter.Node) -> int:
    """1-based line of the innermost first ERROR or MISSING node.

    Error recovery can wrap a whole file in one ERROR node; descending to the
    deepest broken child points at the line that actually confused the parser.
    """
    node = root
    while True:
        for child in node.children:
            if child.is_missing or child.has_error or child.is_error:
                node = child
                break
        else:
            return node.start_point.row + 1


def _text(body: bytes, node: tree_sitter.Node | None) -> str:
    if node is None:
        return ""
    return body[node.start_byte : node.end_byte].decode("utf-8", errors="replace")


@dataclass
class _Found:
    kind: NodeType
    name: str
    qualname: str
    start: int
    end: int
    first_line: int
    last_line: int


@dataclass(frozen=True)
class _Scope:
    """What the ancestors of a node say about it: enclosing definitions' names, the type of
    the nearest one, and whether one of them is an ERROR node."""

    names: tuple[str, ...] = ()
    enclosing: str | None = None
    in_error: bool = False

    def inside(self, node: tree_sitter.Node, body: bytes) -> _Scope:
        """The scope of ``node``'s children."""
        if node.is_error:
            return _Scope(self.names, self.enclosing, True)
        if node.type in _DEFINITIONS:
            name = _text(body, node.child_by_field_name("name"))
            return _Scope((*self.names, name), node.type, self.in_error)
        return self


class ParseTimeout(Exception):
    """Parsing or querying one file ran past its deadline."""


def parse_source(
    source: bytes,
    relative_path: str,
    pack: QueryPack,
    node_types: frozenset[str] | None = None,
    *,
    timeout: float | None = None,
) -> tuple[list[CSTNode], list[DiscoveryProblem]]:
    """All nodes of one file's bytes plus the problems met; never raises on bad input.

    The bytes are decoded as Python does (BOM, PEP 263 coding line); ones that do not
    decode give DISC_102 and no node.
    """
    try:
        decoded = decode_source(source)
    except SourceDecodeError as exc:
        problem = DiscoveryProblem(
            code="DISC_102", path=relative_path, message=exc.message, line=exc.line
        )
        return [], [problem]
    return parse_decoded(decoded, relative_path, pack, node_types, timeout=timeout)


def parse_decoded(
    decoded: DecodedSource,
    relative_path: str,
    pack: QueryPack,
    node_types: frozenset[str] | None = None,
    *,
    timeout: float | None = None,
) -> tuple[list[CSTNode], list[DiscoveryProblem]]:
    """All nodes of one decoded file; ``timeout`` seconds bound parsing and querying it.

    A syntax error is DISC_101 (the file node and the definitions outside the error are
    kept); running out of time is DISC_108 (only the file node is kept: a file that cannot
    be fully parsed still is a file).
    """
    body = decoded.text.encode("utf-8")
    deadline = time.monotonic() + timeout if timeout is not None else math.inf
    problems: list[DiscoveryProblem] = []
    try:
        tree = _parse(body, deadline)
        root = tree.root_node
        if root.has_error:
            line = _first_error_line(root)
            problems.append(
                DiscoveryProblem(
                    code="DISC_101",
                    path=relative_path,
                    message=f"syntax error near line {line}; definitions around it were skipped",
                    line=line,
                )
            )
        found = _query(root, body, pack, relative_path, deadline)
        if root.has_error and "file" in pack.kinds and all(f.kind != "file" for f in found):
            found.append(_file_found(relative_path, body))  # the root may be an ERROR node
    except ParseTimeout:
        problems.append(
            DiscoveryProblem(
                code="DISC_108",
                path=relative_path,
                message=f"not parsed within discovery.parse_timeout ({timeout:g} s); "
                "only its file node is kept",
            )
        )
        found = [_file_found(relative_path, body)] if "file" in pack.kinds else []
    return _nodes(found, decoded, body, relative_path, node_types), problems


_COMMENT_LINES = re.compile(rb"\n[ \t\f]*#[^\n]*(?:\n[ \t\f]*#[^\n]*)+")
"""Runs of lines that look like whole-line comments (some may be inside strings), each with
the line end before it: starting at a plain ``\\n`` it is searched ten times faster than
with ``^``."""
_TOKENS = re.compile(
    rb"""(?P<run>(?:^[\ \t\f]*\#[^\r\n]*\r?\n)+)
    | \#[^\r\n]*
    | \"\"\"(?:[^"\\]|\\.|"(?!""))*(?:\"\"\"|\Z)
    | '\'\'(?:[^'\\]|\\.|'(?!''))*(?:'\'\'|\Z)
    | "(?:[^"\\\r\n]|\\.)*(?:"|(?=[\r\n])|\Z)
    | '(?:[^'\\\r\n]|\\.)*(?:'|(?=[\r\n])|\Z)""",
    re.VERBOSE | re.DOTALL | re.MULTILINE,
)
"""Runs of whole-line comments, other comments and string literals, so that a ``#``
inside a string is not taken for a comment nor a quote inside a comment for a string."""
_COMMENT_RUN_COST = 10_000_000
"""Lines times bytes of a file's comment runs, summed, that parse as they are: the scanner
reads about half that many bytes for them (0.1-0.3 s). Past it the costliest runs are
blanked until the rest is under it. Real files stay under it (a 300-line licence is 5e6)
and parse unchanged: without its comments a file's error recovery, and so the definitions
kept around a syntax error, can differ."""
_BLANK = bytes(byte if byte in b"\r\n" else ord(" ") for byte in range(256))


def _run_cost(body: bytes, start: int, end: int) -> int:
    return (end - start) * body.count(b"\n", start, end)


def _blank_comment_runs(body: bytes, deadline: float) -> bytes:
    """``body`` with its costliest runs of comment lines turned into blank lines of the
    same length, so that those left cost under ``_COMMENT_RUN_COST``.

    A quick pass over what looks like comment lines settles ordinary files; the runs are
    then found with strings told apart, since blanking a line inside a string could end
    the string. A run right after a backslash continuation keeps its first line, which
    Python joins to the line before.
    """
    lines = b"\n" + body
    rough = sum(_run_cost(lines, *match.span()) for match in _COMMENT_LINES.finditer(lines))
    if rough < _COMMENT_RUN_COST:
        return body
    runs = _comment_runs(body, deadline)
    costs = [_run_cost(body, start, end) for start, end in runs]
    left = sum(costs)
    blanked: list[tuple[int, int]] = []
    for cost, (start, end) in sorted(zip(costs, runs, strict=True), reverse=True):
        if left < _COMMENT_RUN_COST:
            break
        left -= cost
        if body[max(start - 3, 0) : start].rstrip(b"\r\n").endswith(b"\\"):
            start = body.index(b"\n", start) + 1
        blanked.append((start, end))
    pieces: list[bytes] = []
    done = 0
    for start, end in sorted(blanked):
        pieces.append(body[done:start])
        pieces.append(body[start:end].translate(_BLANK))
        done = end
    pieces.append(body[done:])
    return b"".join(pieces)


def _comment_runs(body: bytes, deadline: float) -> list[tuple[int, int]]:
    """Spans of two or more consecutive lines holding only a comment (line ends included),
    outside strings; ParseTimeout once ``deadline`` has passed."""
    runs: list[tuple[int, int]] = []
    for count, match in enumerate(_TOKENS.finditer(body)):
        if count % 4096 == 0 and time.monotonic() > deadline:
            raise ParseTimeout
        start, end = match.span("run")
        if start >= 0 and body.count(b"\n", start, end) > 1:
            runs.append((start, end))
    return runs


def _parse(body: bytes, deadline: float) -> tree_sitter.Tree:
    """The tree of ``body`` (comment runs blanked); ParseTimeout once ``deadline`` has passed."""
    source = _blank_comment_runs(body, deadline)

    def read(offset: int, _point: tree_sitter.Point) -> bytes:
        return source[offset : offset + _READ_CHUNK]

    def late(_offset: int, _has_error: bool) -> bool:
        return time.monotonic() > deadline

    try:
        return tree_sitter.Parser(python_language()).parse(read, progress_callback=late)
    except ValueError:
        raise ParseTimeout from None


def _query(
    root: tree_sitter.Node, body: bytes, pack: QueryPack, relative_path: str, deadline: float
) -> list[_Found]:
    """Every definition the pack captures; ParseTimeout once ``deadline`` has passed.

    A subtree of at most ``_SMALL_SUBTREE`` nodes is queried in one call; a larger node
    only for the matches that start at it, its children in turn. Every match is found
    once, no single call can take long, and the clock is read between calls.
    """
    whole = tree_sitter.QueryCursor(pack.query)
    here = tree_sitter.QueryCursor(pack.query)
    here.set_max_start_depth(0)
    found: list[_Found] = []
    pending: list[tuple[tree_sitter.Node, _Scope, tree_sitter.Node | None]] = [
        (root, _Scope(), None)
    ]
    while pending:
        if time.monotonic() > deadline:
            raise ParseTimeout
        node, scope, parent = pending.pop()
        small = node.descendant_count <= _SMALL_SUBTREE
        contexts: _Contexts = {node: (scope, parent)}
        for _, captures in (whole if small else here).matches(node):
            for capture, definitions in captures.items():
                kind, _, role = capture.partition(".")
                if role != "def":
                    continue
                for definition in definitions:
                    item = _describe(
                        definition,
                        kind,
                        captures.get(f"{kind}.name"),
                        relative_path,
                        body,
                        _context(definition, node, contexts, body),
                    )
                    if item is not None:
                        found.append(item)
        if not small:
            inner = scope.inside(node, body)
            pending.extend((child, inner, node) for child in reversed(node.children))
    return found


_Contexts = dict[tree_sitter.Node, tuple[_Scope, tree_sitter.Node | None]]


def _context(
    definition: tree_sitter.Node, start: tree_sitter.Node, known: _Contexts, body: bytes
) -> tuple[_Scope, tree_sitter.Node | None]:
    """The scope and parent of a node under ``start``, found going down from ``start``
    (``known`` holds those already found; climbing with ``Node.parent`` would search
    from the root at every step)."""
    node = start
    while node != definition:
        child = node.child_with_descendant(definition)
        if child is None:
            break
        if child not in known:
            known[child] = (known[node][0].inside(node, body), node)
        node = child
    return known[node]


def _file_found(relative_path: str, body: bytes) -> _Found:
    name = relative_path.rsplit("/", 1)[-1]
    return _Found("file", name, relative_path, 0, len(body), 1, _line_count(body))


def _nodes(
    found: list[_Found],
    decoded: DecodedSource,
    body: bytes,
    relative_path: str,
    node_types: frozenset[str] | None,
) -> list[CSTNode]:
    """CSTNodes in file order, with byte offsets into the file's own bytes."""
    offsets = FileOffsets(decoded, body)
    nodes: list[CSTNode] = []
    seen: Counter[tuple[str, str]] = Counter()
    for item in sorted(found, key=lambda f: (f.start, -f.end)):
        if node_types is not None and item.kind not in node_types:
            continue
        if item.kind == "file":
            start, end = 0, len(body)
        else:
            start, end = _line_bounds(body, item.start, item.end)
        text = body[start:end].decode("utf-8")
        seen[(item.kind, item.qualname)] += 1
        nodes.append(
            CSTNode(
                node_id=make_node_id(
                    relative_path, item.kind, item.qualname, seen[(item.kind, item.qualname)]
                ),
                node_type=item.kind,
                name=item.name,
                qualname=item.qualname,
                file_path=relative_path,
                start_line=item.first_line,
                end_line=item.last_line,
                start_byte=offsets.file_offset(start),
                end_byte=offsets.file_offset(end),
                text=text,
                source_hash=source_hash(text),
            )
        )
    return nodes


def _describe(
    node: tree_sitter.Node,
    kind: str,
    name_nodes: list[tree_sitter.Node] | None,
    relative_path: str,
    body: bytes,
    context: tuple[_Scope, tree_sitter.Node | None],
) -> _Found | None:
    """Kind, qualname and extent of one captured definition, or None inside an error.

    The file node is kept whatever errors the file has.
    """
    if kind == "file":
        return _file_found(relative_path, body)
    scope, parent = context
    if node.has_error or scope.in_error:
        return None
    name_node = node.child_by_field_name("name")
    if name_nodes and name_node is None:
        name_node = name_nodes[0]
    name = _text(body, name_node)
    first = parent if parent is not None and parent.type == "decorated_definition" else node
    qualname = ".".join([*scope.names, name])
    resolved: NodeType
    if kind == "class":
        resolved = "class"
    else:
        resolved = "method" if scope.enclosing == "class_definition" else "function"
    last_token = _code_end(node)
    return _Found(
        resolved,
        name,
        qualname,
        first.start_byte,
        last_token.end_byte,
        first.start_point.row + 1,
        last_token.end_point.row + 1,
    )
