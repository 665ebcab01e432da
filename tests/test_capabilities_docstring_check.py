"""docstring_check (real pydoclint and ruff) and docstring_summary_check."""

from __future__ import annotations

from pathlib import Path

import pytest

from remora.operations.docstring.check import docstring_check, docstring_summary_check
from remora.operations.docstring.docstrings import docstring_set
from remora.tools.capabilities import CapabilityContext
from tests.stores import capability_context, write_tree

SOURCE = '''"""Module."""


def documented(a, b=1):
    """Add two numbers.

    Args:
        a: The first.
        c: Not a parameter.

    Returns:
        The sum.
    """
    return a + b


def short(a):
    """Return a unchanged."""
    return a


def bare(x):
    if x:
        raise ValueError("negative")
    return x


class Box:
    def size(self, factor):
        """Scale the box.

        Args:
            factor: How much.
        """
        return factor


def good(a, b):
    """Multiply two numbers.

    Args:
        a: The first.
        b: The second.

    Returns:
        The product.
    """
    return a * b
'''


@pytest.fixture
def ctx(tmp_path: Path) -> CapabilityContext:
    root = write_tree(tmp_path / "proj", {"mod.py": SOURCE})
    return capability_context(root, {"options": {"style": "google"}})


def _codes(report: dict[str, object]) -> set[str]:
    problems = report["problems"]
    assert isinstance(problems, list)
    return {problem["code"] for problem in problems}


def test_names_documented_and_actual_are_compared(ctx: CapabilityContext) -> None:
    report = docstring_check(ctx, "mod.py", "documented")
    assert report["clean"] is False
    assert report["missing_params"] == ["b"] and report["extra_params"] == ["c"]
    assert {"missing", "extra", "DOC103", "D417"} <= _codes(report)


def test_a_short_docstring_is_complete(ctx: CapabilityContext) -> None:
    report = docstring_check(ctx, "mod.py", "short")
    assert report["clean"] is True and report["problems"] == []


def test_a_missing_docstring_is_a_problem(ctx: CapabilityContext) -> None:
    report = docstring_check(ctx, "mod.py", "bare")
    assert report["has_docstring"] is False and report["clean"] is False
    assert "D103" in _codes(report)


def test_pydoclint_findings_are_kept_per_node(ctx: CapabilityContext) -> None:
    report = docstring_check(ctx, "mod.py", "Box.size")
    assert _codes(report) == {"DOC201"}
    assert docstring_check(ctx, "mod.py", "good")["clean"] is True


def test_a_tab_indented_file_docstring_is_clean_despite_its_tabs(tmp_path: Path) -> None:
    """D206 follows the file's own tab indentation: not the docstring's problem."""
    source = (
        'def scale(factor):\n\t"""Scale it.\n\n\tArgs:\n\t\tfactor: How much.\n\t"""\n'
        "\tprint(factor)\n"
    )
    tabbed = capability_context(
        write_tree(tmp_path / "tabs", {"mod.py": source}), {"options": {"style": "google"}}
    )
    report = docstring_check(tabbed, "mod.py", "scale")
    assert report["clean"] is True, report["problems"]


def test_a_file_with_thousands_of_findings_is_checked(tmp_path: Path) -> None:
    bare = "".join(f"def f{index}(a):\n    return a\n\n\n" for index in range(600))
    root = write_tree(tmp_path / "proj", {"big.py": bare})
    report = docstring_check(capability_context(root), "big.py", "f599")
    assert _codes(report) == {"missing", "D103"}


@pytest.mark.parametrize("style", ["google", "numpy", "sphinx"])
def test_what_docstring_set_writes_is_clean(ctx: CapabilityContext, style: str) -> None:
    written = docstring_set(
        ctx,
        "mod.py",
        "bare",
        "Return x unless it is truthy.",
        style=style,
        params={"x": "the value to pass through; any falsy value"},
        returns="x itself, always falsy",
        raises={"ValueError": "if x is truthy"},
    )
    assert written["undescribed"] == []
    assert written["style"] == style and written["action"] == "inserted"
    for text in ("The value to pass through", "X itself, always falsy", "If x is truthy"):
        assert text in written["docstring"]
    report = docstring_check(ctx, "mod.py", "bare", style=style)
    assert report["clean"] is True, report["problems"]


def test_what_docstring_set_leaves_undescribed_is_reported(ctx: CapabilityContext) -> None:
    """Left out, not filled in: the checkers see the gap that ``undescribed`` lists."""
    written = docstring_set(ctx, "mod.py", "bare", "Return x unless it is truthy.")
    assert written["undescribed"] == ["x", "return"]
    assert written["docstring"] == (
        "Return x unless it is truthy.\n\nRaises:\n    ValueError: Negative."
    )
    report = docstring_check(ctx, "mod.py", "bare")
    assert report["clean"] is False
    assert report["missing_params"] == ["x"]
    assert {"missing", "DOC101", "DOC201"} <= _codes(report)


@pytest.mark.parametrize(
    ("summary", "name", "problem"),
    [
        ("Get user name.", "get_user_name", "repeats_name"),
        ("Gets the user names.", "get_user_name", "repeats_name"),
        ("Do parse config.", "parseConfig", "repeats_name"),
        ("This function handles the value.", "handle", "repeats_name"),
        ("Return the is_arity of a function.", "is_arity", "repeats_name"),
        ("Returns the user name.", "user_name", "repeats_name"),
        ("Return the arity of a function as an int.", "is_arity", None),
        ("  ", "f", "empty"),
        ("x" * 120, "f", "too_long"),
        ("Return the user's display name from the profile.", "get_user_name", None),
        ("Parse an ISO date string into a date.", "parse", None),
        ("One line in the imperative mood: what the code does.", "total", "copies_text"),
        ("function total(prices); returns a value.", "total", "copies_text"),
        ("Add up the prices, whatever the code does with them.", "total", None),
        # The prompt's own words, copied by a small model ("... in the imperative mode.").
        ("Add up the prices in the imperative mood.", "total", "copies_text"),
        ("Document the function call.", "total", "copies_text"),
        ("Documented total: Add up the prices.", "total", "copies_text"),
        ("Add up the prices. Now call check_docstring.", "total", "copies_text"),
    ],
)
def test_a_summary_must_say_more_than_the_name(
    ctx: CapabilityContext, summary: str, name: str, problem: str | None
) -> None:
    avoid = ["One line in the imperative mood: what the code does and returns."]
    checked = docstring_summary_check(ctx, summary, name, avoid)
    assert checked["problem"] == problem
    assert checked["ok"] is (problem is None)


@pytest.mark.parametrize(
    ("summary", "problem"),
    [
        ("Return the object as a collection.", "wrong_kind"),
        ("Convert the value to a list of items.", "wrong_kind"),
        ("Check whether the object is a collection.", None),
        ("Return True if the object can be iterated over.", None),
        ("Tell if an object holds several items.", None),
    ],
)
def test_a_function_seen_returning_only_bools_must_be_said_to_answer_a_question(
    ctx: CapabilityContext, summary: str, problem: str | None
) -> None:
    checked = docstring_summary_check(ctx, summary, "is_collection", kinds=["boolean"])
    assert checked["problem"] == problem


@pytest.mark.parametrize(
    ("summary", "name", "problem"),
    [
        ("Return a value when the function is called.", "once", "vague"),
        ("Return the result.", "apply", "vague"),
        ("Process the data and return the result.", "handle", "vague"),
        ("Call the function once and return its result afterwards.", "once", None),
        ("Return the first item.", "head", None),
        ("Return the result of the first call.", "cached", None),
    ],
)
def test_a_summary_that_would_fit_any_function_is_vague(
    ctx: CapabilityContext, summary: str, name: str, problem: str | None
) -> None:
    assert docstring_summary_check(ctx, summary, name)["problem"] == problem


NAMEDLIST = '''def namedlist(typename, field_names, rename=False):
    """

    >>> Point = namedlist('Point', ['x', 'y'])
    """
    fields = list(field_names)
    return type(typename, (list,), {"_fields": fields})
'''


@pytest.mark.parametrize(
    ("summary", "problem"),
    [
        ("Named list of points.", "copies_example"),
        ("Make a list type whose items are named by the Point fields.", "copies_example"),
        ("Make a list subclass whose items have field names.", None),
    ],
)
def test_a_summary_that_takes_words_from_an_examples_values_is_refused(
    ctx: CapabilityContext, summary: str, problem: str | None
) -> None:
    examples = [
        "Point = namedlist('Point', ['x', 'y'])",
        "namedlist('Point', ['x', 'y']) returns <class 'Point'>",
    ]
    checked = docstring_summary_check(ctx, summary, "namedlist", code=NAMEDLIST, examples=examples)
    assert checked["problem"] == problem
    if problem:
        assert '"point' in checked["detail"]


def test_words_the_code_has_are_not_copies_of_an_example(ctx: CapabilityContext) -> None:
    code = "def pluralize(word):\n    return word + 's'\n"
    checked = docstring_summary_check(
        ctx,
        "Return the plural form of a word.",
        "pluralize",
        code=code,
        examples=["pluralize('word') returns 'words'"],
    )
    assert checked["ok"]


def test_plain_words_of_an_examples_strings_are_not_copies(ctx: CapabilityContext) -> None:
    code = "def camelize(string, uppercase_first_letter=True):\n    return string.title()\n"
    for summary in ("Convert a string to camel case.", "Camelize the words of a string."):
        checked = docstring_summary_check(
            ctx,
            summary,
            "camelize",
            code=code,
            examples=["camelize('camel_case') returns 'CamelCase'"],
        )
        assert checked["ok"], checked
