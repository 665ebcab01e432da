"""A short outline of Python source: what a model reads when a node is too large to show.

One line per class, function and method (nested ones indented), each with its file line
number, its header as written collapsed to one line (decorators, ``def name(args) -> ret:``,
comments dropped) and the first line of its docstring. Before the definitions come the
module docstring's first line and one line each summarizing the module-level imports and
assignments. Text that does not parse falls back to its first lines, numbered.

Every line starts with a file line number in the format :func:`number_lines` uses, so a
model can pass the numbers straight to a tool that reads line ranges.
"""

from __future__ import annotations

import ast
import io
import tokenize
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from remora import pyast

FALLBACK_LINES = 20
"""Lines the fallback for unparsable text shows."""
MAX_HEADER_CHARS = 200
MAX_DOC_CHARS = 100
MAX_SUMMARY_NAMES = 12

_Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
_BLOCK_FIELDS = ("body", "orelse", "finalbody")


def number_lines(lines: Sequence[str], first_line: int = 1, width: int | None = None) -> list[str]:
    """``lines`` prefixed with their numbers, from ``first_line``: ``" 12| text"``."""
    width = width or len(str(first_line + max(len(lines), 1) - 1))
    return [f"{number:>{width}}| {line}".rstrip() for number, line in enumerate(lines, first_line)]


def outline(text: str, first_line: int = 1) -> str:
    """The outline of ``text`` (see the module docstring); ``first_line`` is its file line.

    Unparsable text gives a note and its first ``FALLBACK_LINES`` lines, numbered.
    """
    entries = outline_entries(text, first_line)
    if entries is not None:
        return "\n".join(entries)
    lines = text.splitlines()
    head = number_lines(lines[:FALLBACK_LINES], first_line)
    more = len(lines) - len(head)
    note = "# not parsable as Python; no outline, its first lines:"
    tail = [f"# ... {more} more line(s)"] if more > 0 else []
    return "\n".join([note, *head, *tail])


def outline_entries(text: str, first_line: int = 1) -> list[str] | None:
    """The outline's lines, or None when ``text`` does not parse as Python.

    Text indented as a whole (a method's source, say) is parsed as the body of a block.
    """
    parsed = _parse(text)
    if parsed is None:
        return None
    source, statements, shift = parsed
    lines = source.splitlines()
    outliner = _Outliner(lines, _comment_columns(source), first_line - 1 - shift)
    module = statements if shift == 0 else []
    docstring = _docstring_line(module)
    outliner.walk(statements, depth=0, top=True)
    last = first_line + max(len(text.splitlines()), 1) - 1
    width = len(str(last))
    result: list[str] = []
    if docstring is not None:
        line = module[0].lineno + outliner.offset
        result.append(_numbered(line, width, f"docstring: {docstring}"))
    for label, names in (("imports", outliner.imports), ("assigns", outliner.assigns)):
        if names:
            line = min(names.values())
            result.append(_numbered(line, width, f"{label}: {_summary(names)}"))
    result.extend(_numbered(entry.line, width, entry.text) for entry in outliner.entries)
    return result


def _parse(text: str) -> tuple[str, list[ast.stmt], int] | None:
    """(source parsed, its top statements, lines added in front), or None."""
    try:
        return text, pyast.parse(text).body, 0
    except (SyntaxError, ValueError):
        pass
    first = next((line for line in text.splitlines() if line.strip()), "")
    if not first[:1].isspace():
        return None
    source = "if True:\n" + text
    try:
        block = pyast.parse(source).body
    except (SyntaxError, ValueError):
        return None
    if len(block) != 1 or not isinstance(block[0], ast.If):
        return None
    return source, block[0].body, 1


def _comment_columns(source: str) -> dict[int, int]:
    """Line -> column where a comment starts (none when the source does not tokenize)."""
    columns: dict[int, int] = {}
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.COMMENT:
                columns[token.start[0]] = token.start[1]
    except (tokenize.TokenError, SyntaxError):
        return {}
    return columns


def _docstring_line(statements: Sequence[ast.stmt]) -> str | None:
    if not statements:
        return None
    return _first_line(ast.get_docstring(ast.Module(body=list(statements), type_ignores=[])))


def _first_line(docstring: str | None) -> str | None:
    if not docstring:
        return None
    line = next((line.strip() for line in docstring.splitlines() if line.strip()), "")
    return _clip(line, MAX_DOC_CHARS) if line else None


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def _numbered(line: int, width: int, text: str) -> str:
    return f"{line:>{width}}| {text}".rstrip()


def _summary(names: dict[str, int]) -> str:
    shown = list(names)[:MAX_SUMMARY_NAMES]
    more = len(names) - len(shown)
    return ", ".join(shown) + (f" (+{more} more)" if more else "")


@dataclass
class _Entry:
    line: int
    text: str


@dataclass
class _Outliner:
    lines: list[str]
    comments: dict[int, int]
    offset: int
    """Added to a parsed line number to give the file line number."""
    entries: list[_Entry] = field(default_factory=list)
    imports: dict[str, int] = field(default_factory=dict)
    assigns: dict[str, int] = field(default_factory=dict)

    def walk(self, statements: Iterable[ast.stmt], *, depth: int, top: bool) -> None:
        """Definitions at ``depth``; ``top`` while still at module level (imports count)."""
        for statement in statements:
            if isinstance(statement, _Definition):
                self.entries.append(self._entry(statement, depth))
                self.walk(statement.body, depth=depth + 1, top=False)
                continue
            if top:
                self._summarize(statement)
            for name in _BLOCK_FIELDS:
                block = getattr(statement, name, None)
                if isinstance(block, list):
                    self.walk(_statements(block), depth=depth, top=top)
            for handler in getattr(statement, "handlers", None) or []:
                self.walk(handler.body, depth=depth, top=top)
            for case in getattr(statement, "cases", None) or []:
                self.walk(case.body, depth=depth, top=top)

    def _summarize(self, statement: ast.stmt) -> None:
        line = statement.lineno + self.offset
        if isinstance(statement, ast.Import):
            for alias in statement.names:
                self.imports.setdefault(alias.name, line)
        elif isinstance(statement, ast.ImportFrom):
            module = "." * statement.level + (statement.module or "")
            self.imports.setdefault(module, line)
        elif isinstance(statement, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            for target in targets:
                for name in _target_names(target):
                    self.assigns.setdefault(name, line)

    def _entry(self, node: _Definition, depth: int) -> _Entry:
        decorators = " ".join(
            "@" + _clip(ast.unparse(decorator), 40) for decorator in node.decorator_list
        )
        header = _clip(self._header(node), MAX_HEADER_CHARS)
        text = "    " * depth + (f"{decorators} {header}" if decorators else header)
        doc = _first_line(ast.get_docstring(node))
        if doc is not None:
            text += f"  # {doc}"
        return _Entry(node.lineno + self.offset, text)

    def _header(self, node: _Definition) -> str:
        """The source from ``def``/``class`` up to its body, one line, comments dropped."""
        start_line, start_col = node.lineno, self._column(node.lineno, node.col_offset)
        body = node.body[0]
        decorated = getattr(body, "decorator_list", None)
        if decorated:
            end_line, end_col = decorated[0].lineno, 0
        else:
            end_line, end_col = body.lineno, self._column(body.lineno, body.col_offset)
        pieces: list[str] = []
        for number in range(start_line, end_line + 1):
            line = self.lines[number - 1] if number <= len(self.lines) else ""
            low = start_col if number == start_line else 0
            high = end_col if number == end_line else len(line)
            comment = self.comments.get(number)
            if comment is not None and low <= comment < high:
                high = comment
            piece = line[low:high].strip().removesuffix("\\").rstrip()
            if piece:
                pieces.append(piece)
        return _join(pieces)

    def _column(self, line: int, byte_offset: int) -> int:
        """``ast`` columns count UTF-8 bytes; slicing needs characters."""
        text = self.lines[line - 1] if line <= len(self.lines) else ""
        return len(text.encode("utf-8")[:byte_offset].decode("utf-8", errors="ignore"))


def _statements(block: list[object]) -> list[ast.stmt]:
    return [item for item in block if isinstance(item, ast.stmt)]


def _target_names(target: ast.expr) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Starred):
        return _target_names(target.value)
    if isinstance(target, ast.Tuple | ast.List):
        return [name for element in target.elts for name in _target_names(element)]
    return []


def _join(pieces: Sequence[str]) -> str:
    """Header lines joined as one: no space inside brackets, no trailing comma before one."""
    joined = ""
    for piece in pieces:
        if not joined:
            joined = piece
        elif joined.endswith(("(", "[", "{")):
            joined += piece
        elif piece.startswith((")", "]", "}")):
            joined = joined.removesuffix(",") + piece
        else:
            joined += " " + piece
    return joined
