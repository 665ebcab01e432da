"""``python_signature``: what a function or class takes, returns and raises, from source alone.

Built on ``ast``, so it works on untyped code and never imports the code it describes.
Text (annotations, defaults, decorators) is copied from the source as written. The docstring
capabilities build their Args/Returns/Raises sections from the same description.

Codes: TOOL_105 no definition with that qualname, TOOL_106 the source does not parse.
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Iterator
from typing import Any

from remora.errors import ToolError
from remora.tools.capabilities.pysource import (
    Definition,
    Located,
    all_qualnames,
    definition_not_found,
    definitions_in,
    find_definition,
    parse_python,
)
from remora.tools.capabilities.registry import CapabilityContext, capability

_NESTED_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


@capability
def python_signature(
    ctx: CapabilityContext, source: str, qualname: str | None = None
) -> dict[str, Any]:
    """Describe a function, method or class: params, return, raises, async, decorators.

    ``source`` may be a whole file or just the node's text (indented methods are fine);
    without ``qualname`` it must define exactly one top-level function or class. Implicit
    ``self``/``cls`` is left out of ``params``; ``method_kind`` says which it was. For a
    class, ``params`` are those of its ``__init__``.
    """
    if not isinstance(source, str) or not source.strip():
        raise ToolError("TOOL_106", "the source is empty", "pass the code of the function")
    text = textwrap.dedent(source)
    tree = parse_python(text, "the source")
    return describe(text, resolve(tree, qualname))


def resolve(tree: ast.Module, qualname: str | None) -> Located:
    """The definition ``qualname`` names in ``tree``, tolerating a source that is only the node.

    When the exact dotted path is absent (a method's text has no class around it), a unique
    definition with the last name part is used; without a qualname, the only top-level one.
    """
    if not qualname:
        top = list(definitions_in(tree.body))
        if len(top) == 1:
            return Located(top[0], ())
        raise definition_not_found("the source", "", all_qualnames(tree))
    located = find_definition(tree, qualname)
    if located is not None:
        return located
    name = qualname.rsplit(".", 1)[-1]
    matches = [q for q in all_qualnames(tree) if q.rsplit(".", 1)[-1] == name]
    if len(matches) == 1:
        found = find_definition(tree, matches[0])
        if found is not None:
            return found
    raise definition_not_found("the source", qualname, all_qualnames(tree))


def describe(text: str, located: Located) -> dict[str, Any]:
    """The JSON description of one located definition in ``text``."""
    node = located.node
    if isinstance(node, ast.ClassDef):
        init = next(
            (
                d
                for d in definitions_in(node.body)
                if isinstance(d, ast.FunctionDef | ast.AsyncFunctionDef) and d.name == "__init__"
            ),
            None,
        )
        params = _params(text, init.args, skip_first=True) if init else []
        return {
            "name": node.name,
            "kind": "class",
            "params": params,
            "returns": None,
            "raises": raised_names(init) if init else [],
            "is_async": False,
            "is_method": False,
            "method_kind": None,
            "is_generator": False,
            "returns_value": False,
            "decorators": _decorators(text, node),
            "bases": [_segment(text, base) for base in node.bases],
            "line": node.lineno,
        }
    kind = method_kind(located)
    return {
        "name": node.name,
        "kind": "method" if kind else "function",
        "params": _params(text, node.args, skip_first=kind in ("instance", "class", "property")),
        "returns": _segment(text, node.returns) if node.returns else None,
        "raises": raised_names(node),
        "is_async": isinstance(node, ast.AsyncFunctionDef),
        "is_method": kind is not None,
        "method_kind": kind,
        "is_generator": is_generator(node),
        "returns_value": returns_value(node),
        "decorators": _decorators(text, node),
        "line": node.lineno,
    }


def method_kind(located: Located) -> str | None:
    """instance | class | static | property for methods, None for plain functions.

    Without an enclosing class in the source (only the method's own text), a first
    parameter named ``self`` or ``cls`` or a staticmethod/classmethod decorator decides.
    """
    node = located.node
    if isinstance(node, ast.ClassDef):
        return None
    names = {_decorator_name(d) for d in node.decorator_list}
    every = [*node.args.posonlyargs, *node.args.args]
    first = every[0].arg if every else None
    if not located.in_class and not (
        not located.parents
        and (first in ("self", "cls") or names & {"staticmethod", "classmethod"})
    ):
        return None
    if "staticmethod" in names:
        return "static"
    if "classmethod" in names:
        return "class"
    if "property" in names or any(n.endswith((".setter", ".getter", ".deleter")) for n in names):
        return "property"
    return "instance"


def _decorator_name(node: ast.expr) -> str:
    target = node.func if isinstance(node, ast.Call) else node
    try:
        return ast.unparse(target)
    except (AttributeError, ValueError):
        return ""


def _decorators(text: str, node: Definition) -> list[str]:
    return ["@" + _segment(text, d) for d in node.decorator_list]


def _segment(text: str, node: ast.AST) -> str:
    segment = ast.get_source_segment(text, node)
    return segment if segment and "\n" not in segment else ast.unparse(node)


def _params(text: str, args: ast.arguments, *, skip_first: bool) -> list[dict[str, Any]]:
    positional = [*args.posonlyargs, *args.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults))
    defaults.extend(args.defaults)
    entries: list[tuple[ast.arg, str, ast.expr | None]] = []
    for index, arg in enumerate(positional):
        kind = "positional_only" if index < len(args.posonlyargs) else "positional_or_keyword"
        entries.append((arg, kind, defaults[index]))
    if args.vararg:
        entries.append((args.vararg, "var_positional", None))
    for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        entries.append((arg, "keyword_only", default))
    if args.kwarg:
        entries.append((args.kwarg, "var_keyword", None))
    if skip_first and positional:
        entries = entries[1:]
    return [
        {
            "name": arg.arg,
            "kind": kind,
            "annotation": _segment(text, arg.annotation) if arg.annotation else None,
            "default": _segment(text, default) if default is not None else None,
        }
        for arg, kind, default in entries
    ]


def _own_nodes(node: Definition) -> Iterator[ast.AST]:
    """Every node of ``node``'s body, not descending into nested functions, classes, lambdas."""
    stack: list[ast.AST] = list(reversed(node.body))
    while stack:
        current = stack.pop()
        yield current
        if isinstance(current, _NESTED_SCOPES):
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(current))))


def raised_names(node: Definition) -> list[str]:
    """Exception names in the body's ``raise`` statements, nested definitions excluded.

    A bare ``raise`` inside ``except E:`` counts as raising ``E``.
    """
    names: list[str] = []

    def visit(statements: list[ast.stmt], handling: list[str]) -> None:
        for statement in statements:
            if isinstance(statement, _NESTED_SCOPES):
                continue
            if isinstance(statement, ast.Raise):
                if statement.exc is None:
                    names.extend(handling)
                else:
                    names.append(_exception_name(statement.exc))
            for field, value in ast.iter_fields(statement):
                if field == "handlers":
                    for handler in value:
                        visit(handler.body, _handler_types(handler))
                elif field == "cases":
                    for case in value:
                        visit(case.body, handling)
                elif isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                    visit(value, handling)

    visit(node.body, [])
    return list(dict.fromkeys(name for name in names if name))


def _exception_name(expr: ast.expr) -> str:
    target = expr.func if isinstance(expr, ast.Call) else expr
    if isinstance(target, ast.Name | ast.Attribute):
        return ast.unparse(target)
    return ""


def _handler_types(handler: ast.ExceptHandler) -> list[str]:
    if handler.type is None:
        return ["Exception"]
    items = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return [ast.unparse(item) for item in items]


def is_generator(node: Definition) -> bool:
    """Whether the body itself yields (a nested function's yield does not count)."""
    return any(isinstance(n, ast.Yield | ast.YieldFrom) for n in _own_nodes(node))


def returns_value(node: Definition) -> bool:
    """Whether some ``return`` in the body itself returns something other than None."""
    return any(
        isinstance(n, ast.Return)
        and n.value is not None
        and not (isinstance(n.value, ast.Constant) and n.value.value is None)
        for n in _own_nodes(node)
    )


def raise_messages(node: Definition) -> dict[str, str]:
    """The first literal message each exception type is raised with in the body itself."""
    messages: dict[str, str] = {}
    for current in _own_nodes(node):
        if not isinstance(current, ast.Raise) or not isinstance(current.exc, ast.Call):
            continue
        name = _exception_name(current.exc)
        args = current.exc.args
        first = args[0] if args else None
        text = first.value if isinstance(first, ast.Constant) else None
        if name and name not in messages and isinstance(text, str) and text.strip():
            messages[name] = text.strip()
    return messages
