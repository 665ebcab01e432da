"""Validation: unknown tools, schema errors that name the field, harmless coercions."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from remora.errors import RunnerError
from remora.model.base import ToolCall, ToolSpec
from remora.runner.validation import CallValidator

SPECS = [
    ToolSpec(
        name="read_file",
        parameters={
            "type": "object",
            "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}},
            "required": ["path"],
            "additionalProperties": False,
        },
    ),
    ToolSpec(
        name="apply_fix",
        parameters={
            "type": "object",
            "properties": {
                "code": {"type": "string", "enum": ["E501", "F401", "W291"]},
                "line": {"type": "integer", "minimum": 1},
                "lines": {"type": "array", "items": {"type": "integer"}},
                "ratio": {"type": "number"},
                "dry_run": {"type": "boolean"},
                "note": {"type": ["string", "null"]},
                "cases": {"type": "array", "items": {"type": "string", "maxLength": 10}},
            },
            "required": ["code", "line"],
            "additionalProperties": False,
        },
    ),
    ToolSpec(
        name="submit_result",
        parameters={
            "type": "object",
            "properties": {"status": {"type": "string"}, "summary": {"type": "string"}},
            "required": ["status"],
        },
    ),
]

VALIDATOR = CallValidator(SPECS)


def check(name: str, allowed: list[str] | None = None, **arguments: Any) -> Any:
    return VALIDATOR.check(ToolCall(name=name, arguments=arguments), allowed)


def test_valid_call_passes_unchanged() -> None:
    result = check("apply_fix", code="E501", line=3)
    assert result.ok
    assert result.call.arguments == {"code": "E501", "line": 3}
    assert result.coercions == ()


def test_unknown_tool_lists_valid_names_and_the_closest_match() -> None:
    result = check("read_fiel", path="a.py")
    assert not result.ok
    assert result.error is not None
    assert result.error.outcome == "error"
    assert "unknown tool 'read_fiel'" in (result.error.error or "")
    assert "Did you mean 'read_file'?" in (result.error.error or "")
    assert "apply_fix, read_file, submit_result" in (result.error.error or "")


def test_unknown_tool_without_close_match_still_lists_names() -> None:
    result = check("zzz")
    assert result.error is not None
    assert "Did you mean" not in (result.error.error or "")
    assert "Valid tools: apply_fix" in (result.error.error or "")


@pytest.mark.parametrize("name", ["functions.read_file", "Read_File", "read-file"])
def test_tool_name_normalization_is_a_recorded_coercion(name: str) -> None:
    result = check(name, path="a.py")
    assert result.ok
    assert result.call.name == "read_file"
    assert result.coercions == (f"tool name {name!r} -> 'read_file'",)


def test_call_outside_the_allowed_set_is_rejected() -> None:
    result = check("read_file", ["apply_fix", "submit_result"], path="a.py")
    assert result.error is not None
    assert "not available this turn" in (result.error.error or "")
    assert "apply_fix, submit_result" in (result.error.error or "")


def test_missing_required_argument_is_named() -> None:
    result = check("apply_fix", code="E501")
    assert result.error is not None
    assert "missing required argument 'line'" in (result.error.error or "")


def test_unexpected_argument_is_named_with_the_expected_ones() -> None:
    result = check("read_file", path="a.py", pth="b.py")
    assert result.error is not None
    assert "unexpected argument 'pth' (expected: limit, path)" in (result.error.error or "")


def test_misspelt_argument_reports_both_problems_and_a_guess() -> None:
    result = check("read_file", pth="a.py")
    assert result.error is not None
    text = result.error.error or ""
    assert "missing required argument 'path'" in text
    assert "unexpected argument 'pth'" in text
    assert "did you mean 'path'?" in text


def test_wrong_type_names_field_and_value() -> None:
    result = check("apply_fix", code="E501", line="twelve")
    assert result.error is not None
    message = result.error.error or ""
    assert "argument 'line' must be integer, got string 'twelve'" in message
    assert result.error.summary.startswith("invalid call to apply_fix")


def test_other_schema_errors_name_the_field() -> None:
    result = check("apply_fix", code="E501", line=0)
    assert result.error is not None
    assert "argument 'line':" in (result.error.error or "")
    assert "minimum" in (result.error.error or "")


def test_a_too_long_value_is_reported_by_its_length_not_echoed() -> None:
    """A run-away string would otherwise be copied into the next prompt, turn after turn."""
    result = check("apply_fix", code="E501", line=1, cases=["ok", "x" * 5000])
    assert result.error is not None
    message = result.error.error or ""
    assert "argument 'cases.1' must have at most 10 characters, got 5000" in message
    assert len(message) < 300


def test_enum_error_lists_options() -> None:
    result = check("apply_fix", code="E999", line=1)
    assert result.error is not None
    assert "argument 'code' must be one of: E501, F401, W291" in (result.error.error or "")


@pytest.mark.parametrize(
    ("arguments", "expected", "note"),
    [
        ({"line": "12"}, {"line": 12}, "line: string -> integer"),
        ({"ratio": "0.5"}, {"ratio": 0.5}, "ratio: string -> number"),
        ({"dry_run": "True"}, {"dry_run": True}, "dry_run: string -> boolean"),
        ({"note": 5}, {"note": "5"}, "note: number -> string"),
        ({"lines": 3}, {"lines": [3]}, "lines: number -> array"),
        ({"lines": ["1", 2]}, {"lines": [1, 2]}, "lines.0: string -> integer"),
        ({"ratio": None}, {}, "ratio: dropped null optional argument"),
        ({"code": "e501"}, {"code": "E501"}, "code: 'e501' -> 'E501'"),
    ],
)
def test_harmless_coercions_are_applied_and_recorded(
    arguments: dict[str, Any], expected: dict[str, Any], note: str
) -> None:
    base = {"code": "E501", "line": 1}
    sent = {**base, **arguments}
    result = VALIDATOR.check(ToolCall(name="apply_fix", arguments=sent))
    assert result.ok, result.error
    assert result.call.arguments == {**base, **expected}
    assert note in result.coercions
    assert sent == {**base, **arguments}, "the model's arguments are not mutated"


def test_several_coercions_in_one_call() -> None:
    result = check("apply_fix", code="E501", line="4", dry_run="false")
    assert result.ok
    assert result.call.arguments == {"code": "E501", "line": 4, "dry_run": False}
    assert len(result.coercions) == 2


@pytest.mark.parametrize(
    "arguments",
    [
        {"code": "E501", "line": True},
        {"code": "E501", "line": "1.5"},
        {"code": "E501", "line": None},
        {"code": "E501", "line": 1, "ratio": "fast"},
        {"code": "E501", "line": 1, "dry_run": "yes"},
    ],
)
def test_meaning_changing_coercions_are_refused(arguments: dict[str, Any]) -> None:
    result = VALIDATOR.check(ToolCall(name="apply_fix", arguments=arguments))
    assert not result.ok


def test_invalid_schema_is_a_runner_error() -> None:
    bad = ToolSpec(name="broken", parameters={"type": "objekt"})
    with pytest.raises(RunnerError) as raised:
        CallValidator([bad])
    assert raised.value.code == "RUN_001"
    assert "broken" in raised.value.message


@given(st.integers(min_value=1, max_value=10**12), st.sampled_from(["", " ", "+"]))
def test_integer_strings_coerce_to_the_same_integer(number: int, prefix: str) -> None:
    result = check("apply_fix", code="F401", line=f"{prefix}{number}")
    assert result.ok
    assert result.call.arguments["line"] == number
