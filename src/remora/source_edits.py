"""Python source positions and text edits, shared by everything that edits source by index.

ast positions are (1-based line, UTF-8 byte column); edits work on ``str`` indices. Lines
break where Python's tokenizer breaks them (``\\r\\n``, ``\\r``, ``\\n``), never at the
other characters ``str.splitlines`` splits on (a form feed is not a line break to ast).
Remora's lint rewrites, ruff's fixes and the lint evaluation's injected defects all
apply :class:`TextEdit` values with :func:`apply_edits`.
"""

from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Iterable
from dataclasses import dataclass

from remora import pyast

__all__ = ["OverlappingEditsError", "PythonSource", "TextEdit", "apply_edits"]

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True, order=True)
class TextEdit:
    """Replace ``text[start:end]`` by ``new`` (an insertion when ``start == end``)."""

    start: int
    end: int
    new: str

    def overlaps(self, other: TextEdit) -> bool:
        """Whether the two edits touch the same text (two insertions at one index do)."""
        if self.start == self.end == other.start == other.end:
            return True
        return self.start < other.end and other.start < self.end


class OverlappingEditsError(ValueError):
    """Two edits of one batch overlap."""


def apply_edits(text: str, edits: Iterable[TextEdit]) -> str:
    """``text`` with non-overlapping ``edits`` applied; insertions at one index keep their
    order. Raises OverlappingEditsError when two of them overlap."""
    ordered = sorted(edits, key=lambda edit: (edit.start, edit.end))
    pieces: list[str] = []
    position = 0
    for edit in ordered:
        if edit.start < position:
            raise OverlappingEditsError(f"edits overlap at index {edit.start}")
        pieces += [text[position : edit.start], edit.new]
        position = edit.end
    pieces.append(text[position:])
    return "".join(pieces)


class PythonSource:
    """A module's text and tree, with ast positions turned into ``str`` indices.

    Raises SyntaxError or ValueError (from :func:`remora.pyast.parse`) when the text does
    not parse.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.tree = pyast.parse(text)
        self.line_starts = [0, *(match.end() for match in _LINE_BREAK.finditer(text))]
        self.parents: dict[ast.AST, ast.AST] = {}
        for node in ast.walk(self.tree):
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node

    def line_start(self, line: int) -> int:
        """Index where 1-based ``line`` starts (0 before the first, the end past the last)."""
        if line < 1:
            return 0
        return self.line_starts[line - 1] if line <= len(self.line_starts) else len(self.text)

    def line_text(self, line: int) -> str:
        """Line ``line`` with its line break."""
        end = self.line_starts[line] if line < len(self.line_starts) else len(self.text)
        return self.text[self.line_start(line) : end]

    def line_of(self, index: int) -> int:
        """The 1-based line holding ``index``."""
        return bisect.bisect_right(self.line_starts, index)

    def offset(self, line: int, col: int) -> int:
        """Index of ast's (1-based line, UTF-8 byte column)."""
        if line > len(self.line_starts):
            return len(self.text)
        prefix = self.line_text(line).encode("utf-8")[:col].decode("utf-8", "replace")
        return self.line_start(line) + len(prefix)

    def start(self, node: ast.AST) -> int:
        return self.offset(node.lineno, node.col_offset)  # type: ignore[attr-defined]

    def end(self, node: ast.AST) -> int:
        line = node.end_lineno or node.lineno  # type: ignore[attr-defined]
        col = node.end_col_offset  # type: ignore[attr-defined]
        return self.offset(line, node.col_offset if col is None else col)  # type: ignore[attr-defined]

    def segment(self, node: ast.AST) -> str:
        return self.text[self.start(node) : self.end(node)]
