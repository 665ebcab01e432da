"""Argument lists for the callables a function returns (decorators, ``compose``, ``curry``).

A test of ``compose(inc, double)`` that checks only that a function came back pins nothing;
one that calls it, ``compose(inc, double)(3) == 7``, pins what it does. The host chooses what
the returned callable is called with, most trusted first: the calls people write in the
function's docstring examples and in the project (``NAME(...)(ARGS)``, or ``g = NAME(...)``
then ``g(ARGS)``), then plain candidates of the common shapes. Every list is re-checked as
data (:func:`~remora.tools.capabilities.arguments.parse_case`), since it is written into
the test; the observation child keeps only those the callable accepts.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping

from remora import pyast
from remora.tools.capabilities.arguments import CaseError, Scope, parse_case
from remora.tools.capabilities.pysource import find_definition

LIMIT = 12
FALLBACK = (
    "3", "lambda x: x * 2", "-2", "0", "'abc'", "[3, 1, 2]", "2, 5", "", "'a', 'b'", "None",
)  # fmt: skip
"""Argument lists of the common shapes, for a callable nobody was seen calling: a function
among them, for a decorator factory's decorator."""


def returned_call_args(
    source: str, qualname: str, project: Mapping[str, str], scope: Scope
) -> list[str]:
    """Argument lists to call what ``qualname`` returns with, as source; at most
    :data:`LIMIT`, people's first."""
    name = qualname.rsplit(".", 1)[-1]
    found: list[str] = []
    for text in [*_from_people(source, qualname, name, project), *FALLBACK]:
        if len(found) >= LIMIT:
            break
        try:
            checked = parse_case(text, scope).text if text else ""
        except CaseError:
            continue
        if checked not in found:
            found.append(checked)
    return found


def _from_people(
    source: str, qualname: str, name: str, project: Mapping[str, str]
) -> Iterator[str]:
    """The argument lists of calls of a returned callable in the docstring's examples, then
    in the project's files."""
    tree = pyast.parse(source)
    located = find_definition(tree, qualname)
    if located is not None:
        yield from _in_examples(ast.get_docstring(located.node) or "", name)
    for path in sorted(project):
        try:
            yield from _second_calls(pyast.parse(project[path]), name)
        except (SyntaxError, ValueError):
            continue


def _in_examples(docstring: str, name: str) -> Iterator[str]:
    """Second calls in ``>>>`` examples, read as one module (an example binds a name that a
    later one calls)."""
    lines = [
        line.strip()[4:] if line.strip().startswith((">>> ", "... ")) else line.strip()[3:]
        for line in docstring.splitlines()
        if line.strip().startswith((">>>", "..."))
    ]
    try:
        tree = pyast.parse("\n".join(lines))
    except (SyntaxError, ValueError):
        return
    yield from _second_calls(tree, name)


def _second_calls(tree: ast.AST, name: str) -> Iterator[str]:
    """``ARGS`` of ``name(...)(ARGS)``, and of ``g(ARGS)`` after ``g = name(...)``."""
    bound: set[str] = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and _calls(node.value, name)
        ):
            bound.add(node.targets[0].id)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        applied = _calls(node.func, name)
        named = isinstance(node.func, ast.Name) and node.func.id in bound
        if applied or named:
            yield _arguments(node)


def _calls(node: ast.expr, name: str) -> bool:
    """Whether ``node`` is a call of ``name`` (or of an attribute of that name)."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    return (isinstance(func, ast.Name) and func.id == name) or (
        isinstance(func, ast.Attribute) and func.attr == name
    )


def _arguments(call: ast.Call) -> str:
    parts = [ast.unparse(arg) for arg in call.args]
    parts += [
        f"{keyword.arg}={ast.unparse(keyword.value)}"
        if keyword.arg
        else "**" + ast.unparse(keyword.value)
        for keyword in call.keywords
    ]
    return ", ".join(parts)
