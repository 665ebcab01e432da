"""The parsing chain: a corpus of realistic outputs plus the properties it must keep."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from remora.model.base import ModelResponse, ToolCall
from remora.runner.parsing import (
    PATH_FUNCTIONGEMMA,
    PATH_NATIVE,
    FunctionGemmaSyntaxError,
    parse_functiongemma_arguments,
    parse_functiongemma_calls,
    parse_response,
    parse_text,
)

CORPUS_PATH = Path(__file__).parent / "data" / "parser_corpus.yaml"
CORPUS: list[dict[str, Any]] = yaml.safe_load(CORPUS_PATH.read_text(encoding="utf-8"))


def test_corpus_is_large_and_has_unique_ids() -> None:
    ids = [case["id"] for case in CORPUS]
    assert len(ids) >= 60
    assert len(set(ids)) == len(ids)
    paths = {case.get("path") for case in CORPUS}
    assert {"functiongemma", "tool_call_tag", "json", "json_tool_calls", "fenced"} <= paths
    assert sum(1 for case in CORPUS if not case["calls"]) >= 15


@pytest.mark.parametrize("case", CORPUS, ids=[case["id"] for case in CORPUS])
def test_corpus_case(case: dict[str, Any]) -> None:
    result = parse_text(case["output"])
    got = [{"name": call.name, "arguments": call.arguments} for call in result.calls]
    assert got == case["calls"]
    if case["calls"]:
        assert {call.parse_path for call in result.calls} == {case["path"]}
    assert result.textual_pattern is case.get("textual", False)


def test_native_calls_win_and_are_labelled() -> None:
    response = ModelResponse(
        raw_text='{"name": "other", "arguments": {}}',
        tool_calls=[ToolCall(id="c1", name="read_file", arguments={"path": "a.py"})],
    )
    result = parse_response(response)
    assert [(call.id, call.name, call.parse_path) for call in result.calls] == [
        ("c1", "read_file", PATH_NATIVE)
    ]


def test_native_calls_keep_the_path_a_backend_recorded() -> None:
    call = ToolCall(name="run_linter", parse_path=PATH_FUNCTIONGEMMA)
    assert parse_response(ModelResponse(tool_calls=[call])).paths == [PATH_FUNCTIONGEMMA]


def test_response_text_falls_back_to_content() -> None:
    response = ModelResponse(content='{"name": "run_linter"}', raw_text="")
    assert [call.name for call in parse_response(response).calls] == ["run_linter"]


def test_cut_off_output_says_so() -> None:
    response = ModelResponse(
        raw_text="<start_function_call>call:write_docstring{summary:<escape>Return",
        finish_reason="length",
    )
    result = parse_response(response)
    assert not result.calls
    assert result.textual_pattern
    assert any("token limit" in problem for problem in result.problems)


def test_problem_names_the_failure() -> None:
    result = parse_text("<start_function_call>call:apply_fix{code:<escape>E501")
    assert result.problems
    assert "unterminated <escape> string" in result.problems[0]


def test_functiongemma_arguments_nested_values() -> None:
    text = (
        "{a:<escape>x, {y}: z<escape>,b:-3,c:2.5,d:true,e:null,"
        "f:{g:[1,<escape>two<escape>,{h:false}]},i:[]}"
    )
    assert parse_functiongemma_arguments(text) == {
        "a": "x, {y}: z",
        "b": -3,
        "c": 2.5,
        "d": True,
        "e": None,
        "f": {"g": [1, "two", {"h": False}]},
        "i": [],
    }


@pytest.mark.parametrize(
    "text",
    ["{a:<escape>x}junk", "{a:1", "{a 1}", "{a:[1,2}", "no braces", "{a:<escape>x"],
)
def test_functiongemma_arguments_reject_malformed(text: str) -> None:
    with pytest.raises(FunctionGemmaSyntaxError):
        parse_functiongemma_arguments(text)


def test_functiongemma_arguments_reject_deep_nesting() -> None:
    with pytest.raises(FunctionGemmaSyntaxError, match="too deep"):
        parse_functiongemma_arguments("{a:" + "[" * 40 + "]" * 40 + "}")


def test_parse_functiongemma_calls_parallel_and_lenient() -> None:
    text = (
        "<start_function_call>call:a{x:1}<end_function_call>"
        "<start_function_call>call:b{y:<escape>2<escape>}<end_function_call>"
        "<start_function_call>call:c{broken<end_function_call>"
    )
    calls = parse_functiongemma_calls(text)
    assert [(call.name, call.arguments) for call in calls] == [("a", {"x": 1}), ("b", {"y": "2"})]
    assert all(call.parse_path == PATH_FUNCTIONGEMMA for call in calls)
    assert parse_functiongemma_calls("call:run_linter{}")[0].name == "run_linter"
    assert parse_functiongemma_calls("nothing here") == []


_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**9), max_value=10**9)
    | st.text(
        alphabet=st.characters(codec="utf-8", exclude_characters="<"), min_size=0, max_size=12
    )
)
_VALUES = st.recursive(
    _SCALARS,
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(
            st.from_regex(r"[a-z_][a-z0-9_]{0,6}", fullmatch=True), children, max_size=3
        )
    ),
    max_leaves=8,
)


def _render(value: Any) -> str:
    """A FunctionGemma renderer for the property test (the real one lives in remora.model)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return f"<escape>{value}<escape>"
    if isinstance(value, list):
        return "[" + ",".join(_render(item) for item in value) + "]"
    return "{" + ",".join(f"{key}:{_render(item)}" for key, item in value.items()) + "}"


@settings(max_examples=80, deadline=None)
@given(st.dictionaries(st.from_regex(r"[a-z_][a-z0-9_]{0,6}", fullmatch=True), _VALUES, max_size=4))
def test_functiongemma_round_trip(arguments: dict[str, Any]) -> None:
    text = f"<start_function_call>call:tool{_render(arguments)}<end_function_call>"
    calls = parse_functiongemma_calls(text)
    assert [(call.name, call.arguments) for call in calls] == [("tool", arguments)]


_FRAGMENTS = st.sampled_from(
    [
        "<start_function_call>",
        "<end_function_call>",
        "<escape>",
        "call:",
        "read_file",
        "{",
        "}",
        "[",
        "]",
        ":",
        ",",
        '"name"',
        '"arguments"',
        "<tool_call>",
        "</tool_call>",
        "```",
        "json\n",
        "(",
        ")",
        "=",
        "1",
        "true",
        " ",
        "'",
        '"',
        "\\",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_FRAGMENTS, max_size=30).map("".join))
def test_format_fragments_never_raise(text: str) -> None:
    result = parse_text(text)
    assert all(isinstance(call.arguments, dict) for call in result.calls)
    assert all(call.parse_path for call in result.calls)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_arbitrary_text_never_raises(text: str) -> None:
    result = parse_text(text)
    assert isinstance(result.textual_pattern, bool)
