"""Mutants of one function: the standard operators, applied one at a time to its body.

A mutant is a small change to the function that a good test would notice: an operator
swapped (``+`` for ``-``, ``<`` for ``<=``, ``and`` for ``or``), a constant changed
(``n`` to ``n + 1``, ``'s'`` to ``'XXsXX'``, ``True`` to ``False``), a ``not`` dropped, a
returned value replaced by ``None``, ``break`` for ``continue``. Points are numbered in the
order a walk of the body meets them, so the host (which describes them) and the runner in the
sandbox (which compiles them, :mod:`._mutants_plugin`) agree on what mutant ``k`` is from the
source alone. The docstring, decorators, defaults and annotations are left alone: swapping a
function's code object does not re-evaluate them.

Standard library only: this file is copied into the sandbox and imported by the project's
interpreter, next to the plugin.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import CodeType

MAX_MUTANTS = 40
"""A function with more mutation points is measured on this many, spread evenly."""

_BINARY: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Div,
    ast.Div: ast.Mult,
    ast.FloorDiv: ast.Div,
    ast.Mod: ast.Div,
    ast.Pow: ast.Mult,
    ast.LShift: ast.RShift,
    ast.RShift: ast.LShift,
    ast.BitAnd: ast.BitOr,
    ast.BitOr: ast.BitAnd,
    ast.BitXor: ast.BitAnd,
}
_COMPARE: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
}
_SYMBOLS = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.BitXor: "^",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Is: "is",
    ast.IsNot: "is not",
    ast.In: "in",
    ast.NotIn: "not in",
    ast.And: "and",
    ast.Or: "or",
}


@dataclass(frozen=True)
class Point:
    """One place to mutate: its line, what changes (``'<' to '<='``), and how to apply it to
    the tree it was found in."""

    line: int
    change: str
    apply: Callable[[], None]


@dataclass(frozen=True)
class Mutant:
    """Mutant ``index`` of a function: its line and what changed there."""

    index: int
    line: int
    change: str


class MutatorError(ValueError):
    """The function cannot be found or compiled."""


def mutants(source: str | bytes, qualname: str, limit: int = MAX_MUTANTS) -> list[Mutant]:
    """The mutants of ``qualname`` measured: all its points, or ``limit`` spread evenly."""
    points = _points(ast.parse(source), qualname)
    return [
        Mutant(index, points[index].line, points[index].change)
        for index in _chosen(len(points), limit)
    ]


def _chosen(count: int, limit: int) -> list[int]:
    if count <= limit:
        return list(range(count))
    return sorted({round(i * (count - 1) / (limit - 1)) for i in range(limit)})


def mutated_code(source: str | bytes, filename: str, qualname: str, index: int) -> CodeType:
    """The code object of ``qualname`` with mutation point ``index`` applied, compiled from
    the whole module so its line numbers, names and free variables are the original's."""
    tree = ast.parse(source)
    points = _points(tree, qualname)
    if not 0 <= index < len(points):
        raise MutatorError(f"there is no mutation point {index} in {qualname}")
    points[index].apply()
    ast.fix_missing_locations(tree)
    try:
        module = compile(tree, filename, "exec", dont_inherit=True)
    except (SyntaxError, ValueError, TypeError) as exc:
        raise MutatorError(f"mutant {index} does not compile: {exc}") from None
    return function_code(module, tree, qualname)


def function_code(module: CodeType, tree: ast.Module, qualname: str) -> CodeType:
    """The code object compiled for ``qualname`` within a module's code."""
    node = _definition(tree, qualname)
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    for code in _codes(module):
        if code.co_name == node.name and code.co_firstlineno in (first, node.lineno):
            own = getattr(code, "co_qualname", qualname)
            if own == qualname:
                return code
    raise MutatorError(f"no code object for {qualname}")


def _codes(code: CodeType) -> Iterator[CodeType]:
    for const in code.co_consts:
        if isinstance(const, CodeType):
            yield const
            yield from _codes(const)


def _definition(tree: ast.Module, qualname: str) -> ast.FunctionDef | ast.AsyncFunctionDef:
    body: list[ast.stmt] = tree.body
    found: ast.AST | None = None
    for part in qualname.split("."):
        found = next(
            (
                node
                for node in body
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                and node.name == part
            ),
            None,
        )
        if found is None:
            raise MutatorError(f"{qualname!r} is not defined in the module")
        body = found.body
    if not isinstance(found, (ast.FunctionDef, ast.AsyncFunctionDef)):
        raise MutatorError(f"{qualname!r} is not a function")
    return found


def _points(tree: ast.Module, qualname: str) -> list[Point]:
    node = _definition(tree, qualname)
    body = node.body
    if (
        body
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        body = body[1:]
    collector = _Collector()
    for statement in body:
        collector.visit(statement)
    return collector.points


class _Collector(ast.NodeVisitor):
    """Every mutation point under the visited statements, in walk order."""

    def __init__(self) -> None:
        self.points: list[Point] = []
        self._in_fstring = 0

    def _add(self, node: ast.AST, change: str, apply: Callable[[], None]) -> None:
        self.points.append(Point(getattr(node, "lineno", 0), change, apply))

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._body_only(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._body_only(node)

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self.visit(node.body)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for statement in node.body:
            self.visit(statement)

    def _body_only(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for statement in node.body:
            self.visit(statement)

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        self._in_fstring += 1
        self.generic_visit(node)
        self._in_fstring -= 1

    def visit_BinOp(self, node: ast.BinOp) -> None:
        self.generic_visit(node)
        self._operator(node, node.op)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.generic_visit(node)
        self._operator(node, node.op)

    def _operator(self, node: ast.BinOp | ast.AugAssign, op: ast.operator) -> None:
        replacement = _BINARY.get(type(op))
        if replacement is None:
            return
        suffix = "=" if isinstance(node, ast.AugAssign) else ""

        def apply() -> None:
            node.op = replacement()

        change = f"'{_SYMBOLS[type(op)]}{suffix}' to '{_SYMBOLS[replacement]}{suffix}'"
        self._add(node, change, apply)

    def visit_Compare(self, node: ast.Compare) -> None:
        self.generic_visit(node)
        for position, op in enumerate(node.ops):
            replacement = _COMPARE.get(type(op))
            if replacement is None:
                continue

            def apply(position: int = position, replacement: type[ast.cmpop] = replacement) -> None:
                node.ops[position] = replacement()

            self._add(node, f"'{_SYMBOLS[type(op)]}' to '{_SYMBOLS[replacement]}'", apply)

    def visit_BoolOp(self, node: ast.BoolOp) -> None:
        self.generic_visit(node)
        replacement = ast.Or if isinstance(node.op, ast.And) else ast.And

        def apply() -> None:
            node.op = replacement()

        self._add(node, f"'{_SYMBOLS[type(node.op)]}' to '{_SYMBOLS[replacement]}'", apply)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> None:
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):

            def drop_not() -> None:
                node.operand = ast.UnaryOp(op=ast.Not(), operand=node.operand)

            self._add(node, "'not x' to 'x'", drop_not)
        elif isinstance(node.op, ast.USub):

            def drop_minus() -> None:
                node.op = ast.UAdd()

            self._add(node, "'-x' to 'x'", drop_minus)

    def visit_Constant(self, node: ast.Constant) -> None:
        value = node.value
        if isinstance(value, bool):
            flipped = not value

            def flip() -> None:
                node.value = flipped

            self._add(node, f"{value} to {flipped}", flip)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            bumped = value + 1

            def bump() -> None:
                node.value = bumped

            self._add(node, f"{value!r} to {bumped!r}", bump)
        elif isinstance(value, str) and not self._in_fstring:
            changed = f"XX{value}XX"

            def wrap() -> None:
                node.value = changed

            self._add(node, f"{_short(value)} to {_short(changed)}", wrap)

    def visit_Return(self, node: ast.Return) -> None:
        self.generic_visit(node)
        value = node.value
        if value is None or (isinstance(value, ast.Constant) and value.value is None):
            return

        def return_none() -> None:
            node.value = ast.Constant(value=None)

        self._add(node, "the returned value to None", return_none)

    def visit_Break(self, node: ast.Break) -> None:
        self._swap_statement(node, ast.Continue(), "'break' to 'continue'")

    def visit_Continue(self, node: ast.Continue) -> None:
        self._swap_statement(node, ast.Break(), "'continue' to 'break'")

    def _swap_statement(self, node: ast.stmt, replacement: ast.stmt, change: str) -> None:
        def apply() -> None:
            node.__class__ = replacement.__class__

        self._add(node, change, apply)


def _short(text: str) -> str:
    return repr(text if len(text) <= 30 else text[:27] + "...")
