"""The lint evaluation's injected mistakes: a fixed catalogue of small rewrites ruff flags.

Each :class:`Injection` is a semantics-preserving (or documented near-preserving) source
rewrite that ruff reports with one code of the lint agent's pinned rule set
(:data:`~remora.operations.lint.rules.DEFAULT_RULES`). Sites are found with
``ast`` and the edit is applied to the text, so the rest of the module keeps its exact
formatting. :func:`inject_module` applies entries in a seeded order, each at a seeded
eligible site, and keeps an injection only when the module still parses, still imports
and ruff reports the intended code on the edited lines; no two injections touch the same
lines. :func:`inject_keeping_tests` also keeps the package's test suite passing when it
passed before.
"""

from __future__ import annotations

import ast
import contextlib
import io
import itertools
import json
import random
import re
import tokenize
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from remora import pyast
from remora.evaluation.commands import run_command
from remora.evaluation.context import EvalContext
from remora.evaluation.functions import parameter_names
from remora.evaluation.package import Project
from remora.operations.lint.rules import DEFAULT_RULES
from remora.source_edits import PythonSource, TextEdit
from remora.tools.capabilities.ruff import ruff_command

SELECT = "--select=" + ",".join(DEFAULT_RULES)
RUFF_TIMEOUT_S = 300.0
LINE_NUMBER = re.compile(r"\bline \d+")
SIMPLE = (
    ast.Return,
    ast.Assign,
    ast.AugAssign,
    ast.AnnAssign,
    ast.Expr,
    ast.Pass,
    ast.Break,
    ast.Continue,
    ast.Raise,
    ast.Delete,
    ast.Import,
    ast.ImportFrom,
    ast.Global,
    ast.Nonlocal,
    ast.Assert,
)
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
BOOL_CALLS = ("isinstance", "issubclass", "callable", "hasattr")
BUILTIN_TYPES = ("list", "tuple", "dict", "set", "frozenset", "str", "bytes", "int", "float")
SPARE_IMPORTS = ("string", "textwrap", "copy", "types", "math", "json", "numbers", "abc")
SPARE_NAMES = ("count", "size", "limit", "label", "marker", "extra", "spare", "seen")
MAPPING_METHODS = ("items", "keys", "values", "get", "setdefault")

Diagnostic = tuple[str, str, str]
"""A ruff diagnostic without its position: (file, code, message)."""

Rng = Callable[..., random.Random]
"""A seeded generator per decision, given its labels (:meth:`EvalContext.rng`)."""


# --- source positions ---------------------------------------------------------------------


class Source(PythonSource):
    """A module's text and tree, with ast positions turned into text offsets."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self._bound: set[str] | None = None

    def ancestors(self, node: ast.AST) -> Iterator[ast.AST]:
        while node in self.parents:
            node = self.parents[node]
            yield node

    def in_fstring(self, node: ast.AST) -> bool:
        """Inside an f-string (whose inner positions Python 3.11 reports unreliably)."""
        return any(isinstance(up, ast.JoinedStr) for up in self.ancestors(node))

    def function_of(self, node: ast.AST) -> ast.AST | None:
        return next((up for up in self.ancestors(node) if isinstance(up, FUNCTIONS)), None)

    def shadowed(self, name: str) -> bool:
        """Whether the module binds ``name`` anywhere (so it may not be the builtin)."""
        if self._bound is None:
            self._bound = {
                node.id
                for node in ast.walk(self.tree)
                if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load)
            }
            self._bound |= bound_names(self.tree) - {
                node.id for node in ast.walk(self.tree) if isinstance(node, ast.Name)
            }
        return name in self._bound

    def single_line(self, node: ast.AST) -> bool:
        line, _, end_line, _ = span(node)
        return line == end_line

    def own_line(self, node: ast.AST) -> bool:
        """Only whitespace before the node on its first line."""
        line = span(node)[0]
        return self.text[self.line_start(line) : self.start(node)].strip() == ""

    def rest_of_line(self, offset: int) -> str:
        """Text from ``offset`` to the end of its line, newline excluded."""
        end = self.text.find("\n", offset)
        return self.text[offset : len(self.text) if end < 0 else end]


def span(node: ast.AST) -> tuple[int, int, int, int]:
    """(line, column, end line, end column) of a node that has a position."""
    located = cast(ast.expr, node)
    line, col = located.lineno, located.col_offset
    return line, col, located.end_lineno or line, located.end_col_offset or col


def bound_names(tree: ast.AST) -> set[str]:
    """Every name bound or used in ``tree``: variables, parameters, defs, imports."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, (*FUNCTIONS, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            names.update(node.names)
    return names


def docstring_node(node: ast.AST) -> ast.Expr | None:
    body = getattr(node, "body", None)
    if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
        value = body[0].value
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            return body[0]
    return None


def is_docstring(src: Source, stmt: ast.AST) -> bool:
    parent = src.parents.get(stmt)
    return parent is not None and docstring_node(parent) is stmt


def mangled(attr: str) -> bool:
    """A private name Python mangles (``getattr`` would not find it as written)."""
    return attr.startswith("__") and not attr.endswith("__")


def fresh_name(node: ast.AST, names: Sequence[str]) -> str | None:
    used = bound_names(node)
    return next((name for name in names if name not in used), None)


def body_start(src: Source, func: ast.AST) -> tuple[int, str, int] | None:
    """(offset, indentation, line) where a statement can go before the body's first
    statement after the docstring; None when the body has no such statement on its own line."""
    body = list(getattr(func, "body", []))
    if docstring_node(func) is not None:
        body = body[1:]
    if not body:
        return None
    first = body[0]
    decorators = getattr(first, "decorator_list", [])
    line = min([first.lineno, *(d.lineno for d in decorators)])
    if line <= span(func)[0]:
        return None
    text = src.line_text(line)
    indent = text[: len(text) - len(text.lstrip())]
    if not indent or not text.strip():
        return None
    if not decorators and not src.own_line(first):
        return None
    return src.line_start(line), indent, line


def bool_context(src: Source, node: ast.AST) -> bool:
    """Whether ``node``'s value is only used for its truth (so ``== True`` changes nothing
    for a bool) and it may be followed by ``== ...`` without parentheses."""
    parent = src.parents.get(node)
    if isinstance(parent, (ast.If, ast.While, ast.IfExp, ast.Assert)):
        return parent.test is node
    if isinstance(parent, ast.comprehension):
        return node in parent.ifs
    if isinstance(parent, ast.BoolOp):
        return bool_context(src, parent) or isinstance(src.parents.get(parent), ast.Return)
    if isinstance(parent, ast.UnaryOp):
        return isinstance(parent.op, ast.Not)
    return isinstance(parent, ast.Return)


def is_builtin_call(src: Source, node: ast.AST, names: Sequence[str]) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in names
        and not src.shadowed(node.func.id)
        and not node.keywords
    )


# --- the catalogue ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Edit(TextEdit):
    """Replace ``text[start:end]`` by ``new``; ruff should then report the injection's code
    on a line from ``anchor`` (a line at or before the edit) to the edit's last new line."""

    anchor: int


Finder = Callable[[Source], list[Edit]]


@dataclass(frozen=True)
class Injection:
    """One catalogue entry: the ruff code it provokes and where it can go (``find``)."""

    key: str
    code: str
    description: str
    find: Finder


def replace(src: Source, node: ast.AST, new: str) -> Edit:
    return Edit(src.start(node), src.end(node), new, span(node)[0])


def insert(src: Source, offset: int, new: str) -> Edit:
    return Edit(offset, offset, new, src.line_of(offset))


def nodes(src: Source, kind: type[ast.AST] | tuple[type[ast.AST], ...]) -> Iterator[Any]:
    """The module's nodes of ``kind`` outside f-strings (typed loosely: callers narrow)."""
    for node in ast.walk(src.tree):
        if isinstance(node, kind) and not src.in_fstring(node):
            yield node


def compare_sites(src: Source, op: type[ast.cmpop], between: str) -> Iterator[ast.Compare]:
    """Single-operator comparisons with ``op`` written exactly as the regex ``between``."""
    for node in nodes(src, ast.Compare):
        if len(node.ops) == 1 and isinstance(node.ops[0], op):
            gap = src.text[src.end(node.left) : src.start(node.comparators[0])]
            if re.fullmatch(between, gap):
                yield node


def find_is_none(src: Source) -> list[Edit]:
    return [
        Edit(src.end(c.left), src.start(c.comparators[0]), " == ", c.lineno)
        for c in compare_sites(src, ast.Is, r"[ \t]+is[ \t]+")
        if isinstance(c.comparators[0], ast.Constant) and c.comparators[0].value is None
    ]


def find_is_not_none(src: Source) -> list[Edit]:
    return [
        Edit(src.end(c.left), src.start(c.comparators[0]), " != ", c.lineno)
        for c in compare_sites(src, ast.IsNot, r"[ \t]+is[ \t]+not[ \t]+")
        if isinstance(c.comparators[0], ast.Constant) and c.comparators[0].value is None
    ]


def find_true_compare(src: Source) -> list[Edit]:
    return [
        insert(src, src.end(call), " == True")
        for call in nodes(src, ast.Call)
        if is_builtin_call(src, call, BOOL_CALLS) and bool_context(src, call)
    ]


def _negated(src: Source, op: type[ast.cmpop], between: str, word: str) -> list[Edit]:
    edits = []
    for c in compare_sites(src, op, between):
        left = src.text[src.start(c) : src.end(c.left)]
        right = src.text[src.start(c.comparators[0]) : src.end(c)]
        edits.append(replace(src, c, f"not {left} {word} {right}"))
    return edits


def find_not_in(src: Source) -> list[Edit]:
    return _negated(src, ast.NotIn, r"[ \t]+not[ \t]+in[ \t]+", "in")


def find_not_is(src: Source) -> list[Edit]:
    return _negated(src, ast.IsNot, r"[ \t]+is[ \t]+not[ \t]+", "is")


def find_type_compare(src: Source) -> list[Edit]:
    edits = []
    for call in nodes(src, ast.Call):
        if not (is_builtin_call(src, call, ("isinstance",)) and bool_context(src, call)):
            continue
        if len(call.args) != 2 or not isinstance(call.args[1], ast.Name):
            continue
        kind = call.args[1].id
        if kind in BUILTIN_TYPES and not src.shadowed(kind) and not src.shadowed("type"):
            edits.append(replace(src, call, f"type({src.segment(call.args[0])}) == {kind}"))
    return edits


def find_bare_except(src: Source) -> list[Edit]:
    edits = []
    for node in nodes(src, ast.Try):
        handler = node.handlers[-1] if node.handlers else None
        if handler is None or handler.type is None or handler.name is not None:
            continue
        colon = re.match(r"[ \t)]*:", src.text[src.end(handler.type) :])
        start = src.start(handler)
        if colon and src.text.startswith("except", start):
            end = src.end(handler.type) + colon.end() - 1
            edits.append(Edit(start, end, "except", handler.lineno))
    return edits


def find_lambda_assign(src: Source) -> list[Edit]:
    edits = []
    for func in nodes(src, ast.FunctionDef):
        nested = src.function_of(func) is not None
        if not nested or isinstance(src.parents.get(func), ast.ClassDef) or func.decorator_list:
            continue
        if func.returns or len(func.body) != 1 or not isinstance(func.body[0], ast.Return):
            continue
        value = func.body[0].value
        args = func.args
        annotated = any(
            a.annotation
            for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg)
            if a is not None
        )
        if value is None or annotated or not src.single_line(value):
            continue
        signature = ast.unparse(args)
        head = f"lambda {signature}" if signature else "lambda"
        edits.append(replace(src, func, f"{func.name} = {head}: {src.segment(value)}"))
    return edits


def find_two_imports(src: Source) -> list[Edit]:
    edits = []
    for first, second in itertools.pairwise(src.tree.body):
        if not (isinstance(first, ast.Import) and isinstance(second, ast.Import)):
            continue
        if len(first.names) != 1 or len(second.names) != 1:
            continue
        if second.lineno != span(first)[2] + 1 or not src.single_line(second):
            continue
        names = ", ".join(ast.unparse(n) for n in (*first.names, *second.names))
        edits.append(Edit(src.start(first), src.end(second), f"import {names}", first.lineno))
    return edits


def find_inline_if(src: Source) -> list[Edit]:
    edits = []
    for node in nodes(src, ast.If):
        if node.orelse or len(node.body) != 1 or not isinstance(node.body[0], SIMPLE):
            continue
        stmt = node.body[0]
        if not src.single_line(stmt) or not src.single_line(node.test):
            continue
        gap_start, gap_end = src.end(node.test), src.start(stmt)
        if re.fullmatch(r"[ \t]*:[ \t]*\n[ \t]*", src.text[gap_start:gap_end]):
            edits.append(Edit(gap_start, gap_end, ": ", node.lineno))
    return edits


def statement_lists(src: Source) -> Iterator[list[ast.stmt]]:
    for node in ast.walk(src.tree):
        if src.in_fstring(node):
            continue
        for name in ("body", "orelse", "finalbody"):
            value = getattr(node, name, None)
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                yield value


def find_two_statements(src: Source) -> list[Edit]:
    edits = []
    for body in statement_lists(src):
        for first, second in itertools.pairwise(body):
            if not (isinstance(first, SIMPLE) and isinstance(second, SIMPLE)):
                continue
            one_line = src.single_line(first) and src.single_line(second)
            if is_docstring(src, first) or not one_line:
                continue
            gap_start, gap_end = src.end(first), src.start(second)
            if re.fullmatch(r"[ \t]*\n[ \t]*", src.text[gap_start:gap_end]):
                edits.append(Edit(gap_start, gap_end, "; ", first.lineno))
    return edits


def find_semicolon(src: Source) -> list[Edit]:
    edits = []
    for body in statement_lists(src):
        for stmt in body:
            if not isinstance(stmt, SIMPLE) or is_docstring(src, stmt):
                continue
            if not src.single_line(stmt) or not src.own_line(stmt):
                continue
            if src.rest_of_line(src.end(stmt)).strip() == "":
                edits.append(insert(src, src.end(stmt), ";"))
    return edits


def find_unused_import(src: Source) -> list[Edit]:
    body = src.tree.body[1:] if docstring_node(src.tree) else src.tree.body
    imports = []
    for statement in body:
        if not isinstance(statement, (ast.Import, ast.ImportFrom)):
            break
        imports.append(statement)
    if not imports:
        return []
    line = span(imports[-1])[2] + 1
    offset = src.line_start(line)
    prefix = "" if src.text.endswith("\n") or offset < len(src.text) else "\n"
    used = bound_names(src.tree)
    return [insert(src, offset, f"{prefix}import {m}\n") for m in SPARE_IMPORTS if m not in used]


def _single_string(segment: str) -> bool:
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(segment).readline))
    except (tokenize.TokenError, SyntaxError):
        return False
    return sum(token.type == tokenize.STRING for token in tokens) == 1


def _assigns_all(node: ast.AST) -> bool:
    return isinstance(node, ast.Assign) and any(
        isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
    )


def find_empty_fstring(src: Source) -> list[Edit]:
    edits = []
    for node in nodes(src, ast.Constant):
        if not isinstance(node.value, str) or isinstance(src.parents.get(node), ast.Expr):
            continue
        if any(_assigns_all(up) for up in src.ancestors(node)):
            continue
        segment = src.segment(node)
        plain = segment[:1] in ("'", '"') and "{" not in segment and "}" not in segment
        if plain and _single_string(segment):
            edits.append(insert(src, src.start(node), "f"))
    return edits


def find_unused_local(src: Source) -> list[Edit]:
    edits = []
    for func in nodes(src, FUNCTIONS):
        names = parameter_names(func)
        params = [p for p in names if p not in ("self", "cls")] or list(names)
        where = body_start(src, func)
        name = fresh_name(func, SPARE_NAMES)
        if params and where and name:
            offset, indent, _ = where
            edits.append(insert(src, offset, f"{indent}{name} = {params[0]}\n"))
    return edits


def find_mutable_default(src: Source) -> list[Edit]:
    edits = []
    for func in nodes(src, FUNCTIONS):
        args = func.args
        if func.decorator_list or args.posonlyargs or args.kwonlyargs:
            continue
        if args.vararg or args.kwarg or not args.args:
            continue
        name = fresh_name(func, SPARE_NAMES)
        if name is None:
            continue
        end = max([src.end(args.args[-1]), *(src.end(d) for d in args.defaults)])
        edits.append(insert(src, end, f", {name}=[]"))
    return edits


def find_unused_loop_var(src: Source) -> list[Edit]:
    edits = []
    for func in nodes(src, FUNCTIONS):
        where = body_start(src, func)
        name = fresh_name(func, SPARE_NAMES)
        if where and name and not src.shadowed("range"):
            offset, indent, _ = where
            loop = f"{indent}for {name} in range(2):\n{indent}    pass\n"
            edits.append(insert(src, offset, loop))
    return edits


def find_getattr(src: Source) -> list[Edit]:
    if src.shadowed("getattr"):
        return []
    in_decorators = {
        id(inner)
        for func in nodes(src, (*FUNCTIONS, ast.ClassDef))
        for decorator in func.decorator_list
        for inner in ast.walk(decorator)
    }
    return [
        replace(src, node, f'getattr({src.segment(node.value)}, "{node.attr}")')
        for node in nodes(src, ast.Attribute)
        if isinstance(node.ctx, ast.Load)
        and not mangled(node.attr)
        and id(node) not in in_decorators
    ]


def find_setattr(src: Source) -> list[Edit]:
    edits = []
    for node in nodes(src, ast.Assign):
        if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Attribute):
            continue
        target = node.targets[0]
        if mangled(target.attr) or src.shadowed("setattr") or not src.own_line(node):
            continue
        obj, value = src.segment(target.value), src.segment(node.value)
        edits.append(replace(src, node, f'setattr({obj}, "{target.attr}", {value})'))
    return edits


def find_raise_without_from(src: Source) -> list[Edit]:
    edits = []
    for node in nodes(src, ast.Raise):
        inside = any(isinstance(up, ast.ExceptHandler) for up in src.ancestors(node))
        if inside and node.cause is not None and isinstance(node.exc, ast.Call):
            edits.append(Edit(src.end(node.exc), src.end(node), "", node.lineno))
    return edits


def _mapping_names(func: ast.AST) -> set[str]:
    """Names the function treats as mappings: it calls ``.items()``/``.keys()``/``.values()``/
    ``.get()``/``.setdefault()`` on them, or assigns them a dict display or comprehension, or
    the result of ``dict()``, ``defaultdict()`` or ``OrderedDict()``."""
    names = set()
    for node in ast.walk(func):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.attr in MAPPING_METHODS
        ):
            names.add(node.func.value.id)
        elif isinstance(node, ast.Assign) and _makes_mapping(node.value):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def _makes_mapping(value: ast.AST) -> bool:
    if isinstance(value, (ast.Dict, ast.DictComp)):
        return True
    if isinstance(value, ast.Call):
        func = value.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
        return name in ("dict", "defaultdict", "OrderedDict")
    return False


def find_dict_keys(src: Source) -> list[Edit]:
    edits = []
    for node in nodes(src, (ast.Compare, ast.For)):
        func = src.function_of(node)
        if func is None:
            continue
        if isinstance(node, ast.Compare):
            if len(node.ops) != 1 or not isinstance(node.ops[0], (ast.In, ast.NotIn)):
                continue
            target = node.comparators[0]
        else:
            target = node.iter
        if isinstance(target, ast.Name) and target.id in _mapping_names(func):
            edits.append(Edit(src.end(target), src.end(target), ".keys()", node.lineno))
    return edits


def _comprehension_rest(src: Source, node: ast.AST, last: ast.AST) -> str | None:
    """The `` for x in y ...`` part of a braced comprehension, after its element ``last``."""
    rest = src.text[src.end(last) : src.end(node) - 1]
    return rest if re.match(r"\s*(async\s+)?for\b", rest) else None


def _set_comp(src: Source, opening: str, closing: str) -> list[Edit]:
    if src.shadowed("set"):
        return []
    return [
        replace(src, node, f"{opening}{src.segment(node)[1:-1]}{closing}")
        for node in nodes(src, ast.SetComp)
    ]


def find_set_genexp(src: Source) -> list[Edit]:
    return _set_comp(src, "set(", ")")


def find_set_listcomp(src: Source) -> list[Edit]:
    return _set_comp(src, "set([", "])")


def _dict_comp(src: Source, opening: str, closing: str) -> list[Edit]:
    if src.shadowed("dict"):
        return []
    edits = []
    for node in nodes(src, ast.DictComp):
        rest = _comprehension_rest(src, node, node.value)
        if rest is None:
            continue
        pair = f"({src.segment(node.key)}, {src.segment(node.value)})"
        edits.append(replace(src, node, f"{opening}{pair}{rest}{closing}"))
    return edits


def find_dict_genexp(src: Source) -> list[Edit]:
    return _dict_comp(src, "dict(", ")")


def find_dict_listcomp(src: Source) -> list[Edit]:
    return _dict_comp(src, "dict([", "])")


def find_set_literal(src: Source) -> list[Edit]:
    if src.shadowed("set"):
        return []
    return [replace(src, n, f"set([{src.segment(n)[1:-1]}])") for n in nodes(src, ast.Set)]


def find_empty_call(src: Source) -> list[Edit]:
    edits = []
    for node in nodes(src, (ast.Dict, ast.List, ast.Tuple)):
        if isinstance(node, ast.Dict):
            name = "dict" if not node.keys else ""
        else:
            loads = isinstance(node.ctx, ast.Load)
            name = ("list" if isinstance(node, ast.List) else "tuple") if loads else ""
            name = "" if node.elts else name
        if name and not src.shadowed(name) and src.segment(node) in ("{}", "[]", "()"):
            edits.append(replace(src, node, f"{name}()"))
    return edits


def find_identity_comp(src: Source) -> list[Edit]:
    edits = []
    for node in nodes(src, ast.Call):
        if not is_builtin_call(src, node, ("list", "set")) or len(node.args) != 1:
            continue
        arg = node.args[0]
        if not isinstance(arg, ast.Name):
            continue
        var = "item" if arg.id != "item" else "element"
        body = f"{var} for {var} in {arg.id}"
        edits.append(replace(src, node, f"[{body}]" if node.func.id == "list" else f"{{{body}}}"))
    return edits


def find_useless_pass(src: Source) -> list[Edit]:
    edits = []
    for func in nodes(src, FUNCTIONS):
        where = body_start(src, func)
        if where:
            offset, indent, _ = where
            edits.append(insert(src, offset, f"{indent}pass\n"))
    return edits


CATALOGUE: tuple[Injection, ...] = (
    Injection("is-none-eq", "E711", "`x is None` -> `x == None`", find_is_none),
    Injection("is-not-none-ne", "E711", "`x is not None` -> `x != None`", find_is_not_none),
    Injection(
        "true-compare",
        "E712",
        "`isinstance/issubclass/callable/hasattr(...)` used as a condition -> `... == True`",
        find_true_compare,
    ),
    Injection("not-in", "E713", "`a not in b` -> `not a in b`", find_not_in),
    Injection("not-is", "E714", "`a is not b` -> `not a is b`", find_not_is),
    Injection(
        "type-compare",
        "E721",
        "`isinstance(x, T)` (T a builtin type) as a condition -> `type(x) == T`; NOT "
        "equivalent for subclasses of T (dropped if the package's tests fail)",
        find_type_compare,
    ),
    Injection(
        "bare-except",
        "E722",
        "last handler `except E:` (no `as`) -> `except:`; now also catches BaseException",
        find_bare_except,
    ),
    Injection(
        "lambda-assign",
        "E731",
        "nested `def f(a): return e` -> `f = lambda a: e`; f.__name__ becomes '<lambda>'",
        find_lambda_assign,
    ),
    Injection(
        "two-imports",
        "E401",
        "consecutive top-level `import a` / `import b` -> `import a, b`",
        find_two_imports,
    ),
    Injection(
        "inline-if", "E701", "`if c:` + one simple statement -> `if c: stmt`", find_inline_if
    ),
    Injection(
        "two-statements",
        "E702",
        "two consecutive one-line simple statements -> `a; b`",
        find_two_statements,
    ),
    Injection("semicolon", "E703", "one-line simple statement -> `stmt;`", find_semicolon),
    Injection(
        "unused-import",
        "F401",
        "new `import <stdlib module>` after the module's top-level imports",
        find_unused_import,
    ),
    Injection(
        "empty-fstring",
        "F541",
        "string literal without braces or prefix (not a docstring, not in __all__) -> f-string",
        find_empty_fstring,
    ),
    Injection(
        "unused-local",
        "F841",
        "new `<name> = <first parameter>` as a function's first statement",
        find_unused_local,
    ),
    Injection(
        "mutable-default",
        "B006",
        "new last parameter `<name>=[]` the body never uses (undecorated functions with "
        "plain parameters only)",
        find_mutable_default,
    ),
    Injection(
        "unused-loop-var",
        "B007",
        "new `for <name> in range(2): pass` as a function's first statement",
        find_unused_loop_var,
    ),
    Injection("getattr-const", "B009", '`o.attr` (a load) -> `getattr(o, "attr")`', find_getattr),
    Injection("setattr-const", "B010", '`o.attr = v` -> `setattr(o, "attr", v)`', find_setattr),
    Injection(
        "raise-without-from",
        "B904",
        "`raise X(...) from e` inside `except` -> `raise X(...)` (only where the code has one)",
        find_raise_without_from,
    ),
    Injection(
        "dict-keys",
        "SIM118",
        "`k in d` / `for k in d` -> `d.keys()`, where the function calls .items/.keys/"
        ".values/.get/.setdefault on d or assigns it {}, a dict comprehension, dict(), "
        "defaultdict() or OrderedDict()",
        find_dict_keys,
    ),
    Injection("set-genexp", "C401", "`{e for x in y}` -> `set(e for x in y)`", find_set_genexp),
    Injection(
        "dict-genexp", "C402", "`{k: v for x in y}` -> `dict((k, v) for x in y)`", find_dict_genexp
    ),
    Injection(
        "set-listcomp", "C403", "`{e for x in y}` -> `set([e for x in y])`", find_set_listcomp
    ),
    Injection(
        "dict-listcomp",
        "C404",
        "`{k: v for x in y}` -> `dict([(k, v) for x in y])`",
        find_dict_listcomp,
    ),
    Injection("set-literal", "C405", "`{a, b}` -> `set([a, b])`", find_set_literal),
    Injection(
        "empty-call",
        "C408",
        "`{}` / `[]` / `()` -> `dict()` / `list()` / `tuple()`",
        find_empty_call,
    ),
    Injection(
        "identity-comp",
        "C416",
        "`list(y)` / `set(y)` (y a name) -> `[v for v in y]` / `{v for v in y}`",
        find_identity_comp,
    ),
    Injection(
        "useless-pass",
        "PIE790",
        "new `pass` before the first statement of a function body (after any docstring)",
        find_useless_pass,
    ),
)


# --- ruff's diagnostics ------------------------------------------------------------------------


class RuffError(Exception):
    """ruff failed (exit 2, timeout) or printed something that is not its JSON report."""


def ruff_diagnostics(project: Project, files: Sequence[str]) -> list[dict[str, Any]]:
    """``ruff check --isolated`` with the pinned rule set on ``files`` of the project, its
    JSON items with project-relative posix ``filename``; :class:`RuffError` when it fails.

    ``--isolated`` keeps the package's own ruff settings out: every tool is measured against
    the same rules whatever the package configures.
    """
    argv = [*ruff_command(), "check", "--isolated", "--no-cache", "--output-format", "json"]
    result = run_command([*argv, SELECT, *files], project.root, RUFF_TIMEOUT_S)
    if result.returncode not in (0, 1) or result.timed_out:
        raise RuffError(f"ruff failed: {result.tail()}")
    try:
        items = json.loads(result.stdout or "[]")
    except json.JSONDecodeError:
        raise RuffError(f"ruff printed no JSON: {result.stdout[:200]!r}") from None
    if not isinstance(items, list):
        raise RuffError(f"ruff printed no list of diagnostics: {result.stdout[:200]!r}")
    root = project.root.resolve()
    for item in items:
        name = Path(str(item.get("filename", "")))
        with contextlib.suppress(ValueError):
            name = name.resolve().relative_to(root)
        item["filename"] = name.as_posix()
    return items


def diagnostic_keys(items: Sequence[dict[str, Any]]) -> Counter[Diagnostic]:
    """Diagnostics without positions ("line N" in messages too, as F811 names a line), so
    an edit that shifts lines does not make the rest of the file's diagnostics new."""
    return Counter(
        (str(item["filename"]), str(item["code"]), LINE_NUMBER.sub("line N", item["message"]))
        for item in items
    )


# --- injecting -----------------------------------------------------------------------------------


@dataclass
class Applied:
    """An injection kept in a module: its entry, code and the line ruff reports it on."""

    key: str
    code: str
    line: int


@dataclass
class ModuleInjection:
    """What was injected into one module, and why the other entries tried were dropped;
    ``skipped`` says why nothing could be injected (the clean module is already broken)."""

    path: str
    applied: list[Applied] = field(default_factory=list)
    dropped: dict[str, str] = field(default_factory=dict)
    retried_with_tests: bool = False
    skipped: str = ""


def inject_module(
    project: Project,
    relative: str,
    limit: int,
    rng: Rng,
    *,
    test_timeout: float | None = None,
    catalogue: Sequence[Injection] = CATALOGUE,
) -> ModuleInjection:
    """Inject catalogue entries into ``relative`` once each (the module docstring says how):
    all of them in catalogue order when ``limit`` is 0, else in a seeded order until
    ``limit`` hold. With ``test_timeout``, an injection must also keep the package's test
    suite passing. Raises :class:`RuffError` when ruff cannot lint the clean module."""
    path = project.root / relative
    text = path.read_text(encoding="utf-8")
    result = ModuleInjection(relative, retried_with_tests=test_timeout is not None)
    result.skipped = _broken(project, relative, text)
    if result.skipped:
        return result
    protected: set[int] = set()
    current = diagnostic_keys(ruff_diagnostics(project, [relative]))
    order = list(catalogue)
    if limit > 0:
        rng(relative, "order").shuffle(order)
    for injection in order:
        if limit > 0 and len(result.applied) >= limit:
            break
        src = Source(text)
        candidates = [
            edit
            for edit in injection.find(src)
            if not protected & set(range(src.line_of(edit.start), src.line_of(edit.end) + 1))
        ]
        if not candidates:
            result.dropped[injection.key] = "no eligible site"
            continue
        edit = rng(relative, injection.key).choice(candidates)
        new_text = text[: edit.start] + edit.new + text[edit.end :]
        check = _Check(project, relative, injection, src, edit, current, test_timeout)
        why, found = check.run(new_text)
        if why:
            path.write_text(text, encoding="utf-8")
            result.dropped[injection.key] = why
            continue
        first = src.line_of(edit.start)
        last = src.line_of(edit.end)
        delta = edit.new.count("\n") - text[edit.start : edit.end].count("\n")
        protected = {line + delta if line > last else line for line in protected}
        protected.update(range(first, max(first, last + delta) + 1))
        for item in result.applied:
            if item.line > last:
                item.line += delta
        result.applied.append(Applied(injection.key, injection.code, edit.anchor))
        text = new_text
        current = found
    path.write_text(text, encoding="utf-8")
    return result


def _broken(project: Project, relative: str, text: str) -> str:
    """Why the clean module cannot take injections ('' when it can): every injection must
    keep it parsing and importing, which it must then do to begin with."""
    try:
        Source(text)
    except (SyntaxError, ValueError) as exc:
        return f"does not parse before injection: {exc}"
    imports, error = project.check_import(project.module_name(relative))
    return "" if imports else f"does not import before injection: {error}"


@dataclass
class _Check:
    """Whether one edited text keeps an injection: parses, imports, ruff reports its code."""

    project: Project
    relative: str
    injection: Injection
    src: Source
    edit: Edit
    current: Counter[Diagnostic]
    test_timeout: float | None

    def run(self, new_text: str) -> tuple[str, Counter[Diagnostic]]:
        """Why the text is not kept ('' when it is, then written), and its diagnostics."""
        try:
            pyast.parse(new_text)
        except SyntaxError as exc:
            return f"does not parse: {exc.msg}", self.current
        (self.project.root / self.relative).write_text(new_text, encoding="utf-8")
        imports, error = self.project.check_import(self.project.module_name(self.relative))
        if not imports:
            return f"does not import: {error}", self.current
        try:
            items = ruff_diagnostics(self.project, [self.relative])
        except RuffError as exc:
            return str(exc), self.current
        code = self.injection.code
        first = self.src.line_of(self.edit.start)
        last = first + self.edit.new.count("\n")
        lines = range(min(self.edit.anchor, first), last + 1)
        found = diagnostic_keys(items)
        added = found - self.current
        hit = any(item["code"] == code and item["location"]["row"] in lines for item in items)
        if not hit or not any(added_code == code for _, added_code, _ in added):
            return f"ruff does not report {code} on lines {lines.start}-{last}", self.current
        if self.test_timeout is not None:
            suite = self.project.run_tests(self.test_timeout)
            if suite.status != "passed":
                return f"the package's tests fail: {suite.summary}", self.current
        return "", found


def inject_keeping_tests(
    ctx: EvalContext, project: Project, relative: str, limit: int
) -> ModuleInjection:
    """:func:`inject_module`, and when the package's suite passed before injection but fails
    with this module's injections, the module again from its clean text, each injection
    then also checked with the suite (slow, so only then). Raises :class:`RuffError`."""
    path = project.root / relative
    clean = path.read_text(encoding="utf-8")
    result = inject_module(project, relative, limit, ctx.rng)
    if ctx.suite.status != "passed" or not result.applied:
        return result
    if project.run_tests(ctx.test_timeout).status == "passed":
        return result
    path.write_text(clean, encoding="utf-8")
    return inject_module(project, relative, limit, ctx.rng, test_timeout=ctx.test_timeout)
