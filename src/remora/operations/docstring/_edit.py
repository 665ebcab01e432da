"""Edit an existing docstring in place: what the authors wrote stays byte for byte.

A docstring someone wrote is never re-rendered: re-wrapping joins a ``>>>`` line and its
expected output into prose, and a literal block, a list or a directive with it. This module
works on the source text of the string literal itself and only inserts: a summary where
there is none, an entry at the end of a section the docstring already has, a section where
the docstring's convention has a place for one. The one change to the authors' words is the
mechanical fix of a summary (the mood of its first word, a missing final period), which the
caller asks for explicitly. :func:`kept_lines` is the check the caller makes before it
writes: each of the old docstring's lines is still there, in order.

Pure text, no syntax trees beyond finding the literal: ``docstrings.py`` decides what is
missing and which convention applies.
"""

from __future__ import annotations

import ast
import inspect
import io
import re
import tokenize
from collections.abc import Sequence
from dataclasses import dataclass

from remora import pyast
from remora.operations.docstring._format import (
    SECTION_RANK,
    imperative,
    section_starts,
    sections_of,
)

_OTHER_RANK = len(SECTION_RANK)
_LITERAL = re.compile(r"^([rRuU]?)(\"\"\"|'''|\"|')(.*)\2$", re.DOTALL)
_ENDS_SENTENCE = re.compile(r"[.!?:;,]$")
_FIRST_WORD = re.compile(r"^(\s*)([A-Za-z]+)")


@dataclass(frozen=True)
class Literal:
    """The docstring's string literal in the file: where it is and what it is made of."""

    start: int
    """Offset of its first character (the prefix or the opening quotes) in the text."""
    end: int
    prefix: str
    quote: str
    body: str

    @property
    def triple(self) -> bool:
        return len(self.quote) == 3

    @property
    def raw(self) -> bool:
        return "r" in self.prefix.lower()

    def source(self, body: str) -> str:
        return f"{self.prefix}{self.quote}{body}{self.quote}"


def find_literal(text: str, node: ast.AST) -> Literal | None:
    """The docstring literal of ``node`` (a module, class or function of the tree of
    ``text``), or None when there is none or it is not one plain string token (implicit
    concatenation, an f-string, a line break other than ``\\n`` or ``\\r\\n``)."""
    body = getattr(node, "body", None)
    if not isinstance(body, list) or not body:
        return None
    first = body[0]
    if not (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        return None
    value = first.value
    if value.end_lineno is None or value.end_col_offset is None:
        return None
    lines = text.split("\n")
    if any("\r" in line.rstrip("\r") for line in lines):
        return None
    start = _offset(lines, value.lineno, value.col_offset)
    end = _offset(lines, value.end_lineno, value.end_col_offset)
    source = text[start:end]
    match = _LITERAL.match(source)
    if match is None or not _one_string_token(source):
        return None
    try:
        if ast.literal_eval(pyast.parse(source, mode="eval")) != value.value:
            return None
    except (SyntaxError, ValueError):
        return None
    return Literal(start, end, match.group(1), match.group(2), match.group(3))


def _offset(lines: list[str], lineno: int, byte_column: int) -> int:
    """The text offset of ``ast``'s (line, UTF-8 byte column) position."""
    before = sum(len(line) + 1 for line in lines[: lineno - 1])
    column = len(lines[lineno - 1].encode("utf-8")[:byte_column].decode("utf-8", "replace"))
    return before + column


def _one_string_token(source: str) -> bool:
    try:
        tokens = [
            token
            for token in tokenize.generate_tokens(io.StringIO(source).readline)
            if token.type not in (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER)
        ]
    except (tokenize.TokenError, SyntaxError):
        return False
    return len(tokens) == 1 and tokens[0].type == tokenize.STRING


@dataclass
class _Body:
    """The literal's body as lines, with the docstring's indentation taken off (logical
    lines) and put back on (raw lines)."""

    raw: list[str]
    indent: str
    newline: str

    @classmethod
    def of(cls, body: str, fallback_indent: str, fallback_newline: str) -> _Body:
        newline = "\r\n" if "\r\n" in body else ("\n" if "\n" in body else fallback_newline)
        raw = body.split(newline)
        filled = [line for line in raw[1:] if line.strip()]
        if filled:
            indent = _common_whitespace(filled)
        elif len(raw) > 1:
            indent = raw[-1] if not raw[-1].strip() else fallback_indent
        else:
            indent = fallback_indent
        return cls(raw, indent, newline)

    @property
    def logical(self) -> list[str]:
        return [self.raw[0]] + [
            line[len(self.indent) :] if line.strip() else "" for line in self.raw[1:]
        ]

    def text(self) -> str:
        return self.newline.join(self.raw)

    def content_end(self) -> int:
        """One past the last line with text."""
        end = len(self.raw)
        while end > 1 and not self.raw[end - 1].strip():
            end -= 1
        return end

    def insert(self, index: int, lines: Sequence[str]) -> None:
        """Logical ``lines`` before raw line ``index`` (``len(raw)``: at the end, before
        the closing quotes, which then stand on a line of their own)."""
        shaped = [self.indent + line if line else "" for line in lines]
        if index >= len(self.raw):
            self.raw.extend(shaped)
            self.raw.append(self.indent)
            return
        self.raw[index:index] = shaped


def _common_whitespace(lines: Sequence[str]) -> str:
    prefixes = [line[: len(line) - len(line.lstrip())] for line in lines]
    common = prefixes[0]
    for prefix in prefixes[1:]:
        while not prefix.startswith(common):
            common = common[:-1]
    return common


def summary_span(lines: Sequence[str], style: str) -> tuple[int, int] | None:
    """The logical lines of the summary paragraph (first, one past the last), or None when
    the docstring starts with something else (a section, an example, a field)."""
    first = next((index for index, line in enumerate(lines) if line.strip()), None)
    if first is None:
        return None
    opening = lines[first].strip()
    if opening.startswith((">>>", ":", "..")) or first in section_starts(lines, style):
        return None
    end = first + 1
    starts = set(section_starts(lines, style))
    while end < len(lines) and lines[end].strip() and end not in starts:
        end += 1
    return first, end


def fix_summary(
    literal: Literal,
    style: str,
    *,
    mood: bool,
    period: bool,
    indent: str = "    ",
    newline: str = "\n",
) -> tuple[str, tuple[str, ...]]:
    """The body with the summary's first word in the imperative mood (``mood``) and a final
    period added where it has no end mark (``period``), and what was fixed: nothing else of
    the text changes."""
    body = _Body.of(literal.body, indent, newline)
    span = summary_span(body.logical, style)
    if span is None:
        return literal.body, ()
    first, end = span
    done: list[str] = []
    if mood:
        line = body.raw[first]
        found = _FIRST_WORD.match(line)
        if found:
            word = found.group(2)
            fixed = imperative(word)
            if fixed != word:
                body.raw[first] = found.group(1) + fixed + line[found.end() :]
                done.append(f"mood: {word} -> {fixed}")
    if period:
        last = end - 1
        line = body.raw[last]
        stripped = line.rstrip()
        if stripped and not _ENDS_SENTENCE.search(stripped) and not stripped.endswith("\\"):
            body.raw[last] = stripped + "." + line[len(stripped) :]
            done.append("final period")
    return body.text(), tuple(done)


def insert_summary(
    literal: Literal, summary: str, *, indent: str = "    ", newline: str = "\n"
) -> str:
    """The body with ``summary`` as its first line, the rest of the text below it as it
    was."""
    body = _Body.of(literal.body, indent, newline)
    escaped = escape(summary, literal)
    if not literal.body.strip():
        return escaped
    if not body.raw[0].strip():
        body.raw[0] = escaped
        if len(body.raw) > 1 and body.raw[1].strip():
            body.raw.insert(1, "")
        return body.text()
    moved = body.raw[0].lstrip()
    return body.newline.join([escaped, "", body.indent + moved, *body.raw[1:]])


def insert_sections(
    literal: Literal,
    style: str,
    blocks: Sequence[tuple[str, list[str], list[str]]],
    *,
    indent: str = "    ",
    newline: str = "\n",
) -> str:
    """The body with each block's entries (kind, header lines, entry lines; logical lines
    as :func:`~remora.operations.docstring._format.section_blocks` renders them) at the
    end of the section of that kind the docstring already has, at the indentation of its
    entries, or, where it has none, the whole block placed among its sections by
    :data:`SECTION_RANK` (sphinx fields join the field list without a blank line)."""
    body = _Body.of(literal.body, indent, newline)
    for kind, header, entries in blocks:
        logical = body.logical
        placed = sections_of(logical, style)
        same = [item for item in placed if item[0] == kind]
        if same:
            _, start, end = same[-1]
            last = _last_filled(logical, start, end)
            body.insert(last + 1, _shifted(entries, logical[start + len(header) : last + 1]))
            continue
        lines = [*header, *entries]
        gap = [] if style == "sphinx" and placed else [""]
        rank = SECTION_RANK.get(kind, _OTHER_RANK)
        before = [item for item in placed if SECTION_RANK.get(item[0], _OTHER_RANK) <= rank]
        after = [item for item in placed if SECTION_RANK.get(item[0], _OTHER_RANK) > rank]
        if before:
            _, start, end = before[-1]
            body.insert(_last_filled(logical, start, end) + 1, [*gap, *lines])
        elif after:
            body.insert(after[0][1], [*lines, *gap])
        else:
            body.insert(body.content_end(), ["", *lines])
    return body.text()


def _shifted(entries: Sequence[str], existing: Sequence[str]) -> list[str]:
    """``entries`` at the indentation of the ``existing`` entries of the section."""
    filled = [line for line in existing if line.strip()]
    new = [line for line in entries if line.strip()]
    if not filled or not new:
        return list(entries)
    have = len(filled[0]) - len(filled[0].lstrip())
    base = len(new[0]) - len(new[0].lstrip())
    shift = have - base
    if shift >= 0:
        return [" " * shift + line if line else line for line in entries]
    return [line[-shift:] if line[:-shift].isspace() else line for line in entries]


def _last_filled(lines: Sequence[str], start: int, end: int) -> int:
    index = min(end, len(lines)) - 1
    while index > start and not lines[index].strip():
        index -= 1
    return index


def escape(text: str, literal: Literal) -> str:
    """``text`` as it must be written inside ``literal`` to read back as ``text``."""
    if not literal.raw:
        text = text.replace("\\", "\\\\")
    return text.replace(literal.quote, "\\" + "\\".join(literal.quote))


def can_hold(text: str, literal: Literal) -> bool:
    """Whether ``text`` can be written into ``literal`` and read back unchanged."""
    if literal.raw:
        return literal.quote not in text and "\\" not in text
    return True


def kept_lines(before: str, after: str, summary_fixed: bool = False) -> bool:
    """Whether every line with text of the docstring ``before`` (cleaned) is still in
    ``after``, in order and unchanged, but for the summary paragraph's first and last line
    when ``summary_fixed`` (its mood or final period)."""
    old = inspect.cleandoc(before).splitlines()
    new = inspect.cleandoc(after).splitlines()
    loose: set[int] = set()
    if summary_fixed:
        span = summary_span(old, "plain")
        if span is not None:
            loose = {span[0], span[1] - 1}
    remaining = iter(line for line in new if line.strip())
    for index, line in enumerate(old):
        if not line.strip():
            continue
        if index in loose:
            if next(remaining, None) is None:
                return False
            continue
        if not any(line == other for other in remaining):
            return False
    return True


__all__ = [
    "Literal",
    "can_hold",
    "escape",
    "find_literal",
    "fix_summary",
    "insert_sections",
    "insert_summary",
    "kept_lines",
    "summary_span",
]
