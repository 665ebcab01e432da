"""outline(): one numbered line per definition, module summaries, and a fallback."""

from __future__ import annotations

import ast
import inspect
import re
import textwrap

from remora.discovery.outline import (
    FALLBACK_LINES,
    MAX_SUMMARY_NAMES,
    number_lines,
    outline,
    outline_entries,
)

MODULE = '''"""Shapes and helpers.

More text that is not shown.
"""

import os, sys
from collections import abc
from . import sibling

ORIGIN = (0, 0)
width: int = 3
left, (right, *rest) = 1, (2, 3)


class Shape:
    """A shape."""

    sides = 0

    @property
    def area(self) -> float:
        """The area."""
        return 0.0

    class Meta:
        pass


@staticmethod
async def fetch(
    url: str,  # where from
    *,
    retries: int = 3,
) -> bytes:
    def inner(x): return x
    return b""


if os.name == "nt":
    def only_windows(): ...
else:
    try:
        def posix(a,
                  b):
            """Posix.
            Second line.
            """
    except ImportError:
        pass


def naïve(ünïcode="é") -> str: return ünïcode
'''


def definitions(source: str) -> list[tuple[int, str]]:
    """(line, name) of every def and class, by ``ast``."""
    return sorted(
        (node.lineno, node.name)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    )


def outlined(entries: list[str]) -> list[tuple[int, str]]:
    """(line, name) of the definition lines of an outline."""
    found = []
    for entry in entries:
        match = re.match(r"\s*(\d+)\| .*?\b(?:def|class) (\w+)", entry)
        if match:
            found.append((int(match.group(1)), match.group(2)))
    return sorted(found)


def test_synthetic_module_outline() -> None:
    entries = outline_entries(MODULE)
    assert entries is not None
    assert outlined(entries) == definitions(MODULE)
    text = "\n".join(entries)
    assert entries[0] == " 1| docstring: Shapes and helpers."
    assert " 6| imports: os, sys, collections, ." in entries
    assert "10| assigns: ORIGIN, width, left, right, rest" in entries
    assert "15| class Shape:  # A shape." in entries
    assert "21|     @property def area(self) -> float:  # The area." in entries
    assert "25|     class Meta:" in entries
    # A multi-line header is collapsed to one line, its comment dropped.
    assert "30| @staticmethod async def fetch(url: str, *, retries: int = 3) -> bytes:" in entries
    assert "35|     def inner(x):" in entries
    # Definitions inside if/else/try blocks are found at their scope's depth.
    assert "40| def only_windows():" in entries
    assert "43| def posix(a, b):  # Posix." in entries
    assert '52| def naïve(ünïcode="é") -> str:' in entries
    assert "sides" not in text
    assert "not shown" not in text


def test_outline_uses_file_line_numbers_and_indented_text() -> None:
    method = '''    def grow(self, by):
        """Grow."""
        def step():
            pass
        self.r += by
'''
    entries = outline_entries(method, first_line=40)
    assert entries == ["40| def grow(self, by):  # Grow.", "42|     def step():"]
    shifted = outline_entries(MODULE, first_line=101)
    assert shifted is not None
    assert outlined(shifted) == [(line + 100, name) for line, name in definitions(MODULE)]


def test_textwrap_outline_has_every_definition_with_its_line() -> None:
    source = inspect.getsource(textwrap)
    text = outline(source)
    assert outlined(text.splitlines()) == definitions(source)
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            keyword = "class" if isinstance(node, ast.ClassDef) else "def"
            assert re.search(rf"^\s*{node.lineno}\| .*{keyword} {node.name}\b", text, re.M)
    assert "| def wrap(text, width=70, **kwargs):  # Wrap a single paragraph" in text
    assert "| imports: re" in text
    assert len(text) < len(source) / 4


def test_summaries_are_capped() -> None:
    source = "\n".join(f"import m{index}" for index in range(MAX_SUMMARY_NAMES + 3))
    entries = outline_entries(source)
    assert entries is not None
    assert entries[0].endswith(", m11 (+3 more)")


def test_unparsable_text_falls_back_to_numbered_head() -> None:
    broken = "def f(:\n" + "".join(f"    x{index} = {index}\n" for index in range(40))
    assert outline_entries(broken) is None
    text = outline(broken, first_line=7)
    lines = text.splitlines()
    assert "not parsable" in lines[0]
    assert lines[1] == " 7| def f(:"
    assert len(lines) == 1 + FALLBACK_LINES + 1
    assert lines[-1] == "# ... 21 more line(s)"
    assert outline("x = (\n", first_line=1).splitlines()[1:] == ["1| x = ("]


def test_number_lines() -> None:
    assert number_lines(["a", "", "b"], 9) == [" 9| a", "10|", "11| b"]
    assert number_lines([], 1) == []
