"""The libcst side of ``docstring_set``: find a definition and replace or insert its docstring.

Edits go through libcst, so everything else in the file (formatting, comments, quotes) stays
byte-for-byte. ``docstrings.py`` imports this module on first use only: libcst takes a
noticeable fraction of a second to import, and every command imports the capability registry.

Codes: TOOL_105 no definition with that qualname.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from remora.errors import ToolError

Definition = cst.FunctionDef | cst.ClassDef


def find(text: str, qualname: str) -> tuple[cst.Module, cst.Module | Definition, str]:
    """``text`` parsed, the node ``qualname`` names in it (as ``_pysource.find_definition``
    does; the module for ``""``) and the indentation its docstring needs."""
    module = cst.parse_module(text)
    if not qualname:
        return module, module, ""
    scope: cst.CSTNode = module
    found: Definition | None = None
    for part in qualname.split("."):
        found = next((d for d in _definitions(scope) if d.name.value == part), None)
        if found is None:
            raise ToolError("TOOL_105", f"no class or function '{qualname}'", "check the qualname")
        scope = found.body
    assert found is not None
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    position = wrapper.resolve(PositionProvider)[found].start
    line = module.code.splitlines()[position.line - 1]
    outer = line[: len(line) - len(line.lstrip())]
    body = found.body
    step = body.indent if isinstance(body, cst.IndentedBlock) else None
    return module, found, outer + (step if step is not None else module.default_indent)


def _definitions(node: cst.CSTNode) -> Iterator[Definition]:
    """Definitions under ``node`` in source order, not descending into definitions."""
    for child in node.children:
        if isinstance(child, Definition):
            yield child
        else:
            yield from _definitions(child)


def apply(module: cst.Module, node: cst.Module | Definition, literal: str) -> tuple[str, str]:
    """The source of ``module`` with ``node``'s docstring replaced or inserted, and which it was."""
    line = cst.SimpleStatementLine(body=[cst.Expr(cst.SimpleString(literal))])
    if isinstance(node, cst.Module):
        statements, action = _with_docstring(list(node.body), line, blank_after=True)
        return node.with_changes(body=statements).code, action
    body = node.body
    block: cst.BaseSuite
    if isinstance(body, cst.IndentedBlock):
        statements, action = _with_docstring(
            list(body.body), line, blank_after=isinstance(node, cst.ClassDef)
        )
        block = body.with_changes(body=statements)
    elif isinstance(body, cst.SimpleStatementSuite):
        rest = [] if _is_placeholder(body.body) else [cst.SimpleStatementLine(body=body.body)]
        block = cst.IndentedBlock(body=[line, *rest], header=body.trailing_whitespace)
        action = "inserted"
    else:
        raise ToolError("TOOL_105", "the definition has no body to edit", "check the qualname")
    updated = module.deep_replace(node, node.with_changes(body=block))
    if not isinstance(updated, cst.Module):
        raise ToolError("TOOL_105", "the definition could not be edited", "check the qualname")
    return updated.code, action


def _is_docstring(statement: cst.BaseStatement | cst.BaseSmallStatement) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, cst.SimpleString | cst.ConcatenatedString)
    )


def _is_placeholder(body: Sequence[cst.BaseSmallStatement]) -> bool:
    """A lone ``pass`` or ``...``, which a docstring makes redundant."""
    if len(body) != 1:
        return False
    only = body[0]
    return isinstance(only, cst.Pass) or (
        isinstance(only, cst.Expr) and isinstance(only.value, cst.Ellipsis)
    )


def _with_docstring(
    statements: list[cst.BaseStatement], line: cst.SimpleStatementLine, *, blank_after: bool
) -> tuple[list[cst.BaseStatement], str]:
    first = statements[0] if statements else None
    if isinstance(first, cst.SimpleStatementLine) and _is_docstring(first):
        return [
            line.with_changes(
                leading_lines=first.leading_lines, trailing_whitespace=first.trailing_whitespace
            ),
            *statements[1:],
        ], "replaced"
    if (
        len(statements) == 1
        and isinstance(first, cst.SimpleStatementLine)
        and not first.leading_lines
        and first.trailing_whitespace.comment is None
        and _is_placeholder(first.body)
    ):
        return [line], "inserted"
    leading = getattr(first, "leading_lines", None)
    needs_blank = leading is not None and (not leading or leading[0].comment is not None)
    if first is not None and blank_after and needs_blank:
        blank = cst.EmptyLine(indent=False)
        statements[0] = first.with_changes(leading_lines=[blank, *(leading or [])])
    return [line, *statements], "inserted"
