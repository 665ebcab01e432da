"""The bundled docstring agent end to end: scripted model, real tools, real workspace."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from remora.testing import call
from tests.stores import write_tree
from tests.support.agent_run import run_operation

MODULE = '''"""Prices."""


def apply_discount(price_cents, percent):
    if percent < 0 or percent > 100:
        raise ValueError("percent must be between 0 and 100")
    return price_cents * (100 - percent) // 100


def documented(a, b):
    """Multiply two numbers.

    Args:
        a: The first.
        b: The second.

    Returns:
        The product.
    """
    return a * b


def _helper(x):
    return x
'''
GOOD = "Return the price after taking off a percentage discount."
DESCRIBE = {"describe": True}
"""Descriptions are asked for only with this option (the default leaves them to the person)."""
IDEAL = [
    call("write_docstring", summary=GOOD),
    call("describe", item="price_cents", text="Price before the discount, in cents."),
    call("describe", item="percent", text="Share of the price taken off, from 0 to 100."),
    call("describe", item="return", text="Discounted price in whole cents, rounded down."),
]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "proj", {"prices.py": MODULE})


def _docstring(text: str, name: str) -> str | None:
    tree = ast.parse(text)
    node = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)
    return ast.get_docstring(node)


def test_the_ideal_sequence_writes_a_clean_docstring(project: Path) -> None:
    """The model writes the summary and each description it is asked for; the host builds
    the sections, checks, and submits once nothing is left."""
    outcome = run_operation(
        project, "docstring", "prices.py", IDEAL, qualname="apply_discount", options=DESCRIBE
    )
    assert outcome.result.status == "success", outcome.result
    assert outcome.result.details["problems"] == []
    assert outcome.result.summary == f"Docstring of apply_discount: {GOOD}"
    assert outcome.model_calls == 4
    assert outcome.result.telemetry.host_steps == 2  # read_signature first, submit_result last
    written = _docstring(outcome.changed["prices.py"], "apply_discount")
    assert written == (
        f"{GOOD}\n\n"
        "Args:\n"
        "    price_cents: Price before the discount, in cents.\n"
        "    percent: Share of the price taken off, from 0 to 100.\n\n"
        "Returns:\n"
        "    Discounted price in whole cents, rounded down.\n\n"
        "Raises:\n"
        "    ValueError: Percent must be between 0 and 100."
    )
    assert outcome.tools.errors == 0


def test_the_model_sees_the_evidence_and_is_asked_one_item_at_a_time(project: Path) -> None:
    (project / "test_prices.py").write_text(
        "from prices import apply_discount\n\n\ndef test_half():\n"
        "    assert apply_discount(1000, 50) == 500\n"
    )
    outcome = run_operation(
        project, "docstring", "prices.py", IDEAL, qualname="apply_discount", options=DESCRIBE
    )
    first = outcome.requests[0].messages[1].content
    assert "Describe: price_cents, percent, the return value" in first
    assert 'Raises ValueError with the message "percent must be between 0 and 100"' in first
    assert "apply_discount(1000, 50) returns 500" in first
    asked = [request.choices for request in outcome.requests[1:]]
    assert asked == [{"item": ["price_cents"]}, {"item": ["percent"]}, {"item": ["return"]}]


def test_by_default_the_model_writes_the_summary_only(project: Path) -> None:
    outcome = run_operation(project, "docstring", "prices.py", IDEAL[:1], qualname="apply_discount")
    assert outcome.model_calls == 1
    assert "describe" not in outcome.offered_tools
    assert outcome.result.status == "partial"
    assert "Left for you: describe price_cents, percent, the return value" in outcome.result.summary
    first = outcome.requests[0].messages
    assert [m.role for m in first] == ["system", "user", "assistant", "tool"]
    assert first[2].tool_calls[0].name == "read_signature"  # the host's opening step
    written = _docstring(outcome.changed["prices.py"], "apply_discount") or ""
    assert written == (f"{GOOD}\n\nRaises:\n    ValueError: Percent must be between 0 and 100.")


def test_the_summary_is_its_first_sentence_in_the_imperative_mood(project: Path) -> None:
    script = [
        call(
            "write_docstring",
            summary="Returns the price after the discount. If it is negative, return zero.",
        )
    ]
    outcome = run_operation(project, "docstring", "prices.py", script, qualname="apply_discount")
    written = _docstring(outcome.changed["prices.py"], "apply_discount") or ""
    assert written.startswith("Return the price after the discount.\n")


def test_numpy_style_comes_from_the_options(project: Path) -> None:
    outcome = run_operation(
        project,
        "docstring",
        "prices.py",
        IDEAL,
        qualname="apply_discount",
        options={"style": "numpy", **DESCRIBE},
    )
    assert outcome.result.status == "success", outcome.result
    written = _docstring(outcome.changed["prices.py"], "apply_discount") or ""
    assert "Parameters\n----------" in written


def test_filler_is_refused_and_left_for_the_person(project: Path) -> None:
    """No filler: a description that only restates the name is not written; the item is
    asked again with the complaint twice, then left, and the job is partial, naming what is
    left."""
    script = [
        IDEAL[0],
        *(
            call("describe", item="price_cents", text=t)
            for t in ("The price cents.", "Cents.", "Price.")
        ),
        IDEAL[2],
        *(call("describe", item="return", text=t) for t in ("The result.", "Result.", "Returned.")),
    ]
    outcome = run_operation(
        project, "docstring", "prices.py", script, qualname="apply_discount", options=DESCRIBE
    )
    assert outcome.result.status == "partial", (outcome.result.summary, outcome.result.error)
    assert "Left for you: describe price_cents, the return value" in outcome.result.summary
    assert outcome.result.details["undescribed"] == ["price_cents", "return"]
    written = _docstring(outcome.changed["prices.py"], "apply_discount") or ""
    assert "price cents" not in written.lower() and "The result" not in written
    assert "percent: Share of the price taken off, from 0 to 100." in written
    assert (
        "Not written (only restates the name). Describe `price_cents` in other words."
        in (outcome.tool_summaries[2])
    )
    assert "`price_cents` is left for the person" in outcome.tool_summaries[4]


def test_a_summary_that_repeats_the_name_is_refused(project: Path) -> None:
    script = [call("write_docstring", summary="Apply discount."), *IDEAL]
    outcome = run_operation(
        project, "docstring", "prices.py", script, qualname="apply_discount", options=DESCRIBE
    )
    assert outcome.result.status == "success"
    assert outcome.tools.errors == 1
    assert "only repeats the name `apply_discount`" in outcome.tool_summaries[1]
    assert (_docstring(outcome.changed["prices.py"], "apply_discount") or "").startswith(GOOD)


def test_an_invalid_argument_is_refused_before_any_tool_runs(project: Path) -> None:
    script = [call("write_docstring", text=GOOD), *IDEAL]
    outcome = run_operation(
        project, "docstring", "prices.py", script, qualname="apply_discount", options=DESCRIBE
    )
    assert outcome.result.status == "success"
    assert outcome.result.telemetry.invalid_calls == 1
    assert "missing required argument 'summary'" in outcome.tool_summaries[1]


def test_when_no_summary_is_usable_the_job_fails_and_changes_nothing(project: Path) -> None:
    """A refused summary is complained about twice (the model must try again: it cannot
    submit); the third refusal leaves the docstring for the person, and the host submits."""
    script = [
        call("write_docstring", summary="def apply_discount(price_cents, percent):"),
        call("write_docstring", summary="Apply discount."),
        call("write_docstring", summary="Take the discount off the price of the."),
    ]
    outcome = run_operation(
        project, "docstring", "prices.py", script, qualname="apply_discount", options=DESCRIBE
    )
    assert outcome.result.status == "left"
    assert "no usable summary" in (outcome.result.summary)
    assert "left for you" in (outcome.result.summary)
    assert outcome.changed == {}
    assert "Call write_docstring again" in outcome.tool_summaries[1]
    assert "The summary is left for the person." in outcome.tool_summaries[3]


def test_a_model_that_repeats_a_refused_summary_is_not_asked_for_the_hosts_steps(
    project: Path,
) -> None:
    """A small model answering greedily repeats the summary the host refused. Once the
    repeat guard blocks write_docstring, only host steps are left: the host submits (the
    docstring left for the person), and the model is never asked to read the signature or
    to submit."""
    refused = call("write_docstring", summary="def apply_discount(price_cents, percent):")
    outcome = run_operation(
        project, "docstring", "prices.py", [refused] * 6, qualname="apply_discount"
    )
    assert outcome.result.status == "left"
    assert "left for you" in (outcome.result.summary)
    assert outcome.changed == {}
    assert outcome.model_calls == 3  # the summary, then the same summary twice
    assert all(request.allowed_tools == ["write_docstring"] for request in outcome.requests)
    assert outcome.result.telemetry.stall_triggers.get("host_finish") == 1
    assert outcome.result.telemetry.host_steps == 2  # read_signature, then submit_result


def test_without_the_model_the_host_writes_what_it_can(project: Path) -> None:
    """Without the model the host writes no summary of its own: the job fails, changes
    nothing and says the summary is left for the person."""
    outcome = run_operation(
        project,
        "docstring",
        "prices.py",
        [],
        qualname="apply_discount",
        options={"use_model": False},
    )
    assert outcome.model_calls == 0
    assert outcome.result.status == "left"
    assert "left for you" in (outcome.result.summary or outcome.result.error or "")
    assert outcome.changed == {}


def test_clean_and_private_nodes_are_skipped_without_the_model(project: Path) -> None:
    clean = run_operation(project, "docstring", "prices.py", [], qualname="documented")
    assert clean.result.status == "skipped" and clean.model_calls == 0
    assert "complete in its own convention (google)" in clean.result.summary
    private = run_operation(project, "docstring", "prices.py", [], qualname="_helper")
    assert private.result.status == "skipped" and private.model_calls == 0
    assert "include_private" in private.result.summary


def test_test_code_is_skipped_unless_asked(tmp_path: Path) -> None:
    source = "def test_total():\n    assert sum([1]) == 1\n"
    project = write_tree(tmp_path / "proj", {"tests/test_total.py": source})
    skipped = run_operation(project, "docstring", "tests/test_total.py", [])
    assert skipped.result.status == "skipped" and "include_tests" in skipped.result.summary
    asked = run_operation(
        project,
        "docstring",
        "tests/test_total.py",
        [call("write_docstring", summary="Check that sum adds one.")],
        options={"include_tests": True},
    )
    assert asked.result.status == "success", asked.result


def test_missing_only_leaves_existing_docstrings_alone(project: Path) -> None:
    (project / "prices.py").write_text(
        MODULE.replace('"""Multiply two numbers.\n', '"""Multiply.\n\n    Args:\n        z: no.\n')
    )
    outcome = run_operation(
        project,
        "docstring",
        "prices.py",
        [],
        qualname="documented",
        options={"missing_only": True},
    )
    assert outcome.result.status == "skipped"
    assert "missing_only" in outcome.result.summary


def test_an_authors_summary_is_never_handed_to_the_model(tmp_path: Path) -> None:
    """A docstring with a summary is the host's: its mechanical fix, what is missing
    inserted in place, no model call; the authors' example stays as written."""
    source = (
        "def total(prices):\n"
        '    """Returns the sum of the prices.\n\n'
        "    >>> total([1, 2])\n"
        "    3\n"
        '    """\n'
        "    if not prices:\n"
        '        raise ValueError("prices must not be empty")\n'
        "    return sum(prices)\n"
    )
    project = write_tree(tmp_path / "proj", {"shop.py": source})
    outcome = run_operation(project, "docstring", "shop.py", [], qualname="total")
    assert outcome.model_calls == 0
    assert outcome.result.status == "partial"  # google by default: prices and the result
    assert outcome.result.summary.startswith(
        "Docstring of total (mood: Returns -> Return, raises inserted): "
    )
    assert outcome.changed["shop.py"] == source.replace(
        '"""Returns the sum of the prices.\n\n    >>> total([1, 2])\n    3\n',
        '"""Return the sum of the prices.\n\n    >>> total([1, 2])\n    3\n\n'
        "    Raises:\n        ValueError: Prices must not be empty.\n",
    )


def test_names_inside_private_ones_are_private(tmp_path: Path) -> None:
    source = (
        "def _irregular(word):\n"
        "    def caseinsensitive(text):\n"
        "        return text.lower()\n"
        "    return caseinsensitive(word)\n\n\n"
        "class _Cache:\n"
        "    def get(self, key):\n"
        "        return key\n"
    )
    project = write_tree(tmp_path / "proj", {"words.py": source})
    for qualname in ("_irregular.caseinsensitive", "_Cache.get"):
        outcome = run_operation(project, "docstring", "words.py", [], qualname=qualname)
        assert outcome.result.status == "skipped" and outcome.model_calls == 0
        assert "include_private" in outcome.result.summary


def test_an_edit_a_test_reads_is_undone(tmp_path: Path) -> None:
    """A test may read the docstring (toolz asserts ``'Returns None' in f.__doc__``): an
    edit that breaks a test of the module is not offered, and the docstring stays as it
    was written."""
    source = 'def return_none(exc):\n    """ Returns None.\n    """\n    return None\n'
    test = (
        "from handlers import return_none\n\n\n"
        "def test_doc():\n    assert 'Returns None' in return_none.__doc__\n"
    )
    project = write_tree(tmp_path / "proj", {"handlers.py": source, "test_handlers.py": test})
    outcome = run_operation(project, "docstring", "handlers.py", [], qualname="return_none")
    assert outcome.model_calls == 0 and outcome.changed == {}
    assert outcome.result.status == "skipped"
    assert outcome.result.summary == (
        "the docstring of return_none is left as its authors wrote it: the edit (mood: "
        "Returns -> Return) breaks test_handlers.py::test_doc, which reads it"
    )
    passing = test.replace("'Returns None' in", "'None' in")
    (project / "test_handlers.py").write_text(passing)
    fixed = run_operation(project, "docstring", "handlers.py", [], qualname="return_none")
    assert fixed.result.summary.startswith("Docstring of return_none (mood: Returns -> Return)")
    assert fixed.changed["handlers.py"] == source.replace("Returns None", "Return None")
