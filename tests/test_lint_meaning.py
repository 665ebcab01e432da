"""A rewrite of a lint issue is kept only when it changes nothing but what the rule asks."""

from __future__ import annotations

import pytest

from remora.operations.lint.meaning import NORMALIZERS, changed_meaning
from remora.operations.lint.residue import MODEL_CODES

HANDLER = """def width(value):
    try:
        return int(value)
    except ValueError:
        {raise_}
"""


def handler(raise_: str) -> str:
    return HANDLER.format(raise_=raise_)


RAISE = "raise SQLParseError('width requires an integer')"


def test_b904_may_only_gain_a_cause() -> None:
    assert changed_meaning("B904", handler(RAISE), handler(RAISE + " from None")) is None
    # What the embedded model wrote on sqlparse 0.5.0: ruff clean, the raise gone.
    assert changed_meaning("B904", handler(RAISE), handler("None")) == (
        "it changes the code beyond what B904 asks (only a `from` cause may be added to the raise)"
    )
    other = "raise ValueError('width requires an integer') from None"
    assert changed_meaning("B904", handler(RAISE), handler(other)) is not None


@pytest.mark.parametrize(
    ("code", "before", "after", "kept"),
    [
        ("E711", "if a == None:\n    pass\n", "if a is None:\n    pass\n", True),
        ("E711", "if a != None:\n    pass\n", "if a is not None:\n    pass\n", True),
        ("E711", "if a == None:\n    pass\n", "if a is not None:\n    pass\n", False),
        ("E711", "if a == None:\n    pass\n", "if not a:\n    pass\n", False),
        ("E712", "if a == True:\n    pass\n", "if a is True:\n    pass\n", True),
        ("E712", "if a == True:\n    pass\n", "if a:\n    pass\n", True),
        ("E712", "if a == False:\n    pass\n", "if not a:\n    pass\n", True),
        ("E712", "if a != False:\n    pass\n", "if a:\n    pass\n", True),
        ("E712", "if a == True:\n    pass\n", "if not a:\n    pass\n", False),
        ("E713", "if not a in b:\n    pass\n", "if a not in b:\n    pass\n", True),
        ("E713", "if not a in b:\n    pass\n", "if a in b:\n    pass\n", False),
        ("E714", "if not a is b:\n    pass\n", "if a is not b:\n    pass\n", True),
        ("E721", "t = type(a) == int\n", "t = type(a) is int\n", True),
        ("E721", "t = type(a) == int\n", "t = isinstance(a, int)\n", True),
        ("E721", "t = type(a) != int\n", "t = not isinstance(a, int)\n", True),
        ("E721", "t = type(a) == int\n", "t = isinstance(a, float)\n", False),
        ("E721", "t = type(a) == int\n", "t = type(a) is not int\n", False),
        (
            "E722",
            "try:\n    f()\nexcept:\n    pass\n",
            "try:\n    f()\nexcept Exception:\n    pass\n",
            True,
        ),
        (
            "E722",
            "try:\n    f()\nexcept:\n    pass\n",
            "try:\n    f()\nexcept OSError:\n    pass\n",
            False,
        ),
        ("E731", "f = lambda x, y=2: x + y\n", "def f(x, y=2):\n    return x + y\n", True),
        ("E731", "f = lambda x: x + 1\n", "def f(x):\n    return x - 1\n", False),
        ("E702", "a = 1; b = 2\n", "a = 1\nb = 2\n", True),
        ("E702", "a = 1; b = 2\n", "a = 1\n", False),
        ("W605", 'p = "\\d+"\n', 'p = r"\\d+"\n', True),
        ("W605", 'p = "\\d+"\n', 'p = r"\\d*"\n', False),
    ],
)
def test_what_each_code_may_change(code: str, before: str, after: str, kept: bool) -> None:
    assert (changed_meaning(code, before, after) is None) is kept


def test_a_code_without_a_check_is_never_kept_and_never_asked() -> None:
    assert changed_meaning("B007", "x = 1\n", "x = 1\n") == (
        "no check that a rewrite of B007 keeps the code's meaning"
    )
    assert "B007" not in MODEL_CODES and "B904" in MODEL_CODES
    assert set(MODEL_CODES) <= set(NORMALIZERS)


def test_a_text_that_does_not_parse_is_a_reason() -> None:
    problem = changed_meaning("E711", "a == None\n", "a is None)\n")
    assert problem is not None and problem.startswith("the module does not parse")
