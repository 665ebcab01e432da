"""Turn one Python source into CSTNodes with tree-sitter query packs.

A query pack is a folder of ``.scm`` files under ``queries/python/<pack>/`` whose
captures are named ``@<kind>.def`` (the definition) and ``@<kind>.name`` (its name),
kind being file, class or function. Whether a function is a method, its qualname,
its decorators and its whole-line extent are worked out here from the tree, so packs
stay declarative.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

import tree_sitter
import tree_sitter_python

from remora.config import NodeType
from remora.discovery.models import CSTNode, DiscoveryProblem, make_node_id, source_hash
from remora.errors import DiscoveryError

QUERY_KINDS = ("file", "class", "function")
_DEFINITIONS = ("function_definition", "class_definition")
_UTF8_BOM = b"\xef\xbb\xbf"


@lru_cache(maxsize=1)
def python_language() -> tree_sitter.Language:
    return tree_sitter.Language(tree_sitter_python.language())


@dataclass(frozen=True)
class QueryPack:
    """The compiled queries of one or more packs, run in a single pass per file."""

    names: tuple[str, ...]
    query: tree_sitter.Query


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
            sources.append(text)
    return QueryPack(names=names, query=tree_sitter.Query(python_language(), "\n".join(sources)))


def _line_bounds(source: bytes, start: int, end: int) -> tuple[int, int]:
    """Widen [start, end) to whole lines; the end excludes the line terminator."""
    line_start = source.rfind(b"\n", 0, start) + 1
    line_end = source.find(b"\n", max(end - 1, start))
    if line_end == -1:
        line_end = len(source)
    if line_end > line_start and source[line_end - 1 : line_end] == b"\r":
        line_end -= 1
    return line_start, line_end


def _code_end(node: tree_sitter.Node) -> tree_sitter.Node:
    """The last token that is not a comment (ast's end_lineno ignores trailing comments)."""
    while node.child_count:
        for index in range(node.child_count - 1, -1, -1):
            child = node.child(index)
            if child is not None and child.type != "comment":
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


def _text(node: tree_sitter.Node | None) -> str:
    if node is None or node.text is None:
        return ""
    return node.text.decode("utf-8", errors="replace")


@dataclass
class _Found:
    kind: NodeType
    name: str
    qualname: str
    start: int
    end: int
    first_line: int
    last_line: int


def parse_source(
    source: bytes, relative_path: str, pack: QueryPack, node_types: frozenset[str] | None = None
) -> tuple[list[CSTNode], list[DiscoveryProblem]]:
    """All nodes of one file plus the problems met; never raises on bad input."""
    problems: list[DiscoveryProblem] = []
    offset = len(_UTF8_BOM) if source.startswith(_UTF8_BOM) else 0
    try:
        source.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = source.count(b"\n", 0, exc.start) + 1
        problems.append(
            DiscoveryProblem(
                code="DISC_102",
                path=relative_path,
                message=f"not UTF-8 (byte {exc.start}, line {line}); Remora reads UTF-8 only",
                line=line,
            )
        )
        return [], problems
    body = source[offset:] if offset else source
    tree = tree_sitter.Parser(python_language()).parse(body)
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

    found: list[_Found] = []
    for _, captures in tree_sitter.QueryCursor(pack.query).matches(root):
        for capture, definitions in captures.items():
            kind, _, role = capture.partition(".")
            if role != "def":
                continue
            for node in definitions:
                item = _describe(node, kind, captures.get(f"{kind}.name"), relative_path)
                if item is not None:
                    found.append(item)

    nodes: list[CSTNode] = []
    seen: Counter[tuple[str, str]] = Counter()
    for item in sorted(found, key=lambda f: (f.start, -f.end)):
        if node_types is not None and item.kind not in node_types:
            continue
        if item.kind == "file":
            start_byte, end_byte = offset, len(source)
        else:
            start_byte, end_byte = _line_bounds(source, item.start + offset, item.end + offset)
            start_byte = max(start_byte, offset)
        text = source[start_byte:end_byte].decode("utf-8")
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
                start_byte=start_byte,
                end_byte=end_byte,
                text=text,
                source_hash=source_hash(text),
            )
        )
    return nodes, problems


def _describe(
    node: tree_sitter.Node,
    kind: str,
    name_nodes: list[tree_sitter.Node] | None,
    relative_path: str,
) -> _Found | None:
    """Kind, qualname and extent of one captured definition, or None inside an error."""
    if node.has_error:
        return None
    if kind == "file":
        name = relative_path.rsplit("/", 1)[-1]
        last = node.end_point.row + (0 if node.end_point.column else -1)
        return _Found("file", name, relative_path, 0, node.end_byte, 1, max(last + 1, 1))
    name_node = node.child_by_field_name("name")
    if name_nodes and name_node is None:
        name_node = name_nodes[0]
    name = _text(name_node)
    scopes: list[str] = []
    enclosing: str | None = None
    parent = node.parent
    first = parent if parent is not None and parent.type == "decorated_definition" else node
    while parent is not None:
        if parent.is_error:
            return None
        if parent.type in _DEFINITIONS:
            scopes.append(_text(parent.child_by_field_name("name")))
            enclosing = enclosing or parent.type
        parent = parent.parent
    qualname = ".".join([*reversed(scopes), name])
    resolved: NodeType
    if kind == "class":
        resolved = "class"
    else:
        resolved = "method" if enclosing == "class_definition" else "function"
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
