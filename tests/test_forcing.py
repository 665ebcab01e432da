"""Jump-forward: the text a call grammar forces is exactly what every valid call continues with."""

from __future__ import annotations

import random

import pytest

from remora.model.base import ToolSpec
from remora.model.forcing import GrammarCursor
from remora.model.functiongemma import END_CALL, START_CALL
from remora.model.grammar import build_call_grammar

TOOLS = [
    ToolSpec(
        name="read_file",
        description="Read a file.",
        parameters={
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
    ),
    ToolSpec(
        name="read_lines",
        description="Read lines.",
        parameters={
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "start": {"type": "integer"},
                "count": {"type": "integer"},
            },
            "required": ["path", "start"],
        },
    ),
    ToolSpec(
        name="submit_result",
        description="Finish.",
        parameters={
            "type": "object",
            "properties": {"summary": {"type": "string"}, "ok": {"type": "boolean"}},
            "required": ["summary"],
        },
    ),
]


def cursor_after(text: str, *, optional: bool = False) -> GrammarCursor:
    cursor = GrammarCursor(build_call_grammar(TOOLS, optional_call=optional))
    cursor.feed(text)
    return cursor


def test_a_required_call_forces_its_opening_tag() -> None:
    assert cursor_after("").forced() == START_CALL + "call:"


def test_free_text_first_forces_nothing() -> None:
    assert cursor_after("", optional=True).forced() == ""


def test_a_unique_name_prefix_forces_the_name_and_first_key() -> None:
    assert cursor_after(START_CALL + "call:read_").forced() == ""
    # read_lines has an optional key (count) sorted before path: the keys are a choice
    assert cursor_after(START_CALL + "call:read_l").forced() == "ines{"
    assert cursor_after(START_CALL + "call:read_f").forced() == "ile{path:<escape>"
    assert cursor_after(START_CALL + "call:s").forced() == "ubmit_result{"  # ok sorts first


def test_the_end_of_the_last_string_forces_the_closing() -> None:
    text = START_CALL + "call:read_file{path:<escape>a.py<escape>"
    assert cursor_after(text).forced() == "}" + END_CALL
    assert cursor_after(text[:-3]).forced() == ""  # inside the string: anything may follow


def test_required_keys_are_forced_and_values_are_not() -> None:
    text = START_CALL + "call:read_lines{path:<escape>a.py<escape>"
    assert cursor_after(text).forced() == ",start:"
    assert cursor_after(text + ",start:12").forced() == ""  # more digits may follow


def test_choices_force_a_single_allowed_value() -> None:
    grammar = build_call_grammar(TOOLS, {"path": ["only.py"]})
    cursor = GrammarCursor(grammar)
    cursor.feed(START_CALL + "call:read_f")
    assert cursor.forced() == "ile{path:<escape>only.py<escape>}" + END_CALL


def test_text_outside_the_grammar_loses_the_cursor() -> None:
    cursor = cursor_after(START_CALL + "call:nope")
    assert cursor.lost
    assert cursor.forced() == ""


def test_the_forced_limit_is_honoured() -> None:
    assert cursor_after("").forced(limit=5) == START_CALL[:5]


@pytest.mark.parametrize("optional", [False, True])
def test_forced_text_is_a_prefix_of_every_sampled_call(optional: bool) -> None:
    """The property jump-forward rests on, over random calls the grammar admits."""
    grammar = build_call_grammar(TOOLS, optional_call=optional)
    rng = random.Random(7)
    for _ in range(40):
        sample = grammar.sample(rng)
        cursor = GrammarCursor(grammar)
        for cut in range(len(sample) + 1):
            forced = cursor.forced()
            assert sample[cut:].startswith(forced), (sample, cut, forced)
            if cut < len(sample):
                cursor.feed(sample[cut])
        assert not cursor.lost
