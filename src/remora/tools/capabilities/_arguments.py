"""Argument lists as Python source: what a candidate or a model's proposal may contain.

A *case* is the text between the parentheses of a call, ``2, [1, 2, 3], key=len``. Cases are
evaluated in the sandbox and written verbatim into generated tests, so they are kept to
expressions a reader would write in a test: literals, containers, arithmetic, lambdas,
comprehensions, and calls of safe builtins, of the target module's public names and of a
few standard modules (``operator.add``). Anything else (``open``, dunder attributes,
``import``, f-strings, starred arguments) is refused with a reason a small model can act on.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass

from remora import pyast

MAX_CASE_CHARS = 400
MAX_REPEAT = 10_000
HELPER_MODULES = frozenset({"operator", "itertools", "functools", "math"})
SAFE_BUILTINS = frozenset(
    {
        "abs", "all", "any", "bool", "bytes", "bytearray", "callable", "chr", "complex",
        "dict", "divmod", "enumerate", "filter", "float", "frozenset", "hash", "hex", "int",
        "isinstance", "iter", "len", "list", "map", "max", "min", "next", "object", "oct",
        "ord", "pow", "range", "repr", "reversed", "round", "set", "slice", "sorted", "str",
        "sum", "tuple", "type", "zip",
    }
)  # fmt: skip
_PLAIN_NODES = (
    ast.Constant,
    ast.List,
    ast.Tuple,
    ast.Set,
    ast.UnaryOp,
    ast.BinOp,
    ast.BoolOp,
    ast.Compare,
    ast.IfExp,
    ast.Subscript,
    ast.Slice,
    ast.Load,
    ast.operator,
    ast.unaryop,
    ast.boolop,
    ast.cmpop,
    ast.keyword,
)


class CaseError(ValueError):
    """A case that cannot be run or written into a test; the message says why."""


@dataclass(frozen=True)
class Case:
    """One argument list, as source: positional expressions, then keyword ones."""

    args: tuple[str, ...]
    kwargs: tuple[tuple[str, str], ...] = ()

    @property
    def text(self) -> str:
        """The argument list as written between a call's parentheses."""
        return ", ".join([*self.args, *(f"{name}={value}" for name, value in self.kwargs)])

    def call(self, callee: str) -> str:
        return f"{callee}({self.text})"

    def names(self) -> set[str]:
        """The free names the case uses (for the imports of a generated test)."""
        found: set[str] = set()
        for expression in [*self.args, *(value for _, value in self.kwargs)]:
            found |= free_names(pyast.parse(expression, mode="eval").body)
        return found


def public_names(source: str) -> frozenset[str]:
    """Public names a module defines or imports at top level: what a case may reference."""
    names: set[str] = set()
    for node in pyast.parse(source).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names if a.name != "*"}
    return frozenset(name for name in names if not name.startswith("_"))


def allowed_names(module: Iterable[str]) -> frozenset[str]:
    """What a case may name: safe builtins, helper modules and the module's public names."""
    return SAFE_BUILTINS | HELPER_MODULES | frozenset(module)


def parse_case(text: str, allowed: frozenset[str]) -> Case:
    """``text`` (``1, [2], key=len``) as a :class:`Case`, or CaseError saying what is wrong."""
    if not isinstance(text, str) or not text.strip():
        raise CaseError("the case is empty; write the arguments, e.g. 2, [1, 2, 3]")
    if len(text) > MAX_CASE_CHARS:
        raise CaseError(f"the case is longer than {MAX_CASE_CHARS} characters; use smaller values")
    try:
        call = pyast.parse(f"f({text.strip()})", mode="eval").body
    except SyntaxError:
        raise CaseError(
            f"{text.strip()!r} is not a Python argument list; write e.g. 2, 'a', items=[1]"
        ) from None
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
        raise CaseError(f"{text.strip()!r} is not a Python argument list")
    if any(k.arg is None for k in call.keywords):
        raise CaseError("'**' unpacking is not allowed; write each keyword argument")
    for node in [*call.args, *(k.value for k in call.keywords)]:
        check_expression(node, allowed)
    return Case(
        tuple(ast.unparse(node) for node in call.args),
        tuple((str(k.arg), ast.unparse(k.value)) for k in call.keywords),
    )


def check_expression(
    node: ast.AST, allowed: frozenset[str], bound: frozenset[str] = frozenset()
) -> None:
    """CaseError unless every part of ``node`` is one a test may contain."""
    if isinstance(node, ast.Starred):
        raise CaseError("'*' unpacking is not allowed; write each argument")
    if isinstance(node, ast.Name):
        if node.id not in allowed and node.id not in bound:
            raise CaseError(
                f"the name '{node.id}' is not available; use literals, lambdas, builtins "
                "such as len or str, or names defined in the module"
            )
        return
    if isinstance(node, ast.Attribute):
        if node.attr.startswith("_"):
            raise CaseError(f"the attribute '{node.attr}' is private")
        check_expression(node.value, allowed, bound)
        return
    if isinstance(node, ast.Lambda):
        params = node.args
        names = [a.arg for a in [*params.posonlyargs, *params.args, *params.kwonlyargs]]
        names += [a.arg for a in (params.vararg, params.kwarg) if a is not None]
        for default in [*params.defaults, *(d for d in params.kw_defaults if d is not None)]:
            check_expression(default, allowed, bound)
        check_expression(node.body, allowed, bound | frozenset(names))
        return
    if isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
        inner = bound
        for generator in node.generators:
            check_expression(generator.iter, allowed, inner)
            targets = [generator.target]
            if isinstance(generator.target, ast.Tuple):
                targets = list(generator.target.elts)
            if not all(isinstance(t, ast.Name) for t in targets):
                raise CaseError("comprehension targets must be plain names")
            inner = inner | frozenset(t.id for t in targets if isinstance(t, ast.Name))
            for condition in generator.ifs:
                check_expression(condition, allowed, inner)
        parts = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
        for part in parts:
            check_expression(part, allowed, inner)
        return
    if isinstance(node, ast.Dict):
        if any(key is None for key in node.keys):
            raise CaseError("'**' unpacking is not allowed in a dict; write each key")
    elif isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name | ast.Attribute):
            raise CaseError("only named functions can be called in a case")
        if any(k.arg is None for k in node.keywords):
            raise CaseError("'**' unpacking is not allowed; write each keyword argument")
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow | ast.LShift | ast.Mult):
        _check_size(node)
    elif not isinstance(node, _PLAIN_NODES):
        raise CaseError(f"{type(node).__name__} expressions are not allowed in a case")
    for child in ast.iter_child_nodes(node):
        check_expression(child, allowed, bound)


def _check_size(node: ast.BinOp) -> None:
    """Refuse ``'a' * 10**9`` and ``2 ** 10**6``: values too big to print in a test."""
    for side in (node.left, node.right):
        if isinstance(side, ast.Constant) and isinstance(side.value, int):
            if abs(side.value) > MAX_REPEAT:
                raise CaseError(f"{side.value} is too large for a test value; use smaller numbers")
        elif isinstance(side, ast.BinOp) and isinstance(side.op, ast.Pow | ast.LShift):
            raise CaseError("nested powers are too large for a test value")


def free_names(node: ast.AST, bound: frozenset[str] = frozenset()) -> set[str]:
    """Names ``node`` reads that no lambda or comprehension inside it binds."""
    if isinstance(node, ast.Name):
        return set() if node.id in bound else {node.id}
    if isinstance(node, ast.Lambda):
        params = node.args
        names = {a.arg for a in [*params.posonlyargs, *params.args, *params.kwonlyargs]}
        names |= {a.arg for a in (params.vararg, params.kwarg) if a is not None}
        defaults = [*params.defaults, *(d for d in params.kw_defaults if d is not None)]
        inside = free_names(node.body, bound | names)
        return inside.union(*(free_names(default, bound) for default in defaults))
    if isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
        found: set[str] = set()
        inner = bound
        for generator in node.generators:
            found |= free_names(generator.iter, inner)
            inner = inner | {n.id for n in ast.walk(generator.target) if isinstance(n, ast.Name)}
            for condition in generator.ifs:
                found |= free_names(condition, inner)
        parts = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
        return found.union(*(free_names(part, inner) for part in parts))
    return set().union(*(free_names(child, bound) for child in ast.iter_child_nodes(node)))
