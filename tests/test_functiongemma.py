"""The FunctionGemma renderer against Google's published format examples."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from remora.model.base import Message, ToolCall, ToolSpec
from remora.model.functiongemma import (
    END_CALL,
    ESCAPE,
    START_CALL,
    TRIGGER_SENTENCE,
    format_argument,
    format_declaration,
    prompt_pieces,
    render_call,
    render_completion,
    render_prompt,
    render_response,
)
from remora.runner.parsing import parse_functiongemma_calls

WEATHER = ToolSpec(
    name="get_current_weather",
    description="Gets the current weather in a given location.",
    parameters={
        "type": "object",
        "properties": {
            "location": {
                "type": "string",
                "description": 'The city and state, e.g. "San Francisco, CA" or "Tokyo, JP"',
            },
            "unit": {
                "type": "string",
                "enum": ["celsius", "fahrenheit"],
                "description": "The unit to return the temperature in.",
            },
        },
        "required": ["location"],
    },
)

# "FunctionGemma formatting and best practices", ai.google.dev: the weather tool flow.
PUBLISHED_TURN_1 = (
    "<start_of_turn>developer\nYou are a model that can do function calling with the "
    "following functions<start_function_declaration>declaration:get_current_weather{"
    "description:<escape>Gets the current weather in a given location.<escape>,parameters:{"
    'properties:{location:{description:<escape>The city and state, e.g. "San Francisco, CA" '
    'or "Tokyo, JP"<escape>,type:<escape>STRING<escape>},unit:{description:<escape>The unit '
    "to return the temperature in.<escape>,enum:[<escape>celsius<escape>,<escape>fahrenheit"
    "<escape>],type:<escape>STRING<escape>}},required:[<escape>location<escape>],type:<escape>"
    "OBJECT<escape>}}<end_function_declaration><end_of_turn>\n"
)
PUBLISHED_TURN_2 = "<start_of_turn>user\nHey, what's the weather in Tokyo right now?<end_of_turn>\n"
PUBLISHED_TURN_3 = (
    "<start_function_call>call:get_current_weather{location:<escape>Tokyo, Japan<escape>}"
    "<end_function_call>"
)
PUBLISHED_TURN_4 = (
    "<start_function_response>response:get_current_weather{temperature:15,weather:<escape>"
    "sunny<escape>}<end_function_response>"
)
PUBLISHED_TURN_5 = (
    "The current weather in Tokyo is sunny with a temperature of 15 degrees Celsius.<end_of_turn>"
)


def weather_conversation() -> list[Message]:
    return [
        Message(role="system", content=TRIGGER_SENTENCE),
        Message(role="user", content="Hey, what's the weather in Tokyo right now?"),
        Message(
            role="assistant",
            tool_calls=[
                ToolCall(
                    id="c1", name="get_current_weather", arguments={"location": "Tokyo, Japan"}
                )
            ],
        ),
        Message(
            role="tool",
            name="get_current_weather",
            tool_call_id="c1",
            content=json.dumps({"temperature": 15, "weather": "sunny"}),
        ),
    ]


def test_developer_turn_matches_the_published_declaration() -> None:
    prompt = render_prompt(weather_conversation()[:2], [WEATHER], bos=False)
    assert prompt == PUBLISHED_TURN_1 + PUBLISHED_TURN_2 + "<start_of_turn>model\n"


def test_call_and_response_stay_in_one_model_turn_without_generation_prompt() -> None:
    prompt = render_prompt(weather_conversation(), [WEATHER])
    expected = (
        "<bos>"
        + PUBLISHED_TURN_1
        + PUBLISHED_TURN_2
        + "<start_of_turn>model\n"
        + PUBLISHED_TURN_3
        + PUBLISHED_TURN_4
    )
    assert prompt == expected


def test_final_answer_continues_the_model_turn_after_a_response() -> None:
    messages = [
        *weather_conversation(),
        Message(role="assistant", content=PUBLISHED_TURN_5.removesuffix("<end_of_turn>")),
    ]
    prompt = render_prompt(messages, [WEATHER], add_generation_prompt=False)
    assert prompt.endswith(PUBLISHED_TURN_4 + PUBLISHED_TURN_5 + "\n")


def test_user_message_after_a_response_is_a_turn_of_its_own() -> None:
    messages = [*weather_conversation(), Message(role="user", content="Now submit.")]
    prompt = render_prompt(messages, [WEATHER])
    assert prompt.endswith(
        PUBLISHED_TURN_4
        + "<end_of_turn>\n<start_of_turn>user\nNow submit.<end_of_turn>\n<start_of_turn>model\n"
    )
    without_note = render_prompt(weather_conversation(), [WEATHER])
    assert prompt.startswith(without_note), "the cached prefix must survive the note"


def test_published_call_and_response_blocks() -> None:
    call = ToolCall(name="get_current_weather", arguments={"location": "Tokyo, Japan"})
    assert render_call(call) == PUBLISHED_TURN_3
    response = render_response("get_current_weather", {"weather": "sunny", "temperature": 15})
    assert response == PUBLISHED_TURN_4


def test_turn_shapes_without_tools() -> None:
    assert (
        render_prompt([Message(role="user", content="Hello!")])
        == "<bos><start_of_turn>user\nHello!<end_of_turn>\n<start_of_turn>model\n"
    )
    assert render_prompt(
        [Message(role="system", content=" You are helpful \n"), Message(role="user", content="Hi")]
    ) == (
        "<bos><start_of_turn>developer\nYou are helpful<end_of_turn>\n"
        "<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n"
    )
    assert render_prompt(
        [
            Message(role="user", content="Hi"),
            Message(role="assistant", content="Hello!"),
            Message(role="user", content="More"),
        ]
    ) == (
        "<bos><start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\nHello!<end_of_turn>\n"
        "<start_of_turn>user\nMore<end_of_turn>\n<start_of_turn>model\n"
    )


def test_tool_response_forms() -> None:
    """``{"name", "response"}`` JSON is what the runner sends; plain text becomes ``value``."""
    base = weather_conversation()[:3]
    wrapped = Message(
        role="tool",
        tool_call_id="c1",
        content=json.dumps({"name": "get_current_weather", "response": {"ok": True, "n": None}}),
    )
    assert render_prompt([*base, wrapped]).endswith(
        "<start_function_response>response:get_current_weather{n:None,ok:true}"
        "<end_function_response>"
    )
    text = Message(role="tool", tool_call_id="c1", content="plain {text}")
    assert render_prompt([*base, text]).endswith(
        "response:get_current_weather{value:<escape>plain {text}<escape>}<end_function_response>"
    )


def test_tool_message_name_falls_back_to_the_answered_call() -> None:
    messages = [
        Message(role="user", content="go"),
        Message(
            role="assistant",
            tool_calls=[ToolCall(id="a", name="first"), ToolCall(id="b", name="second")],
        ),
        Message(role="tool", content="{}"),
        Message(role="tool", tool_call_id="b", content="{}"),
    ]
    prompt = render_prompt(messages)
    assert "response:first{}" in prompt
    assert prompt.endswith("response:second{}<end_function_response>")


def test_trailing_call_opens_the_response_block() -> None:
    messages = [
        Message(role="user", content="go"),
        Message(role="assistant", tool_calls=[ToolCall(name="ping")]),
    ]
    prompt = render_prompt(messages, add_generation_prompt=False)
    assert prompt.endswith(
        "<start_function_call>call:ping{}<end_function_call><start_function_response>"
    )


def test_assistant_content_repeating_its_calls_is_not_rendered_twice() -> None:
    call = ToolCall(name="ping", arguments={"n": 1})
    messages = [
        Message(role="user", content="go"),
        Message(role="assistant", content="Sure. " + render_call(call), tool_calls=[call]),
        Message(role="tool", name="ping", content="{}"),
    ]
    prompt = render_prompt(messages)
    assert prompt.count(START_CALL) == 1
    assert "<start_of_turn>model\nSure.<start_function_call>call:ping{n:1}" in prompt


def test_trigger_sentence_is_added_only_when_asked() -> None:
    messages = [Message(role="system", content="Fix lint."), Message(role="user", content="x")]
    faithful = render_prompt(messages, [WEATHER])
    assert TRIGGER_SENTENCE not in faithful
    ensured = render_prompt(messages, [WEATHER], ensure_trigger=True)
    assert ensured.startswith(
        "<bos><start_of_turn>developer\nFix lint.\n"
        + TRIGGER_SENTENCE
        + "<start_function_declaration>"
    )
    no_system = render_prompt(messages[1:], [WEATHER], ensure_trigger=True)
    assert no_system.startswith("<bos><start_of_turn>developer\n" + TRIGGER_SENTENCE + "<start_")
    already = render_prompt(
        [Message(role="system", content=TRIGGER_SENTENCE), messages[1]],
        [WEATHER],
        ensure_trigger=True,
    )
    assert already.count(TRIGGER_SENTENCE) == 1


def test_declaration_without_properties() -> None:
    submit = ToolSpec(
        name="submit_result",
        description="Finish.",
        parameters={"type": "object", "properties": {}, "required": []},
    )
    assert format_declaration(submit) == (
        "declaration:submit_result{description:<escape>Finish.<escape>,parameters:{"
        "type:<escape>OBJECT<escape>}}"
    )
    assert format_declaration(ToolSpec(name="x", parameters={})) == (
        "declaration:x{description:<escape><escape>}"
    )


def test_declaration_follows_the_template_quirks() -> None:
    """Sorted case-insensitively, empty descriptions kept, enum only for STRING, and the
    template's standard key names (here ``type``) skipped as property names."""
    tool = ToolSpec(
        name="t",
        parameters={
            "type": "object",
            "properties": {
                "Beta": {"type": "integer", "enum": [1, 2]},
                "alpha": {"type": "boolean", "description": "A flag"},
                "type": {"type": "string"},
            },
        },
    )
    assert format_declaration(tool) == (
        "declaration:t{description:<escape><escape>,parameters:{properties:{"
        "alpha:{description:<escape>A flag<escape>,type:<escape>BOOLEAN<escape>},"
        "Beta:{description:<escape><escape>,type:<escape>INTEGER<escape>}},"
        "type:<escape>OBJECT<escape>}}"
    )


def test_declaration_of_nested_objects_and_arrays() -> None:
    tool = ToolSpec(
        name="n",
        description="Nested.",
        parameters={
            "type": "object",
            "properties": {
                "opts": {
                    "type": "object",
                    "description": "Options",
                    "properties": {"depth": {"type": "integer"}},
                    "required": ["depth"],
                },
                "points": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"x": {"type": "number"}},
                        "required": ["x"],
                    },
                },
                "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
            },
            "required": ["opts"],
        },
    )
    assert format_declaration(tool) == (
        "declaration:n{description:<escape>Nested.<escape>,parameters:{properties:{"
        "opts:{description:<escape>Options<escape>,properties:{depth:{description:<escape>"
        "<escape>,type:<escape>INTEGER<escape>}},required:[<escape>depth<escape>],type:<escape>"
        "OBJECT<escape>},"
        "points:{description:<escape><escape>,items:{properties:{x:{description:<escape><escape>,"
        "type:<escape>NUMBER<escape>}},required:[<escape>x<escape>],type:<escape>OBJECT<escape>},"
        "type:<escape>ARRAY<escape>},"
        "tags:{description:<escape><escape>,items:{enum:[<escape>a<escape>,<escape>b<escape>],"
        "type:<escape>STRING<escape>},type:<escape>ARRAY<escape>}},"
        "required:[<escape>opts<escape>],type:<escape>OBJECT<escape>}}"
    )


def test_format_argument_scalars_and_nesting() -> None:
    assert format_argument("a,b}") == "<escape>a,b}<escape>"
    assert format_argument(True) == "true"
    assert format_argument(False) == "false"
    assert format_argument(3) == "3"
    assert format_argument(2.5) == "2.5"
    assert format_argument(None) == "None"
    assert format_argument({"b": [1, "x"], "A": {}}) == (
        "{<escape>A<escape>:{},<escape>b<escape>:[1,<escape>x<escape>]}"
    )
    assert format_argument({"b": 1}, escape_keys=False) == "{b:1}"


_KEYS = st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True)
_TEXT = st.text(max_size=30).filter(lambda s: ESCAPE not in s and START_CALL not in s)
_SCALARS = st.one_of(
    _TEXT,
    st.integers(min_value=-(10**12), max_value=10**12),
    st.floats(allow_nan=False, allow_infinity=False, width=64),
    st.booleans(),
    st.none(),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_KEYS, inner, max_size=3)),
    max_leaves=8,
)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float | int) and not isinstance(b, bool):
        return math.isclose(a, b, rel_tol=0, abs_tol=0) or a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


@settings(max_examples=200, deadline=None)
@given(
    name=st.from_regex(r"[a-z_][a-z0-9_]{0,15}", fullmatch=True),
    args=st.dictionaries(_KEYS, _VALUES, max_size=5),
)
def test_parse_of_render_round_trips(name: str, args: dict[str, Any]) -> None:
    text = render_call(ToolCall(name=name, arguments=args))
    assert text.startswith(START_CALL) and text.endswith(END_CALL)
    calls = parse_functiongemma_calls(text)
    assert len(calls) == 1
    assert calls[0].name == name
    assert _same(args, calls[0].arguments)


def test_prompt_pieces_cut_where_each_call_starts_and_stops() -> None:
    call = ToolCall(name="get_current_weather", arguments={"location": "Paris"})
    messages = [
        Message(role="user", content="Weather in Paris?"),
        Message(role="assistant", tool_calls=[call]),
        Message(role="tool", name="get_current_weather", content='{"temp": 20}'),
    ]
    before = render_prompt(messages[:1], [WEATHER])
    after = render_prompt(messages, [WEATHER])
    assert after.startswith(before + render_completion(call))
    pieces = prompt_pieces(after)
    assert "".join(pieces) == after
    # the prompt the model completed, the call it wrote, the text that followed
    assert pieces[:2] == [before, render_completion(call)]
    assert prompt_pieces(before) == [before]
    assert prompt_pieces("") == []
