"""The docstring agent's grounding: the project's calls run in the sandbox, what the code
calls, and the host's checks of the model's summary against them (issue: docstrings a
maintainer would keep), on a real overlay workspace."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from remora.operations.docstring.check import (
    docstring_summary_check,
    repeated_run,
    unfinished,
    unknown_names,
)
from remora.operations.docstring.grounding import (
    callee_summaries,
    claimed_kinds,
    contradiction,
    observe,
    observe_chosen,
    result_kinds,
    static_kinds,
)
from remora.operations.docstring.write import (
    docstring_evidence,
    docstring_verdict,
    docstring_write,
)
from remora.tools.capabilities import CapabilityContext
from remora.tools.capabilities.files import read_file
from tests.stores import capability_context, write_tree

BILLING = """import datetime

from billing.money import cents


def parse_date(text):
    year, month, day = text.split("-")
    return datetime.date(int(year), int(month), int(day))


def days_overdue(due, today):
    return max(0, (today - due).days)


def line_total(price, quantity, discount=0):
    return cents(price * quantity * (1 - discount))


def label(code):
    return f"INV-{code}"


def increment(x):
    return x + 1
"""

MONEY = '''def cents(amount):
    """Round an amount of money to whole cents."""
    return round(amount, 2)
'''

TESTS = """import datetime

from billing.invoices import days_overdue, line_total, parse_date


def test_parse_date():
    assert parse_date("2024-02-29") == datetime.date(2024, 2, 29)


def test_line_total():
    assert line_total(2.5, 4) == 10.0
    assert line_total(10, 3, discount=0.5) == 15.0
"""


def _definition(name: str) -> ast.FunctionDef:
    return next(
        node
        for node in ast.parse(BILLING).body
        if isinstance(node, ast.FunctionDef) and node.name == name
    )


@pytest.fixture
def ctx(tmp_path: Path) -> CapabilityContext:
    root = write_tree(
        tmp_path / "proj",
        {
            "billing/__init__.py": "",
            "billing/invoices.py": BILLING,
            "billing/money.py": MONEY,
            "tests/test_invoices.py": TESTS,
        },
    )
    return capability_context(root, {"options": {"style": "google", "describe": True}})


def test_the_projects_calls_are_run_and_what_they_returned_is_shown(
    ctx: CapabilityContext,
) -> None:
    calls = ['parse_date("2024-02-29")', "line_total(2.5, 4)", "line_total(10, 3, discount=0.5)"]
    observed = observe(ctx, "billing/invoices.py", "parse_date", _definition("parse_date"), calls)
    assert observed.lines == ["parse_date('2024-02-29') returns datetime.date(2024, 2, 29)"]
    assert observed.kinds == {"date"}
    assert observed.param_types == {"text": "str"}
    assert observed.return_type == "datetime.date"
    totals = observe(ctx, "billing/invoices.py", "line_total", _definition("line_total"), calls)
    assert totals.lines == [
        "line_total(2.5, 4) returns 10.0",
        "line_total(10, 3, discount=0.5) returns 15.0",
    ]
    assert totals.param_types == {"price": "float | int", "quantity": "int", "discount": "float"}
    assert totals.kinds == {"number"}


def test_a_call_whose_arguments_cannot_be_evaluated_is_left_out(ctx: CapabilityContext) -> None:
    calls = ["increment(helper(3))", "increment(4)"]
    observed = observe(ctx, "billing/invoices.py", "increment", _definition("increment"), calls)
    assert observed.lines == ["increment(4) returns 5"]


def test_evidence_shows_observed_calls_and_the_summaries_of_what_the_code_calls(
    ctx: CapabilityContext,
) -> None:
    evidence = docstring_evidence(ctx, "billing/invoices.py", "line_total")
    assert "What those calls returned when the host ran them:" in evidence["text"]
    assert "line_total(2.5, 4) returns 10.0" in evidence["text"]
    assert evidence["callees"] == ["cents: Round an amount of money to whole cents."]
    assert "cents: Round an amount of money to whole cents." in evidence["text"]


SIGNS = """import datetime


def shout(word, times=2):
    if times < 0:
        raise ValueError("times must not be negative")
    return (word.upper() + "!") * times


def divide(total, parts):
    return total // parts


def constant(value=0):
    return lambda: value


def later(days=1):
    return datetime.timedelta(days=days)
"""


@pytest.fixture
def signs(tmp_path: Path) -> CapabilityContext:
    """A module nobody calls and whose returns do not say what they give."""
    root = write_tree(tmp_path / "proj", {"signs/__init__.py": "", "signs/words.py": SIGNS})
    return capability_context(root, {"options": {"style": "google", "describe": True}})


def _node(name: str) -> ast.FunctionDef:
    return next(
        item
        for item in ast.parse(SIGNS).body
        if isinstance(item, ast.FunctionDef) and item.name == name
    )


def test_where_the_project_shows_nothing_the_host_calls_with_values_it_chooses(
    signs: CapabilityContext,
) -> None:
    chosen = observe_chosen(signs, "signs/words.py", "shout", _node("shout"), SIGNS)
    assert "shout('abc', 2) returns 'ABC!ABC!'" in chosen.lines
    assert chosen.kinds == {"text"}
    # times=-1 (the edge of the comparison) raised: a chosen value that raised says more of
    # the choice than of the code, so it is not recorded; nor are the types it chose
    assert not any(line.startswith("shout('a', -1)") for line in chosen.lines)
    assert (chosen.param_types, chosen.return_type) == ({}, None)
    # a result known by its default repr is recorded without its address
    made = observe_chosen(signs, "signs/words.py", "constant", _node("constant"), SIGNS)
    assert made.lines == ["constant(0) returns <function constant.<locals>.<lambda>>"]


def test_the_chosen_calls_judge_the_summary_but_are_not_shown(signs: CapabilityContext) -> None:
    evidence = docstring_evidence(signs, "signs/words.py", "shout")
    assert evidence["observed"] == []
    # the plainest values of each kind led the model's words astray: not in its prompt
    assert "ABC!" not in evidence["text"]
    assert "returned" not in evidence["text"]
    # what they returned is the kind the summary is checked against
    refused = docstring_write(signs, "signs/words.py", "shout", "Return the number of words.")
    assert refused["summary_problem"] == "wrong_kind"
    assert "seen returning text" in refused["detail"]
    written = docstring_write(signs, "signs/words.py", "shout", "Shout the word a few times.")
    assert written["written"] is True
    assert "word (str)" not in read_file(signs, "signs/words.py")
    assert result_kinds(signs, "signs/words.py", "shout") == ({"text"}, set())
    assert result_kinds(signs, "signs/words.py", "later") == ({"timedelta"}, set())


def test_calls_that_only_raise_give_no_evidence(signs: CapabilityContext) -> None:
    # the host's values for total and parts are a number and a list: every call raises
    chosen = observe_chosen(signs, "signs/words.py", "divide", _node("divide"), SIGNS)
    assert (chosen.lines, chosen.kinds) == ([], set())
    assert result_kinds(signs, "signs/words.py", "divide") == (set(), set())
    # only plain functions are called with chosen values: not a class, not a coroutine
    for definition in ("class shout:\n    pass", "async def shout(word, times=2):\n    pass"):
        other = ast.parse(definition).body[0]
        assert observe_chosen(signs, "signs/words.py", "shout", other, SIGNS).lines == []


def test_callees_defined_in_the_same_module_are_summarized(tmp_path: Path) -> None:
    source = (
        'def helper():\n    """Say hello."""\n    return "hi"\n\n\n'
        "def main():\n    return helper()\n"
    )
    ctx = capability_context(write_tree(tmp_path / "p", {"m.py": source}))
    tree = ast.parse(source)
    node = tree.body[1]
    assert callee_summaries(ctx, "m.py", tree, node) == ["helper: Say hello."]


@pytest.mark.parametrize(
    ("summary", "claimed"),
    [
        ("Parse a date into a string.", {"text"}),
        ("Return the number of days overdue as a string.", {"number", "text"}),
        ("Return the total amount after the discount.", set()),
        ("Return a list of strings.", {"sequence"}),
        ("Return a date string.", {"text"}),
        ("Return True if the code is valid.", {"boolean"}),
        ("Parse a date string.", set()),
        # inflection's own ordinal(): "to a number" is not where its result is stated.
        ("Return the suffix that should be added to a number to denote the position", set()),
        ("Turn a number into an ordinal string used to denote the position", {"text"}),
        ("Return the string length.", set()),
        ("Return the ordinal of a number.", set()),
        ("Convert a number to a string.", {"text"}),
        # what the shipped adapter wrote for humanize's naturaldelta and precisedelta
        ("Convert a datetime into a timedelta.", {"timedelta"}),
        ("Return a datetime value as a timedelta.", {"timedelta"}),
        ("Return the number of seconds in a timedelta.", {"number"}),
    ],
)
def test_the_result_a_summary_claims(summary: str, claimed: set[str]) -> None:
    assert claimed_kinds(summary) == claimed


def test_a_claim_is_refused_only_when_it_contradicts_what_was_observed() -> None:
    assert contradiction("Parse a date into a string.", {"date"}) is not None
    assert contradiction("Convert a datetime into a timedelta.", {"text"}) is not None
    assert contradiction("Return the time left as a timedelta.", {"timedelta"}) is None
    assert contradiction("Return the days overdue as a string.", {"number"}) is not None
    assert contradiction("Parse a date.", {"date"}) is None
    assert contradiction("Return the count of items.", {"number"}) is None
    assert contradiction("Parse a date into a string.", set()) is None  # nothing known


def test_static_kinds_come_only_from_returns_that_all_say() -> None:
    def kinds(source: str) -> set[str] | None:
        return static_kinds(ast.parse(source).body[0])

    assert kinds("def f(x):\n    return f'{x}'\n") == {"text"}
    assert kinds("def f(x):\n    if x:\n        return 1\n    return len(x)\n") == {"number"}
    assert kinds("def f(x):\n    return x + 1\n") is None
    assert kinds("def f(x):\n    yield x\n") is None
    assert kinds("def f(x):\n    print(x)\n") is None


def test_garbage_summaries_are_caught() -> None:
    words = str.split("parse the amount into cents and cents and cents and cents")
    assert repeated_run(words) == "cents and cents"
    assert repeated_run(str.split("return the sum of the prices")) is None
    assert unfinished("If terms are not specified, it is a.")
    assert unfinished("Return the value of (x.")
    assert not unfinished("Return the sum of the prices.")
    assert unknown_names("Return `total_price` of the order.", ["price", "order"]) == [
        "`total_price`"
    ]
    assert unknown_names("Call `line_total()` per line.", ["line_total"]) == []


def test_summary_check_refuses_a_contradicted_kind(ctx: CapabilityContext) -> None:
    checked = docstring_summary_check(
        ctx, "Parse a date into a string.", "parse_date", None, ["text"], ["date"]
    )
    assert checked["problem"] == "wrong_kind"
    assert "date" in checked["detail"]
    tool_text = "Write the docstring from your one-line summary; the sections are added for you."
    assert docstring_summary_check(ctx, tool_text, "status")["problem"] == "copies_text"


def test_a_refused_summary_is_complained_about_twice_then_left_for_the_person(
    ctx: CapabilityContext,
) -> None:
    path = "billing/invoices.py"
    docstring_evidence(ctx, path, "parse_date")
    first = docstring_write(ctx, path, "parse_date", "Parse a date into a string.")
    assert first["written"] is False
    assert first["summary_problem"] == "wrong_kind"
    assert first["left_for_person"] is False
    second = docstring_write(ctx, path, "parse_date", "Parse the text and the text and the text.")
    assert (second["summary_problem"], second["left_for_person"]) == ("repeats_words", False)
    third = docstring_write(ctx, path, "parse_date", "Turn the text into a.")
    assert (third["summary_problem"], third["left_for_person"]) == ("unfinished", True)
    verdict = docstring_verdict(ctx, path, "parse_date")
    assert verdict["status"] == "left"
    assert "left for you" in verdict["summary"]
    assert len(verdict["details"]["refused_summaries"]) == 3
    assert '"""' not in read_file(ctx, path).split("def parse_date")[1].split("def ")[0]


def test_an_accepted_summary_gets_the_observed_types_in_its_sections(
    ctx: CapabilityContext,
) -> None:
    path = "billing/invoices.py"
    docstring_evidence(ctx, path, "parse_date")
    written = docstring_write(ctx, path, "parse_date", "Parse a year-month-day text as a date.")
    assert written["written"] is True
    from remora.operations.docstring.write import docstring_describe

    docstring_describe(ctx, path, "parse_date", "text", "A date written as YYYY-MM-DD.")
    docstring_describe(ctx, path, "parse_date", "return", "The calendar day the text names.")
    text = read_file(ctx, path)
    assert "text (str): A date written as YYYY-MM-DD." in text
    assert "datetime.date: The calendar day the text names." in text
    assert docstring_verdict(ctx, path, "parse_date")["status"] == "success"


def test_result_kinds_judge_by_observation_else_by_returns_else_by_chosen_calls(
    ctx: CapabilityContext,
) -> None:
    assert result_kinds(ctx, "billing/invoices.py", "parse_date") == ({"date"}, set())
    assert result_kinds(ctx, "billing/invoices.py", "label") == ({"text"}, set())
    # nobody calls increment and `x + 1` does not say: the host's own calls of it do
    assert result_kinds(ctx, "billing/invoices.py", "increment") == ({"number"}, set())


def test_claims_about_the_items_of_a_sequence_are_checked_too() -> None:
    claim = "Partition all values into a list of integers."
    assert contradiction(claim, {"sequence"}, {"sequence"}) is not None
    assert contradiction(claim, {"sequence"}, {"number"}) is None
    assert contradiction("Return a list of strings.", {"sequence"}, set()) is None


def test_a_number_the_code_does_not_have_is_refused(ctx: CapabilityContext) -> None:
    checked = docstring_summary_check(
        ctx,
        "Extract the first 100 items of the text.",
        "parse_date",
        code="def parse_date(text):\n    return text\n",
    )
    assert (checked["problem"], checked["detail"]) == ("unknown_number", "the code has no 100")
    assert docstring_summary_check(ctx, "Sort in imperative mode.", "f")["problem"] == "copies_text"
