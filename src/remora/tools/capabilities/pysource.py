"""Python source helpers shared by capabilities: parse with clear errors, find definitions.

Qualnames follow discovery's convention: enclosing class and function names joined with
dots (``Outer.method``, ``outer.inner``). A definition is looked up along that path,
looking through ``if``/``try``/``with``/loop blocks but not into other definitions; the
first match in source order wins, as it does for discovery's node ids.

Codes: TOOL_105 no definition with that qualname, TOOL_106 the source does not parse.
"""

from __future__ import annotations

import ast
import difflib
from collections.abc import Iterator
from dataclasses import dataclass

from remora import pyast
from remora.errors import ToolError

Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
_DEFINITION_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@dataclass(frozen=True)
class Located:
    """A definition and the definitions enclosing it, outermost first."""

    node: Definition
    parents: tuple[Definition, ...]

    @property
    def in_class(self) -> bool:
        return bool(self.parents) and isinstance(self.parents[-1], ast.ClassDef)


def parse_python(text: str, where: str = "the source") -> ast.Module:
    """``ast.parse`` with TOOL_106 naming the line of the first syntax error."""
    try:
        return pyast.parse(text)
    except SyntaxError as exc:
        raise ToolError(
            "TOOL_106",
            f"{where} has a syntax error at line {exc.lineno}: {exc.msg}",
            "fix the syntax error first",
        ) from None
    except ValueError as exc:
        raise ToolError("TOOL_106", f"{where} cannot be parsed: {exc}", "check the text") from None


def syntax_error(text: str) -> str | None:
    """A one-line description of the first syntax error in ``text``, or None."""
    try:
        pyast.parse(text)
    except SyntaxError as exc:
        return f"line {exc.lineno}: {exc.msg}"
    except ValueError as exc:
        return str(exc)
    return None


def definitions_in(body: list[ast.stmt]) -> Iterator[Definition]:
    """Definitions directly in ``body``, including those inside if/try/with/loop blocks."""
    for statement in body:
        if isinstance(statement, _DEFINITION_TYPES):
            yield statement
            continue
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(statement, field, None)
            if isinstance(inner, list):
                yield from definitions_in(inner)
        for handler in getattr(statement, "handlers", []):
            yield from definitions_in(handler.body)
        for case in getattr(statement, "cases", []):
            yield from definitions_in(case.body)


def all_qualnames(tree: ast.Module) -> list[str]:
    """Every definition's qualname in source order."""
    names: list[str] = []

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for definition in definitions_in(body):
            qualname = prefix + definition.name
            names.append(qualname)
            visit(definition.body, qualname + ".")

    visit(tree.body, "")
    return names


def find_definition(tree: ast.Module, qualname: str) -> Located | None:
    """The first definition at exactly ``qualname``, or None."""
    body: list[ast.stmt] = tree.body
    parents: list[Definition] = []
    found: Definition | None = None
    for part in qualname.split("."):
        found = next((d for d in definitions_in(body) if d.name == part), None)
        if found is None:
            return None
        parents.append(found)
        body = found.body
    if found is None:
        return None
    return Located(found, tuple(parents[:-1]))


def locate(tree: ast.Module, qualname: str, where: str) -> Located:
    """:func:`find_definition` or TOOL_105 listing what is defined."""
    located = find_definition(tree, qualname)
    if located is None:
        raise definition_not_found(where, qualname, all_qualnames(tree))
    return located


def definition_not_found(where: str, qualname: str, known: list[str]) -> ToolError:
    """TOOL_105 naming the closest qualnames that do exist."""
    unique = list(dict.fromkeys(known))
    close = difflib.get_close_matches(qualname, unique, n=3, cutoff=0.4)
    if close:
        hint = "did you mean " + ", ".join(repr(name) for name in close) + "?"
    elif unique:
        hint = "defined there: " + ", ".join(unique[:15])
    else:
        hint = "it defines no classes or functions"
    return ToolError("TOOL_105", f"no class or function '{qualname}' in {where}", hint)
