"""Docstring episodes: a corpus definition's real summary line and descriptions are what
the expert writes.

The episode runs on the file without that docstring (:func:`strip_docstring`); the expert
writes the original summary and describes what the host asks for in the original's words,
so the model learns a real maintainer's words, never ones invented here.
"""

from __future__ import annotations

import ast
import inspect
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from remora import pyast
from remora.definitions import SubagentDefinition
from remora.operations.base import CorpusFile, PlannedEpisode, digest, file_nodes, with_mistake
from remora.operations.docstring.expert import DocstringExpert, original_descriptions

_Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


@dataclass(frozen=True)
class Stripped:
    """A module without one definition's docstring, and that docstring's summary line."""

    text: str
    summary: str
    docstring: str


def find_definition(tree: ast.Module, qualname: str) -> _Definition | None:
    """The class or function ``qualname`` (``Outer.method``) of a module."""
    scope: Sequence[ast.stmt] = tree.body
    found: _Definition | None = None
    for part in qualname.split("."):
        found = next(
            (node for node in scope if isinstance(node, _Definition) and node.name == part),
            None,
        )
        if found is None:
            return None
        scope = found.body
    return found


def summary_problem(docstring: str, name: str = "") -> str | None:
    """Why a docstring's first line is not a summary to learn from (None when it is)."""
    paragraph = inspect.cleandoc(docstring).strip().split("\n\n")[0].strip()
    if not paragraph:
        return "the docstring is empty"
    if "\n" in paragraph:
        return "the summary spans several lines"
    if len(paragraph) > 100:
        return "the summary is longer than 100 characters"
    if len(paragraph.split()) < 3:
        return "the summary has fewer than three words"
    if paragraph.endswith((":", ",", ";")) or paragraph.startswith((">>>", ":", "..", "#")):
        return "the first line is not a summary"
    if "->" in paragraph or (name and re.match(rf"{re.escape(name)}\s*\(", paragraph)):
        return "the first line is a signature"
    if "\\" in paragraph:
        return "the summary holds a backslash"
    if not re.match(r"[A-Za-z`]", paragraph):
        return "the summary does not start with a word"
    return None


def strip_docstring(text: str, qualname: str, tree: ast.Module | None = None) -> Stripped | str:
    """``text`` without the docstring of ``qualname`` (and the blank lines after it), with
    its summary line; or why that docstring is not one to learn from. ``tree`` is ``text``
    parsed, when the caller has it (a file's every definition is stripped in turn)."""
    node = find_definition(tree or pyast.parse(text), qualname)
    if node is None:
        return "not a class or function of the module"
    docstring = ast.get_docstring(node, clean=False)
    if docstring is None:
        return "no docstring"
    problem = summary_problem(docstring, node.name)
    if problem is not None:
        return problem
    if len(node.body) < 2:
        return "the body is only the docstring"
    statement = node.body[0]
    lines = text.splitlines(keepends=True)
    first, last = statement.lineno, statement.end_lineno or statement.lineno
    before = lines[first - 1][: statement.col_offset]
    after = lines[last - 1][statement.end_col_offset or 0 :]
    if before.strip() or after.strip() or first <= node.lineno:
        return "the docstring shares a line with code"
    second = node.body[1]
    if isinstance(second, ast.Expr) and isinstance(second.value, ast.Constant):
        return "a string statement would become the docstring"
    end = last
    while end < len(lines) and not lines[end].strip():
        end += 1
    stripped = "".join(lines[: first - 1] + lines[end:])
    summary = inspect.cleandoc(docstring).strip().split("\n")[0].strip()
    return Stripped(stripped, summary, inspect.cleandoc(docstring))


def plan_episodes(
    agent: SubagentDefinition,
    file: CorpusFile,
    text: str,
    seed: int,
    skipped: Counter[str],
    mistakes: float,
) -> Iterator[PlannedEpisode]:
    """One episode per public definition whose docstring is a summary worth learning."""
    tree: ast.Module | None = None
    for node in file_nodes(file, text, agent):
        if node.name.startswith("_"):
            skipped["private or special name (the precheck skips it)"] += 1
            continue
        tree = tree or pyast.parse(text)
        stripped = strip_docstring(text, node.qualname, tree)
        if isinstance(stripped, str):
            skipped[f"docstring: {stripped}"] += 1
            continue
        name = f"{file.source}::{node.qualname}"
        writer = DocstringExpert(
            stripped.summary,
            node.qualname,
            original_descriptions(stripped.docstring),
            mistake=with_mistake(seed, name, mistakes),
        )
        yield PlannedEpisode(
            name,
            file,
            node.qualname,
            node.node_type,
            stripped.text,
            writer,
            digest(stripped.text, node.qualname, str(writer)),
            docstring=stripped.docstring,
            in_package=True,
        )
