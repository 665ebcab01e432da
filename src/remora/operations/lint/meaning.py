"""Whether a rewrite of a lint issue changes nothing but what the rule asks.

ruff's check that an issue is gone, with no new one, says nothing about what the code does:
measured on sqlparse 0.5.0 as published, the embedded model "fixed" B904 (``raise ... from``)
by replacing each ``raise SQLParseError(...)`` with ``None``. The issue was gone, ruff was
clean and the tests that import the module passed, and three of the package's tests broke.

So a rewrite by the model is kept only when the module's syntax tree after it equals the
tree before, once the one change the rule asks for is undone on both sides
(:data:`NORMALIZERS`); a code with no such description is not asked about. What each
code may change:

B904        a ``from`` cause added to a ``raise`` (nothing else of the statement).
E711, E714, F632
            ``==``/``!=`` against ``is``/``is not``; and ``not x is y`` against
            ``x is not y`` (the same expression in Python's grammar).
E712        also ``x == True`` against ``x`` and ``x == False`` against ``not x``.
E721        also ``type(x) == T`` against ``isinstance(x, T)`` (what the rule suggests;
            it differs for subclasses of T, which the tests then decide).
E713        ``not x in y`` against ``x not in y``.
E722        a bare ``except:`` against ``except Exception:`` or ``except BaseException:``.
E731        ``f = lambda args: expr`` against ``def f(args): return expr``.
E401, E701, E702, E703, W605
            layout only: the trees must be equal (``"\\d"`` and ``r"\\d"`` are the same
            constant).
"""

from __future__ import annotations

import ast
import copy
import warnings
from collections.abc import Callable, Mapping
from typing import Any

from remora import pyast

Normalizer = Callable[[ast.Module], ast.Module]


def _same(tree: ast.Module) -> ast.Module:
    return tree


class _NoCause(ast.NodeTransformer):
    def visit_Raise(self, node: ast.Raise) -> ast.AST:
        self.generic_visit(node)
        node.cause = None
        return node


_EQUALITY: dict[type[ast.cmpop], type[ast.cmpop]] = {ast.Is: ast.Eq, ast.IsNot: ast.NotEq}
_NEGATED: dict[type[ast.cmpop], type[ast.cmpop]] = {ast.In: ast.NotIn, ast.Is: ast.IsNot}


class _Negations(ast.NodeTransformer):
    """``not x in y`` as ``x not in y``, ``not x is y`` as ``x is not y``."""

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        operand = node.operand
        if (
            isinstance(node.op, ast.Not)
            and isinstance(operand, ast.Compare)
            and len(operand.ops) == 1
            and type(operand.ops[0]) in _NEGATED
        ):
            operand.ops = [_NEGATED[type(operand.ops[0])]()]
            folded: ast.AST = self.visit(operand)
            return folded
        self.generic_visit(node)
        return node


class _Equalities(_Negations):
    """Identity comparisons as equality ones, after the negations are folded."""

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        self.generic_visit(node)
        node.ops = [_EQUALITY.get(type(op), type(op))() for op in node.ops]
        return node


class _TruthTests(_Equalities):
    """``x == True`` (or ``is True``) as ``x``, ``x == False`` as ``not x``, and their
    negations: the condition the rule asks for."""

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        found = super().visit_Compare(node)
        if not (
            isinstance(found, ast.Compare)
            and len(found.ops) == 1
            and isinstance(found.comparators[0], ast.Constant)
            and isinstance(found.comparators[0].value, bool)
        ):
            return found
        truth = found.comparators[0].value is isinstance(found.ops[0], ast.Eq)
        return found.left if truth else ast.UnaryOp(op=ast.Not(), operand=found.left)


class _TypeChecks(_Equalities):
    """``type(x) == T`` (or ``is T``) as ``isinstance(x, T)``, ``!=`` as its negation."""

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        found = super().visit_Compare(node)
        if not (
            isinstance(found, ast.Compare)
            and len(found.ops) == 1
            and isinstance(found.ops[0], ast.Eq | ast.NotEq)
            and isinstance(found.left, ast.Call)
            and isinstance(found.left.func, ast.Name)
            and found.left.func.id == "type"
            and len(found.left.args) == 1
            and not found.left.keywords
        ):
            return found
        check = ast.Call(
            func=ast.Name(id="isinstance", ctx=ast.Load()),
            args=[found.left.args[0], found.comparators[0]],
            keywords=[],
        )
        if isinstance(found.ops[0], ast.Eq):
            return check
        return ast.UnaryOp(op=ast.Not(), operand=check)


class _BareExcept(ast.NodeTransformer):
    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.type, ast.Name) and node.type.id in ("Exception", "BaseException"):
            node.type = None
        return node


class _LambdaAsDef(ast.NodeTransformer):
    """``f = lambda args: expr`` as the ``def f(args): return expr`` it means."""

    def visit_Assign(self, node: ast.Assign) -> ast.AST:
        if (
            len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Lambda)
        ):
            lam = node.value
            fields: dict[str, Any] = {
                "name": node.targets[0].id,
                "args": lam.args,
                "body": [ast.Return(value=lam.body)],
                "decorator_list": [],
                "returns": None,
                "type_comment": None,
            }
            if "type_params" in ast.FunctionDef._fields:  # Python 3.12 and later
                fields["type_params"] = []
            found = ast.FunctionDef(**fields)
            return found
        return node


def _with(transformer: type[ast.NodeTransformer]) -> Normalizer:
    def normalize(tree: ast.Module) -> ast.Module:
        found: ast.AST = transformer().visit(tree)
        assert isinstance(found, ast.Module)
        return found

    return normalize


NORMALIZERS: Mapping[str, Normalizer] = {
    "B904": _with(_NoCause),
    "E711": _with(_Equalities),
    "E712": _with(_TruthTests),
    "E713": _with(_Negations),
    "E714": _with(_Equalities),
    "E721": _with(_TypeChecks),
    "F632": _with(_Equalities),
    "E722": _with(_BareExcept),
    "E731": _with(_LambdaAsDef),
    "E401": _same,
    "E701": _same,
    "E702": _same,
    "E703": _same,
    "W605": _same,
}
"""The codes a rewrite can be shown to change nothing else for, with what undoes the
rule's own change."""

ALLOWED: Mapping[str, str] = {
    "B904": "only a `from` cause may be added to the raise",
    "E711": "only `==`/`!=` may become `is`/`is not`",
    "E712": "only the comparison with True or False may become `is` or the condition",
    "E713": "only `not x in y` may become `x not in y`",
    "E714": "only `not x is y` may become `x is not y`",
    "E721": "only the type comparison may become `is` or `isinstance`",
    "F632": "only `is`/`is not` may become `==`/`!=`",
    "E722": "only `except:` may become `except Exception:`",
    "E731": "only the lambda assignment may become a def returning the same expression",
}


def changed_meaning(code: str, before: str, after: str) -> str | None:
    """Why module text ``after`` does more than fix ``code`` in ``before`` (None: it
    changes nothing else); a code without a normalizer, or a text that does not parse,
    is always a reason."""
    normalize = NORMALIZERS.get(code)
    if normalize is None:
        return f"no check that a rewrite of {code} keeps the code's meaning"
    try:
        with warnings.catch_warnings():  # an invalid escape (W605) is only a warning
            warnings.simplefilter("ignore")
            old, new = pyast.parse(before), pyast.parse(after)
    except (SyntaxError, ValueError) as exc:
        return f"the module does not parse ({exc})"
    if _dump(normalize(copy.deepcopy(old))) == _dump(normalize(copy.deepcopy(new))):
        return None
    allowed = ALLOWED.get(code, "only the layout may change")
    return f"it changes the code beyond what {code} asks ({allowed})"


def _dump(tree: ast.AST) -> str:
    return ast.dump(tree, annotate_fields=True, include_attributes=False)
