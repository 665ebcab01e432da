"""Issue 47, breach 4: what a case may only pass, it may not hand to a call that calls it.

A module's functions and constants and ``Class.member`` may be passed but not called in a
case; ``map(run, ...)``, ``sorted(..., key=run)``, ``iter(run, None)`` or a class of the
module given ``run`` would call them all the same, on the user's machine, once the case is
written into a test.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from remora.operations.characterize.inputs import propose_cases
from remora.tools.capabilities.arguments import (
    Case,
    CaseError,
    check_value,
    module_scope,
    parse_case,
)
from tests.stores import capability_context, write_tree

MODULE = '''"""A module with a dangerous callable in it."""

import operator
import os
from math import pi, sqrt

run = os.system
LIMIT = 3


def apply_to(func, items):
    return [func(item) for item in items]


def describe(value):
    return str(value)


class Shell:
    execute = staticmethod(os.system)
    NAME = "sh"

    def __init__(self, command=""):
        self.command = command


class Task:
    def __init__(self, action, argument):
        self.result = action(argument)
'''

SCOPE = module_scope(MODULE)


@pytest.mark.parametrize(
    "text",
    [
        # the reproductions of the issue
        "list(map(run, ['touch /tmp/x']))",
        "Shell.execute('touch /tmp/x')",
        # builtins that call what they are given
        "list(filter(run, ['touch /tmp/x']))",
        "sorted(['touch /tmp/x'], key=run)",
        "min(['touch /tmp/x'], key=run)",
        "max(['touch /tmp/x'], key=run)",
        "max('touch /tmp/x', 'y', key=describe)",
        "next(iter(run, None))",
        "iter(run, None)",
        "list(map(Shell.execute, ['touch /tmp/x']))",
        "sorted(['touch /tmp/x'], key=Shell.execute)",
        "list(map(operator.mul, ['a'], [10000 * 10000]))",
        "list(map(sqrt, [4]))",
        # at any depth inside a calling call, and through a higher-order builtin
        "list(map(map, [run], [['touch /tmp/x']]))",
        "list(map(lambda f: f, [run]))",
        "sorted([1], key=lambda v, f=run: list(map(f, ['touch /tmp/x'])))",
        # through a name bound to it by a comprehension or a lambda default
        "[list(map(f, ['touch /tmp/x'])) for f in [run]]",
        "[list(map(g, ['touch /tmp/x'])) for f, g in enumerate([run])]",
        "lambda f=run: list(map(f, ['touch /tmp/x']))",
        "lambda *, f=Shell.execute: sorted(['touch /tmp/x'], key=f)",
        # other ways of calling a member
        "getattr(Shell, 'execute')('touch /tmp/x')",
    ],
)
def test_a_passed_only_callable_handed_to_a_calling_call_is_refused(text: str) -> None:
    """Every one of these calls a module callable (or a pure standard one whose direct call
    the checker refuses) with the model's arguments; each is refused like a direct call."""
    with pytest.raises(CaseError):
        parse_case(text, SCOPE)


def test_the_refusal_says_what_to_do() -> None:
    """The reason names the callable and the call that would call it, as for a direct call."""
    with pytest.raises(CaseError, match=r"'run' can be passed but not called.*map\(\.\.\.\)"):
        parse_case("list(map(run, ['touch /tmp/x']))", SCOPE)
    with pytest.raises(CaseError, match=r"'Shell.execute' can be passed but not called"):
        parse_case("Shell.execute('touch /tmp/x')", SCOPE)
    with pytest.raises(CaseError, match=r"'describe' can be passed but not called.*sorted"):
        parse_case("sorted([1], key=describe)", SCOPE)


def test_a_class_member_is_not_called_in_a_value_either() -> None:
    """Expected values and receivers follow the same rule."""
    with pytest.raises(CaseError):
        check_value("Shell.execute('touch /tmp/x')", SCOPE)
    with pytest.raises(CaseError):
        check_value("list(map(run, ['touch /tmp/x']))", SCOPE)
    assert check_value("Shell.NAME", SCOPE) == "Shell.NAME"


@pytest.mark.parametrize(
    ("text", "args"),
    [
        # passed to the function under test directly, or in data it is given
        ("run, [1]", ("run", "[1]")),
        ("Shell.execute, ['a']", ("Shell.execute", "['a']")),
        ("[run, describe], {'k': LIMIT}", ("[run, describe]", "{'k': LIMIT}")),
        ("lambda: run, func=describe", ("lambda: run",)),
        ("[f for f in [run]]", ("[f for f in [run]]",)),
        ("lambda x=LIMIT: x + 1", ("lambda x=LIMIT: x + 1",)),
        # inside builtins and constructors that never call what they are given
        ("list([run]), tuple([Shell.NAME]), len([LIMIT])", None),
        ("dict(a=run), zip([describe], [1]), frozenset({LIMIT})", None),
        ("next(zip([run])), repr(describe), isinstance(LIMIT, int)", None),
        ("round(pi, 2), abs(LIMIT), sum([LIMIT])", None),
        # calling builtins and classes given data, pure stdlib data and their own lambdas
        ("sorted([3, 1], key=lambda v: -v), list(map(len, ['ab']))", None),
        ("list(map(lambda v: v * 2, [1, 2])), list(filter(None, [0, 1]))", None),
        ("Shell('ls'), Task(len, 'abc'), max([1, 2], key=abs)", None),
        ("sorted([pi, 1.0]), [sorted(x) for x in [[2, 1]]]", None),
        # the module's own classes take its values, as the function under test does; min,
        # max and sorted call only their key
        ("Task(Shell.NAME, LIMIT), Task(run, 'x'), max(LIMIT, 3)", None),
        ("sorted([LIMIT, 1]), min(LIMIT, key=abs)", None),
    ],
)
def test_legitimate_cases_still_pass(text: str, args: tuple[str, ...] | None) -> None:
    """A module's callables may still be passed to the function under test, alone, in data
    or behind a lambda; calling builtins still take data and builtins."""
    case = parse_case(text, SCOPE)
    if args is not None:
        assert case.args == args
    assert isinstance(case, Case)


def test_a_comprehension_variable_shadowing_a_carried_one_is_data_again() -> None:
    """A name rebound by a later generator over data no longer counts as the callable."""
    parse_case("[sorted(f) for f in [run] for f in [[2, 1]]]", SCOPE)


def test_propose_cases_refuses_the_issue_cases(tmp_path: Path) -> None:
    """End to end: the model's cases from the issue are rejected by ``propose_cases`` with a
    reason and never reach the draft; the legitimate one is accepted."""
    root = write_tree(tmp_path / "proj", {"pkg/__init__.py": "", "pkg/util.py": MODULE})
    ctx = capability_context(root, {"workspace_id": str(tmp_path)})
    result = propose_cases(
        ctx,
        "pkg/util.py",
        "apply_to",
        [
            "list(map(run, ['touch /tmp/x']))",
            "Shell.execute('touch /tmp/x')",
            "describe, sorted(['touch /tmp/x'], key=run)",
            "run, [1]",
        ],
    )
    assert result["accepted"] == ["run, [1]"]
    assert result["proposed"] == 1
    reasons = [r["reason"] for r in result["rejected"]]
    assert len(reasons) == 3
    assert all("can be passed but not called" in reason for reason in reasons)
