"""Merge Python modules that two sides only added to: imports joined, definitions appended.

Two workspaces that each add tests to one test module (two functions of one source module,
tested in one run), or a new test module written beside one that was accepted meanwhile,
change the same place of the same file: a line merge can only call that a conflict. When
one side's changes to the common ancestor are purely additive at module level (new
top-level statements, new names in a ``from m import ...``), they apply to the other
side's module as a union: names join the other side's import of the same module, new
plain imports go after its imports, statements it already has verbatim (the module
docstring) are not repeated, the rest is appended. Anything else (a statement removed or
changed, an addition other than an import or a definition, a name defined on both sides,
text that does not parse, or nests too deeply to parse) is not a union: None.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from remora import pyast

__all__ = ["module_docstring", "union_modules"]

_LINE_LENGTH = 88
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@dataclass
class _Module:
    """A module's lines and top-level statements, each with its full source lines."""

    lines: list[str]
    statements: list[tuple[ast.stmt, str]] = field(default_factory=list)
    inside: set[int] = field(default_factory=set)
    """Indexes of the lines that belong to a statement."""

    @classmethod
    def parse(cls, text: str) -> _Module | None:
        try:
            tree = pyast.parse(text)
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            return None  # nesting past the parser's limit (``x = 1 + 1 + ...``) is no union
        module = cls(text.splitlines(keepends=True))
        for node in tree.body:
            start = min([node.lineno, *(d.lineno for d in _decorators(node))])
            end = node.end_lineno or node.lineno
            module.statements.append((node, "".join(module.lines[start - 1 : end])))
            module.inside.update(range(start - 1, end))
        return module

    def between(self) -> set[str]:
        """The text outside statements (comments), line by line, blank lines left out."""
        outside = (line for i, line in enumerate(self.lines) if i not in self.inside)
        return {line.strip() for line in outside if line.strip()}

    def texts(self) -> set[str]:
        return {text.strip() for _, text in self.statements}

    def defined(self) -> set[str]:
        names: set[str] = set()
        for node, _ in self.statements:
            if isinstance(node, _DEFINITIONS):
                names.add(node.name)
        return names


def _decorators(node: ast.stmt) -> list[ast.expr]:
    if isinstance(node, _DEFINITIONS):
        return node.decorator_list
    return []


def _plain_from(node: ast.stmt) -> ast.ImportFrom | None:
    """A ``from m import a, b`` without star or dots, whose names can be joined."""
    if not isinstance(node, ast.ImportFrom) or node.level or not node.module:
        return None
    return node if all(alias.name != "*" for alias in node.names) else None


def _alias(alias: ast.alias) -> str:
    return alias.name if alias.asname is None else f"{alias.name} as {alias.asname}"


def _additions(base: _Module, ours: _Module) -> list[tuple[ast.stmt, str]] | None:
    """Our statements the base lacks; None when we changed or removed one of the base's
    (a from-import that only gained names counts as an addition of those names), or added
    text between statements (a comment a union could not place)."""
    if not ours.between() <= base.between():
        return None
    ours_texts = ours.texts()
    ours_from = {
        imported.module: {_alias(a) for a in imported.names}
        for node, _ in ours.statements
        if (imported := _plain_from(node)) is not None
    }
    for node, text in base.statements:
        if text.strip() in ours_texts:
            continue
        imported = _plain_from(node)
        if imported is None or not {_alias(a) for a in imported.names} <= ours_from.get(
            imported.module, set()
        ):
            return None
    base_texts = base.texts()
    return [(node, text) for node, text in ours.statements if text.strip() not in base_texts]


def union_modules(base: str, theirs: str, ours: str) -> str | None:
    """``theirs`` with what ``ours`` added to ``base``, or None when that is not a union."""
    parsed = [_Module.parse(text) for text in (base, theirs, ours)]
    if any(module is None for module in parsed):
        return None
    base_module, their_module, our_module = parsed
    assert base_module is not None and their_module is not None and our_module is not None
    added = _additions(base_module, our_module)
    if added is None or not all(_additive(node) for node, _ in added):
        return None
    their_texts = their_module.texts()
    added = [(node, text) for node, text in added if text.strip() not in their_texts]
    if {n.name for n, _ in added if isinstance(n, _DEFINITIONS)} & their_module.defined():
        return None
    return _apply(their_module, added)


def _apply(theirs: _Module, added: list[tuple[ast.stmt, str]]) -> str:
    their_from = {
        imported.module: (node, {_alias(a) for a in imported.names})
        for node, _ in theirs.statements
        if (imported := _plain_from(node)) is not None and imported.module
    }
    imports: list[str] = []
    appended: list[str] = []
    edits: dict[tuple[int, int], list[str]] = {}  # (first, last line index) -> new lines
    for node, text in added:
        imported = _plain_from(node)
        if imported is not None and imported.module in their_from:
            target, names = their_from[imported.module]
            names |= {_alias(a) for a in imported.names}
            span = (target.lineno - 1, target.end_lineno or target.lineno)
            edits[span] = [_from_import(imported.module, sorted(names))]
        elif isinstance(node, ast.Import | ast.ImportFrom):
            imports.append(text if text.endswith("\n") else text + "\n")
        elif not _is_docstring(node):
            appended.append(text.rstrip("\n") + "\n")
    if imports:
        at, blank_before, blank_after = _import_point(theirs)
        edits[(at, at)] = ["\n"] * blank_before + imports + ["\n"] * blank_after
    lines = list(theirs.lines)
    for (first, last), new in sorted(edits.items(), reverse=True):
        lines[first:last] = new
    text = "".join(lines)
    if appended:
        text = text.rstrip("\n") + "\n" + "".join(f"\n\n{block}" for block in appended)
    return text


def module_docstring(text: str) -> str | None:
    """The module's docstring; None without one or when the text does not parse."""
    module = _Module.parse(text)
    if module is None or not module.statements or not _is_docstring(module.statements[0][0]):
        return None
    return ast.get_docstring(ast.Module(body=[module.statements[0][0]], type_ignores=[]))


def _additive(node: ast.stmt) -> bool:
    """Statements a union may add: imports, definitions and the module docstring."""
    return isinstance(node, (ast.Import, ast.ImportFrom, *_DEFINITIONS)) or _is_docstring(node)


def _from_import(module: str, names: list[str]) -> str:
    """``from module import names`` on one line, or one name a line when that is longer
    than formatters' default line length (as black and ruff format write it)."""
    line = f"from {module} import {', '.join(names)}\n"
    if len(line) <= _LINE_LENGTH + 1:
        return line
    return f"from {module} import (\n" + "".join(f"    {name},\n" for name in names) + ")\n"


def _is_docstring(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )


def _import_point(theirs: _Module) -> tuple[int, bool, bool]:
    """The line index where new plain imports go (after the module's leading plain
    imports, else before its first ``from`` import, else after its docstring), and whether
    a blank line goes before and after them."""
    end, plain = 0, False
    for index, (node, _) in enumerate(theirs.statements):
        if _is_docstring(node) and index == 0:
            end = node.end_lineno or node.lineno
        elif isinstance(node, ast.Import):
            end, plain = node.end_lineno or node.lineno, True
        elif isinstance(node, ast.ImportFrom) and not plain:
            return node.lineno - 1, False, True
        else:
            break
    return end, not plain and end > 0, not plain
