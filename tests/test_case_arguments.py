"""Argument lists as Python source: what a case may contain and how it is normalized."""

from __future__ import annotations

import ast

import pytest

from remora.tools.capabilities.arguments import (
    MAX_CASE_CHARS,
    Case,
    CaseError,
    check_expression,
    free_names,
    module_scope,
    parse_case,
    public_names,
)

MODULE = '''"""A module under study."""

import os.path
import collections as col
from json import dumps as to_json, loads
from typing import *

LIMIT = 3
ratio: float = 0.5
_hidden = 1
first, second = 1, 2


def scale(value, factor=2):
    return value * factor


async def fetch(url):
    return url


def _helper():
    return None


class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y


class _Private:
    pass
'''

ALLOWED = module_scope(MODULE)


@pytest.mark.parametrize(
    ("text", "args"),
    [
        ("1, 'a', None, True", ("1", "'a'", "None", "True")),
        ("[1,2],  {'a':(1,)}, {1,2}", ("[1, 2]", "{'a': (1,)}", "{1, 2}")),
        ("-3, -2.5, +1", ("-3", "-2.5", "+1")),
        ("lambda x,y=2: x+y", ("lambda x, y=2: x + y",)),
        ("[i*2 for i in range(3) if i]", ("[i * 2 for i in range(3) if i]",)),
        ("{k:v for k, v in zip('ab', [1, 2])}", ("{k: v for k, v in zip('ab', [1, 2])}",)),
        ("operator.add, 1, 2", ("operator.add", "1", "2")),
        ("len, sorted([3,1])", ("len", "sorted([3, 1])")),
        ("Point(1, 2), LIMIT, scale", ("Point(1, 2)", "LIMIT", "scale")),
        ("  (1,2)  ", ("(1, 2)",)),
    ],
)
def test_accepted_cases_are_normalized_with_unparse(text: str, args: tuple[str, ...]) -> None:
    """Accepted argument lists come back as ``ast.unparse`` text, one entry per argument."""
    case = parse_case(text, ALLOWED)
    assert case == Case(args)


def test_keyword_arguments_are_kept_in_order() -> None:
    """Keyword arguments are separate (name, source) pairs after the positional ones."""
    case = parse_case("[3, 1], reverse=True, key=lambda v: -v", ALLOWED)
    assert case.args == ("[3, 1]",)
    assert case.kwargs == (("reverse", "True"), ("key", "lambda v: -v"))


def test_text_and_call_write_the_argument_list_back() -> None:
    """``text`` is what goes between parentheses; ``call`` wraps it in a callee."""
    case = parse_case("1,[2],key=len", ALLOWED)
    assert case.text == "1, [2], key=len"
    assert case.call("pkg.f") == "pkg.f(1, [2], key=len)"
    assert Case(()).call("f") == "f()"
    assert Case((), (("a", "1"),)).text == "a=1"


def test_names_are_the_free_names_only() -> None:
    """``names()`` lists what a generated test must import; lambda and loop variables are not."""
    case = parse_case(
        "lambda x: Point(x, 1), [i for i in range(3)], LIMIT, key=operator.add", ALLOWED
    )
    assert case.names() == {"Point", "range", "LIMIT", "operator"}
    assert parse_case("1, 'x', [2]", ALLOWED).names() == set()
    assert parse_case("lambda a, *rest, b=1, **kw: (a, rest, b, kw)", ALLOWED).names() == set()


def test_names_include_names_used_in_lambda_defaults() -> None:
    """A lambda's default is evaluated outside the lambda, so its names need importing."""
    case = parse_case("lambda x=LIMIT, *, y=Point: x", ALLOWED)
    assert case.names() == {"LIMIT", "Point"}


def test_free_names_of_nested_comprehensions() -> None:
    """A comprehension variable binds in later generators and conditions, not before."""
    node = ast.parse("[x + y for x in items for y in range(x) if y > bound]", mode="eval").body
    assert free_names(node) == {"items", "range", "bound"}
    inner = ast.parse("[x for x in x]", mode="eval").body
    assert free_names(inner) == {"x"}  # the iterable is read before x is bound
    assert free_names(ast.parse("x + y", mode="eval").body, frozenset({"x"})) == {"y"}


def test_public_names_cover_definitions_assignments_and_imports() -> None:
    """Defs, classes, plain assignments and imports (by their as-names) count; private ones
    and star imports do not."""
    names = public_names(MODULE)
    assert {"scale", "fetch", "Point", "LIMIT", "ratio", "os", "col", "to_json", "loads"} <= names
    assert not {"_helper", "_Private", "_hidden", "collections", "dumps", "*"} & names
    assert all(not name.startswith("_") for name in names)


def test_module_scope_sorts_the_module_names_by_what_a_case_may_do_with_them() -> None:
    """Classes may be called, functions and constants only passed, and imported names (a
    module, ``to_json``) not used at all: a case names only what the module itself defines."""
    assert ALLOWED.classes == {"Point"}
    assert {"scale", "fetch", "LIMIT", "ratio", "first", "second"} <= ALLOWED.defined
    assert {"os", "col", "to_json", "loads"} <= ALLOWED.imported
    assert not {"_helper", "_Private", "_hidden"} & (ALLOWED.classes | ALLOWED.defined)
    for text in ("open", "eval", "getattr", "to_json", "os", "col"):
        with pytest.raises(CaseError):
            parse_case(text, ALLOWED)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "the case is empty"),
        ("   \n", "the case is empty"),
        ("1, " * (MAX_CASE_CHARS // 3 + 1), f"longer than {MAX_CASE_CHARS} characters"),
        ("1,, 2", "is not a Python argument list"),
        ("1); import os; (", "is not a Python argument list"),
        ("1) + f(2", "is not a Python argument list"),
        ("open('/etc/passwd')", "the name 'open' is not available"),
        ("missing_name", "the name 'missing_name' is not available"),
        ("_helper()", "the name '_helper' is not available"),
        ("(1).__class__", "the attribute '__class__' is private"),
        ("x.__class__", "the attribute '__class__' is private"),
        ("operator._private", "the attribute '_private' is private"),
        ("*[1, 2]", "'*' unpacking is not allowed"),
        ("max(*[1, 2])", "'*' unpacking is not allowed"),
        ("**{'a': 1}", "'**' unpacking is not allowed"),
        ("**kw", "'**' unpacking is not allowed"),
        ("dict(**{'a': 1})", "'**' unpacking is not allowed"),
        ("{**{'a': 1}}", "'**' unpacking is not allowed in a dict"),
        ("f'{1}'", "JoinedStr expressions are not allowed"),
        ("'a' * 10**9", "nested powers are too large"),
        ("2 ** 10 ** 6", "nested powers are too large"),
        ("'a' * 100000", "100000 is too large for a test value"),
        ("1 << 100000", "100000 is too large for a test value"),
        ("(lambda: 1)()", "only named functions can be called"),
        ("lambda x: x, x", "the name 'x' is not available"),
        ("[i for i in range(3)], i", "the name 'i' is not available"),
        ("[1 for a.b in []]", "comprehension targets must be plain names"),
        ("(y := 1)", "NamedExpr expressions are not allowed"),
        ("await x", "Await expressions are not allowed"),
    ],
)
def test_rejected_cases_say_why(text: str, message: str) -> None:
    """Each refused case raises CaseError with a reason a model can act on."""
    with pytest.raises(CaseError) as info:
        parse_case(text, ALLOWED)
    assert message in str(info.value)


def test_case_error_is_a_value_error() -> None:
    """Callers that catch ValueError also catch refused cases."""
    with pytest.raises(ValueError, match="empty"):
        parse_case("", ALLOWED)


def test_small_repetitions_are_allowed() -> None:
    """The size guard refuses only large values, not every multiplication."""
    assert parse_case("'ab' * 3, 2 ** 8, [0] * 10000", ALLOWED).args == (
        "'ab' * 3",
        "2 ** 8",
        "[0] * 10000",
    )


def test_check_expression_accepts_names_bound_by_an_enclosing_scope() -> None:
    """``bound`` names (lambda parameters) are usable; the same name unbound is refused."""
    node = ast.parse("item + 1", mode="eval").body
    check_expression(node, ALLOWED, frozenset({"item"}))
    with pytest.raises(CaseError, match="'item' is not available"):
        check_expression(node, ALLOWED)


def test_lambda_defaults_are_checked_outside_the_lambda() -> None:
    """A default cannot use the lambda's own parameter or an unknown name."""
    with pytest.raises(CaseError, match="'x' is not available"):
        parse_case("lambda x, y=x: y", ALLOWED)
    with pytest.raises(CaseError, match="'open' is not available"):
        parse_case("lambda *, y=open: y", ALLOWED)
