"""The docstring agent's host steps (write.py) and description_problem, on a real overlay."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from remora.errors import ToolError
from remora.operations.docstring.check import description_problem, restates
from remora.operations.docstring.docstrings import docstring_set
from remora.operations.docstring.write import (
    docstring_ask,
    docstring_describe,
    docstring_evidence,
    docstring_host_only,
    docstring_next,
    docstring_verdict,
    docstring_write,
)
from remora.tools.capabilities import CapabilityContext
from remora.tools.capabilities.files import read_file
from tests.stores import capability_context, write_tree

SOURCE = '''def shift(offsets: list[int], fill: int = 0) -> list[int]:
    if fill < 0:
        raise ValueError("fill must not be negative")
    return [offset + fill for offset in offsets]


def pick(table, key):
    if key not in table:
        raise KeyError(key)
    return table[key]


def log_each(items):
    """Print every item."""
    for item in items:
        print(item)


def get_user_name(user):
    return user.name
'''

TEST_FILE = """from seqs import shift


def test_shift():
    assert shift([1, 2], fill=1) == [2, 3]
"""

FILES: dict[str, str | bytes] = {
    "seqs.py": SOURCE,
    "app.py": "from seqs import shift\n\nprint(shift([3], 1))\n",
    "tests/test_seqs.py": TEST_FILE,
}

SUMMARY = "Add a fill amount to every offset"
GOOD = "How far to shift each sequence; negative values pad the front."


def _context(root: Path, **options: Any) -> CapabilityContext:
    """A job's context with descriptions asked for (``describe`` is off by default: most
    of these tests follow the description steps)."""
    return capability_context(root, {"options": {"style": "google", "describe": True, **options}})


@pytest.fixture
def ctx(tmp_path: Path) -> CapabilityContext:
    return _context(write_tree(tmp_path / "proj", FILES))


def _docstring(ctx: CapabilityContext, name: str) -> str | None:
    tree = ast.parse(read_file(ctx, "seqs.py"))
    node = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)
    return ast.get_docstring(node)


def _write_all(ctx: CapabilityContext, summary: str = "Add fill to every offset.") -> None:
    """A complete docstring for ``shift``, every parameter and the return value described."""
    docstring_set(
        ctx,
        "seqs.py",
        "shift",
        summary,
        params={"offsets": "positions to move, in order", "fill": "how far to move them"},
        returns="a new list of the moved positions",
    )


# description_problem

TOOL_TALKS = "speaks of the tools, not the code"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("The offsets.", "only restates the name"),
        ("The list of offsets.", "only restates the name"),
        ("The input offsets.", "only restates the name"),
        ("=True", "too short to say anything"),
        ("ok", "too short to say anything"),
        ("Add a fill amount to every offset.", "copies text used elsewhere"),
        ("add a fill amount to every offset", "copies text used elsewhere"),
        ("Pads the front. Pads the front.", "repeats itself"),
        ("Pads the front; pads the front.", "repeats itself"),
        ("Positions to move. Now call write_docstring with a one-line summary.", TOOL_TALKS),
        ("Documented shift: Return the value of the offsets.", TOOL_TALKS),
        (GOOD, None),
        ("Positions to move, in order; each gets the fill added.", None),
    ],
)
def test_description_problem(text: str, problem: str | None) -> None:
    """What the bundled adapter wrote when asked for descriptions is among the refused."""
    assert description_problem(text, "offsets", "list[int]", [SUMMARY + "."]) == problem


def test_description_problem_without_seen_text_accepts_the_summary_words() -> None:
    assert description_problem("Add a fill amount to every offset.", "offsets") is None


def test_restates_names_the_filler_the_host_used_to_write() -> None:
    assert restates("The height.", "height")
    assert restates("The result.", "resize", "Box")
    assert restates("On failure.", "ValueError")
    assert restates("The next value.", "numbers", "Iterator[int]")
    assert restates("A Box object.", "resize", "Box")
    assert not restates("New height in px.", "height")


# docstring_evidence


def test_evidence_names_signature_items_raise_message_and_calls(ctx: CapabilityContext) -> None:
    evidence = docstring_evidence(ctx, "seqs.py", "shift")
    assert evidence["described"] == []
    assert evidence["raises"] == {"ValueError": "fill must not be negative"}
    assert evidence["describe"][:3] == ["offsets", "fill", "return"]
    calls = evidence["calls"]
    assert calls[0] == "tests/test_seqs.py:5: assert shift([1, 2], fill=1) == [2, 3]"
    assert "app.py:3: print(shift([3], 1))" in calls
    assert not any(call.startswith("seqs.py") for call in calls)
    text = evidence["text"]
    lines = text.splitlines()
    assert lines[0] == "Signature: shift(offsets: list[int], fill: int = 0) -> list[int]"
    assert lines[1].startswith("Describe: offsets, fill, the return value")
    assert 'Raises ValueError with the message "fill must not be negative"' in lines
    # The project's calls, run in the sandbox: what each returned, in the order found.
    assert "How the project calls it:" in lines
    assert "What those calls returned when the host ran them:" in lines
    assert evidence["observed"] == [
        "shift([1, 2], fill=1) returns [2, 3]",
        "shift([3], 1) returns [4]",
    ]
    assert text.index("shift([1, 2], fill=1) returns") < text.index("shift([3], 1) returns")


def test_evidence_keeps_what_is_described(ctx: CapabilityContext) -> None:
    docstring_set(ctx, "seqs.py", "shift", SUMMARY, params={"fill": "how far to move them"})
    evidence = docstring_evidence(ctx, "seqs.py", "shift")
    assert evidence["describe"] == ["offsets", "return"]
    assert evidence["described"] == ["fill"]
    assert "Describe: offsets, the return value" in evidence["text"].splitlines()
    assert "Already described (kept unless you rewrite them): fill" in evidence["text"]
    _write_all(ctx)
    done = docstring_evidence(ctx, "seqs.py", "shift")
    assert done["describe"] == []
    assert "Everything is described already; write the summary." in done["text"]


def test_evidence_of_an_unknown_name(ctx: CapabilityContext) -> None:
    with pytest.raises(ToolError) as info:
        docstring_evidence(ctx, "seqs.py", "shfit")
    assert info.value.code == "TOOL_105"


# docstring_write


def test_write_refuses_a_summary_that_only_repeats_the_name(ctx: CapabilityContext) -> None:
    result = docstring_write(ctx, "seqs.py", "shift", "Shift.")
    assert result == {
        "written": False,
        "summary_problem": "repeats_name",
        "detail": "",
        "left_for_person": False,
    }
    assert read_file(ctx, "seqs.py") == SOURCE
    copied = docstring_write(ctx, "seqs.py", "shift", "Write one line.", avoid=["Write one line."])
    assert (copied["summary_problem"], copied["left_for_person"]) == ("copies_text", False)
    assert read_file(ctx, "seqs.py") == SOURCE


def test_write_writes_a_good_summary_and_asks_for_the_first_parameter(
    ctx: CapabilityContext,
) -> None:
    result = docstring_write(ctx, "seqs.py", "shift", SUMMARY)
    assert result["written"] is True and result["action"] == "inserted"
    assert result["undescribed"] == ["offsets", "fill", "return"]
    assert result["next"] == "offsets" and result["next_is_param"] is True
    assert result["done"] is False
    assert any(problem.startswith("DOC201") for problem in result["problems"])
    expected = (
        "Add a fill amount to every offset.\n\nRaises:\n    ValueError: Fill must not be negative."
    )
    assert result["docstring"] == expected
    assert _docstring(ctx, "shift") == expected
    assert '+    """Add a fill amount to every offset.' in result["diff"]


def test_write_keeps_descriptions_and_adds_details(ctx: CapabilityContext) -> None:
    docstring_set(ctx, "seqs.py", "shift", "Old summary.", params={"fill": "how far to move them"})
    result = docstring_write(ctx, "seqs.py", "shift", SUMMARY, details="Offsets are not sorted.")
    assert result["written"] is True and result["action"] == "replaced"
    assert result["undescribed"] == ["offsets", "return"] and result["next"] == "offsets"
    assert _docstring(ctx, "shift") == (
        "Add a fill amount to every offset.\n\nOffsets are not sorted.\n\n"
        "Args:\n    fill: How far to move them.\n\n"
        "Raises:\n    ValueError: Fill must not be negative."
    )


# docstring_describe


def test_describe_writes_an_accepted_description_and_moves_on(ctx: CapabilityContext) -> None:
    docstring_write(ctx, "seqs.py", "shift", SUMMARY)
    result = docstring_describe(ctx, "seqs.py", "shift", "offsets", GOOD)
    assert result["item"] == "offsets" and result["refused"] is None
    assert result["undescribed"] == ["fill", "return"]
    assert result["next"] == "fill"
    docstring = _docstring(ctx, "shift")
    assert docstring is not None
    assert f"Args:\n    offsets: {GOOD}\n" in docstring
    assert docstring.startswith("Add a fill amount to every offset.\n")
    assert "ValueError: Fill must not be negative." in docstring


def test_describe_refuses_filler_asks_again_twice_then_leaves_it(ctx: CapabilityContext) -> None:
    docstring_write(ctx, "seqs.py", "shift", SUMMARY)
    before = read_file(ctx, "seqs.py")
    result = docstring_describe(ctx, "seqs.py", "shift", "offsets", "The offsets.")
    assert result["refused"] == "only restates the name"
    assert read_file(ctx, "seqs.py") == before
    assert result["undescribed"] == ["offsets", "fill", "return"]
    # The complaint goes back to the model: the same item is asked again, twice.
    assert (result["next"], result["left_for_person"]) == ("offsets", False)
    again = docstring_describe(ctx, "seqs.py", "shift", "offsets", "The offset values.")
    assert (again["next"], again["left_for_person"]) == ("offsets", False)
    last = docstring_describe(ctx, "seqs.py", "shift", "offsets", "Offsets.")
    assert (last["next"], last["left_for_person"]) == ("fill", True)
    assert docstring_next(ctx, "seqs.py", "shift")["next"] == "fill"
    assert read_file(ctx, "seqs.py") == before


def test_describe_refuses_a_run_on_or_unfinished_description(ctx: CapabilityContext) -> None:
    docstring_write(ctx, "seqs.py", "shift", SUMMARY)
    run_on = "The amount added to the amount added to the amount added."
    assert docstring_describe(ctx, "seqs.py", "shift", "fill", run_on)["refused"] == (
        "repeats itself"
    )
    cut = "How far each offset is moved, in the."
    assert docstring_describe(ctx, "seqs.py", "shift", "fill", cut)["refused"] == (
        "stops mid-sentence"
    )


def test_describe_refuses_text_copied_from_the_summary_or_another_description(
    ctx: CapabilityContext,
) -> None:
    docstring_write(ctx, "seqs.py", "shift", SUMMARY)
    copied = docstring_describe(ctx, "seqs.py", "shift", "offsets", SUMMARY)
    assert copied["refused"] == "copies text used elsewhere"
    assert docstring_describe(ctx, "seqs.py", "shift", "fill", GOOD)["refused"] is None
    again = docstring_describe(ctx, "seqs.py", "shift", "return", GOOD)
    assert again["refused"] == "copies text used elsewhere"
    assert again["undescribed"] == ["offsets", "return"] and again["next"] == "offsets"


def test_describe_refuses_an_unknown_item(ctx: CapabilityContext) -> None:
    docstring_write(ctx, "seqs.py", "shift", SUMMARY)
    before = read_file(ctx, "seqs.py")
    result = docstring_describe(ctx, "seqs.py", "shift", "width", GOOD)
    assert result["refused"] == "nothing of that name to describe"
    assert read_file(ctx, "seqs.py") == before
    assert result["next"] == "offsets"


def test_describe_needs_a_summary_first(ctx: CapabilityContext) -> None:
    result = docstring_describe(ctx, "seqs.py", "shift", "offsets", GOOD)
    assert result["refused"] == "the docstring has no summary yet"
    assert read_file(ctx, "seqs.py") == SOURCE
    assert result["next"] == "fill"


def test_describe_every_item_until_done(ctx: CapabilityContext) -> None:
    """Parameters, the return value and an exception raised without a message."""
    written = docstring_write(ctx, "seqs.py", "pick", "Look a key up in a table")
    assert written["undescribed"] == ["table", "key", "return", "KeyError"]
    answers = {
        "table": "Mapping to search; never changed.",
        "key": "Which entry to look up; must be hashable.",
        "return": "The entry stored under that key.",
        "KeyError": "If the table has no entry with this name.",
    }
    left = written
    while left["next"] is not None:
        left = docstring_describe(ctx, "seqs.py", "pick", left["next"], answers[left["next"]])
        assert left["refused"] is None
    assert left["undescribed"] == [] and left["done"] is True and left["problems"] == []
    tree = ast.parse(read_file(ctx, "seqs.py"))
    pick = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "pick")
    assert ast.get_docstring(pick) == (
        "Look a key up in a table.\n\n"
        "Args:\n    table: Mapping to search; never changed.\n"
        "    key: Which entry to look up; must be hashable.\n\n"
        "Returns:\n    The entry stored under that key.\n\n"
        "Raises:\n    KeyError: If the table has no entry with this name."
    )
    assert docstring_verdict(ctx, "seqs.py", "pick")["status"] == "success"


# docstring_next


def test_next_is_none_when_the_describe_option_is_off(tmp_path: Path) -> None:
    ctx = _context(write_tree(tmp_path / "proj", FILES), describe=False)
    result = docstring_write(ctx, "seqs.py", "shift", SUMMARY)
    assert result["written"] is True
    assert result["undescribed"] == ["offsets", "fill", "return"]
    assert result["next"] is None and result["done"] is False
    assert docstring_next(ctx, "seqs.py", "shift")["next"] is None


def test_next_is_the_first_undescribed_item(ctx: CapabilityContext) -> None:
    docstring_set(ctx, "seqs.py", "shift", SUMMARY, params={"offsets": GOOD})
    left = docstring_next(ctx, "seqs.py", "shift")
    assert left["undescribed"] == ["fill", "return"]
    assert left["next"] == "fill" and left["next_is_param"] is True
    docstring_set(ctx, "seqs.py", "shift", SUMMARY, params={"fill": "how far to move them"})
    returned = docstring_next(ctx, "seqs.py", "shift")
    assert returned["next"] == "return" and returned["next_is_param"] is False


# docstring_ask


def test_ask_names_the_next_item(ctx: CapabilityContext) -> None:
    left = docstring_write(ctx, "seqs.py", "shift", SUMMARY)
    asked = docstring_ask(ctx, left, "Wrote the summary.")
    assert asked["outcome"] == "success"
    # Submitting instead leaves the item, and the rest, for the person.
    assert asked["next_tools"] == ["describe", "submit_result"]
    assert asked["choices"] == {"item": ["offsets"]}
    assert asked["summary"].startswith("Wrote the summary.\nNow call describe with item offsets")
    assert "`offsets`" in asked["summary"]


def test_ask_submits_when_nothing_is_left(ctx: CapabilityContext) -> None:
    _write_all(ctx)
    left = docstring_next(ctx, "seqs.py", "shift")
    assert left["done"] is True and left["next"] is None
    asked = docstring_ask(ctx, left, "Described fill.")
    assert asked == {
        "outcome": "success",
        "summary": "Described fill.",
        "next_tools": ["submit_result"],
    }


def test_ask_submits_when_only_undescribed_findings_are_left(ctx: CapabilityContext) -> None:
    """Findings that only say an item is undescribed are not the summary's fault."""
    docstring_write(ctx, "seqs.py", "shift", SUMMARY)
    for item, filler in (("offsets", "The offsets."), ("fill", "The fill."), ("return", "Result.")):
        for _ in range(3):  # refused, complained about twice, then left for the person
            left = docstring_describe(ctx, "seqs.py", "shift", item, filler)
    assert left["next"] is None and left["undescribed"] == ["offsets", "fill", "return"]
    assert left["problems"]
    assert docstring_ask(ctx, left, "Refused.")["next_tools"] == ["submit_result"]


def test_ask_for_a_better_summary_when_only_a_summary_problem_remains(tmp_path: Path) -> None:
    ctx = capability_context(write_tree(tmp_path / "proj", FILES), {"options": {"style": "numpy"}})
    _write_all(ctx, summary="Returns the offsets moved by fill.")
    left = docstring_next(ctx, "seqs.py", "shift")
    assert left["undescribed"] == [] and left["next"] is None and left["done"] is False
    assert [problem[:5] for problem in left["problems"]] == ["D401:"]
    asked = docstring_ask(ctx, left, "Wrote it.")
    assert asked["next_tools"] == ["write_docstring", "submit_result"]
    assert "choices" not in asked
    assert asked["summary"].startswith("Wrote it.\nProblems: D401: ")


# docstring_verdict


def test_verdict_success_for_a_complete_clean_docstring(ctx: CapabilityContext) -> None:
    _write_all(ctx)
    verdict = docstring_verdict(ctx, "seqs.py", "shift")
    assert verdict["status"] == "success"
    assert verdict["summary"] == "Docstring of shift: Add fill to every offset."
    assert verdict["details"] == {"undescribed": [], "problems": []}


def test_verdict_partial_when_a_parameter_is_undescribed(ctx: CapabilityContext) -> None:
    docstring_set(
        ctx,
        "seqs.py",
        "shift",
        SUMMARY,
        params={"offsets": GOOD},
        returns="a new list of the moved positions",
    )
    verdict = docstring_verdict(ctx, "seqs.py", "shift")
    assert verdict["status"] == "partial"
    assert verdict["summary"].startswith(
        "Docstring of shift: Add a fill amount to every offset. Left for you: describe fill"
    )
    assert verdict["details"]["undescribed"] == ["fill"]


def test_verdict_partial_names_the_return_value(ctx: CapabilityContext) -> None:
    docstring_write(ctx, "seqs.py", "shift", SUMMARY)
    verdict = docstring_verdict(ctx, "seqs.py", "shift")
    assert verdict["status"] == "partial"
    assert "Left for you: describe offsets, fill, the return value" in verdict["summary"]


def test_verdict_failed_without_a_docstring(ctx: CapabilityContext) -> None:
    verdict = docstring_verdict(ctx, "seqs.py", "shift")
    assert verdict["status"] == "left"
    assert verdict["summary"] == "no docstring written for shift: no usable summary; left for you"


# docstring_host_only


def test_host_only_keeps_the_existing_summary(ctx: CapabilityContext) -> None:
    verdict = docstring_host_only(ctx, "seqs.py", "log_each")
    assert verdict["status"] == "partial"
    assert (
        verdict["summary"] == "Docstring of log_each (as its authors wrote it): Print every item. "
        "Left for you: describe items"
    )
    assert verdict["details"]["undescribed"] == ["items"]
    assert "made from the name" not in verdict["summary"]
    assert _docstring(ctx, "log_each") == "Print every item."


def test_host_only_writes_no_summary_made_from_the_name(ctx: CapabilityContext) -> None:
    """A summary made from the name ("Get user name.") says nothing: without a model the
    host writes no docstring and says the summary is left for the person."""
    verdict = docstring_host_only(ctx, "seqs.py", "get_user_name")
    assert _docstring(ctx, "get_user_name") is None
    assert read_file(ctx, "seqs.py") == SOURCE
    assert verdict["status"] == "left"
    assert verdict["summary"] == (
        "no docstring written for get_user_name: its summary needs words and no model was "
        "asked (operations.docstring.options.use_model is false); left for you"
    )


def test_host_only_writes_the_raise_message_and_keeps_descriptions(
    ctx: CapabilityContext,
) -> None:
    docstring_set(ctx, "seqs.py", "shift", SUMMARY, params={"fill": "how far to move them"})
    verdict = docstring_host_only(ctx, "seqs.py", "shift")
    assert _docstring(ctx, "shift") == (
        "Add a fill amount to every offset.\n\n"
        "Args:\n    fill: How far to move them.\n\n"
        "Raises:\n    ValueError: Fill must not be negative."
    )
    assert verdict["status"] == "partial"
    assert verdict["details"]["undescribed"] == ["offsets", "return"]


def test_host_only_skips_a_docstring_complete_in_its_convention(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "proj", FILES)
    first = _context(root)
    _write_all(first)
    (root / "seqs.py").write_text(read_file(first, "seqs.py"))
    fresh = _context(root)
    verdict = docstring_host_only(fresh, "seqs.py", "shift")
    assert verdict["status"] == "skipped"
    assert verdict["summary"] == (
        "the docstring of shift is complete in its own convention (google); nothing to add"
    )
    assert read_file(fresh, "seqs.py") == (root / "seqs.py").read_text()
