"""Check a parsed call against the tool catalog before anything runs.

A small model misspells tool names, sends ``"3"`` for an integer and forgets required
arguments. Harmless slips are repaired and recorded (so telemetry shows how often the
model needs help); everything else becomes an error result that names the bad field,
which the model reads as the tool's response and can correct on the next turn.
"""

from __future__ import annotations

import copy
import difflib
import functools
import json
import math
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, ValidationError
from jsonschema.protocols import Validator
from jsonschema.validators import validator_for

from remora.errors import RunnerError
from remora.model.base import ToolCall, ToolSpec
from remora.tools.result import ToolResult

_INT_TEXT = re.compile(r"\s*[+-]?\d+\s*\Z")
_NUMBER_TEXT = re.compile(r"\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\s*\Z")
_NAME_PREFIXES = ("functions.", "function.", "tools.", "tool.")
_MAX_PROBLEMS = 3
_MAX_PASSES = 4


@dataclass(frozen=True)
class CallCheck:
    """The verdict on one call: the call to run (name and arguments repaired) or an error."""

    call: ToolCall
    error: ToolResult | None = None
    coercions: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.error is None


class _Delete:
    """Marker: remove this key (an optional argument sent as null)."""


_DELETE = _Delete()


class CallValidator:
    """Validates calls against the catalog's JSON schemas; compiled once per run."""

    def __init__(self, specs: Sequence[ToolSpec]) -> None:
        self._specs = {spec.name: spec for spec in specs}
        self._names = sorted(self._specs)
        self._validators: dict[str, Validator] = {}
        for spec in specs:
            schema = spec.parameters or {"type": "object"}
            try:
                key = json.dumps(schema, sort_keys=True, default=str)
                self._validators[spec.name] = _compiled(key)
            except SchemaError as exc:
                raise RunnerError(
                    "RUN_001",
                    f"the input schema of tool {spec.name!r} is not a valid JSON schema: "
                    f"{exc.message}",
                    "fix the tool's inputs or inputs_override",
                ) from None

    def resolve_name(self, name: str) -> str | None:
        """The catalog name a call means: exact, or unambiguous after normalization."""
        if name in self._specs:
            return name
        normalized = _normalize_name(name)
        matches = [known for known in self._names if _normalize_name(known) == normalized]
        return matches[0] if len(matches) == 1 else None

    def check(self, call: ToolCall, allowed: Collection[str] | None = None) -> CallCheck:
        """Resolve the name, enforce this turn's allowed set, validate and repair arguments."""
        coercions: list[str] = []
        name = self.resolve_name(call.name)
        if name is None:
            return CallCheck(call, _unknown_tool(call.name, self._names))
        if name != call.name:
            coercions.append(f"tool name {call.name!r} -> {name!r}")
            call = call.model_copy(update={"name": name})
        if allowed is not None and name not in allowed:
            permitted = ", ".join(sorted(allowed))
            return CallCheck(
                call,
                ToolResult.failure(
                    f"tool {name!r} is not available this turn; call one of: {permitted}",
                    summary=f"{name} not allowed this turn",
                ),
            )
        validator = self._validators[name]
        arguments, fixed, problem = _validate(validator, call.arguments)
        coercions.extend(fixed)
        if fixed:
            call = call.model_copy(update={"arguments": arguments})
        if problem is not None:
            return CallCheck(
                call,
                ToolResult.failure(
                    f"invalid arguments for {name}: {problem}",
                    summary=f"invalid call to {name}: {problem}",
                ),
                tuple(coercions),
            )
        return CallCheck(call, None, tuple(coercions))


@functools.lru_cache(maxsize=512)
def _compiled(schema_json: str) -> Validator:
    """A checked validator per distinct schema, shared by every run of the process.

    Checking a schema against its metaschema costs milliseconds; agents run the same
    tools for every node, so each schema is checked once.
    """
    schema = json.loads(schema_json)
    cls = validator_for(schema, default=Draft202012Validator)
    cls.check_schema(schema)
    return cls(schema)


def _normalize_name(name: str) -> str:
    lowered = name.strip().lower()
    for prefix in _NAME_PREFIXES:
        if lowered.startswith(prefix):
            lowered = lowered[len(prefix) :]
            break
    return lowered.replace("-", "_").replace(" ", "_")


def _unknown_tool(name: str, names: Sequence[str]) -> ToolResult:
    valid = ", ".join(names)
    close = difflib.get_close_matches(_normalize_name(name), list(names), n=1, cutoff=0.5)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    return ToolResult.failure(
        f"unknown tool {name!r}.{hint} Valid tools: {valid}",
        summary=f"unknown tool {name}",
    )


def _validate(
    validator: Validator, arguments: dict[str, Any]
) -> tuple[dict[str, Any], list[str], str | None]:
    """Validate, repairing harmless type slips; returns (arguments, coercions, problem)."""
    errors = list(validator.iter_errors(arguments))
    if not errors:
        return arguments, [], None
    fixed: list[str] = []
    working = arguments
    root: Any = validator.schema
    for _ in range(_MAX_PASSES):
        changes: list[tuple[list[Any], Any, str]] = []
        for error in errors:
            repair = _repair(error, root)
            if repair is not None:
                changes.append((list(error.absolute_path), *repair))
        if not changes:
            break
        if working is arguments:
            working = copy.deepcopy(arguments)
        applied = False
        for path, value, note in changes:
            if _set_path(working, path, value):
                fixed.append(note)
                applied = True
        if not applied:
            break
        errors = list(validator.iter_errors(working))
        if not errors:
            return working, fixed, None
    problems: list[str] = []
    for error in sorted(errors, key=_error_rank):
        text = _describe(error)
        if text not in problems:
            problems.append(text)
    return working, fixed, "; ".join(problems[:_MAX_PROBLEMS])


def _error_rank(error: ValidationError) -> tuple[int, int]:
    order = {"required": 0, "additionalProperties": 1, "type": 2, "enum": 3}
    return (order.get(str(error.validator), 4), len(error.absolute_path))


def _field(error: ValidationError) -> str:
    return ".".join(str(part) for part in error.absolute_path)


def _repair(error: ValidationError, root: Mapping[str, Any]) -> tuple[Any, str] | None:
    """A harmless replacement for the failing value, with a note; ``None`` if there is none."""
    path = list(error.absolute_path)
    if not path:
        return None
    field = _field(error)
    value = error.instance
    expected: Any = error.validator_value
    if error.validator == "type":
        types = [expected] if isinstance(expected, str) else list(expected)
        if value is None and isinstance(path[-1], str) and not _is_required(root, path):
            return _DELETE, f"{field}: dropped null optional argument"
        for kind in types:
            converted = _convert(value, kind)
            if converted is not None:
                return converted[0], f"{field}: {_kind(value)} -> {kind}"
        return None
    if error.validator == "enum" and isinstance(value, str):
        options = [item for item in expected if isinstance(item, str)]
        folded = [item for item in options if item.strip().lower() == value.strip().lower()]
        if len(folded) == 1:
            return folded[0], f"{field}: {value!r} -> {folded[0]!r}"
    return None


def _convert(value: Any, kind: str) -> tuple[Any] | None:
    """``(converted,)`` when ``value`` becomes ``kind`` without losing meaning."""
    if isinstance(value, bool):
        return None
    if kind == "integer":
        if isinstance(value, str) and _INT_TEXT.match(value):
            return (int(value),)
    elif kind == "number":
        if isinstance(value, str) and _NUMBER_TEXT.match(value):
            number = float(value)
            if math.isfinite(number):
                return (int(number) if _INT_TEXT.match(value) else number,)
    elif kind == "boolean":
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return (value.strip().lower() == "true",)
    elif kind == "string":
        if isinstance(value, int | float):
            return (str(value),)
    elif kind == "array" and isinstance(value, str | int | float | dict):
        return ([value],)
    return None


def _kind(value: Any) -> str:
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    return "null" if value is None else type(value).__name__


def _is_required(root: Mapping[str, Any], path: Sequence[Any]) -> bool:
    """Whether the property at ``path`` is listed in its parent object's ``required``."""
    schema: Any = root
    for part in path[:-1]:
        if not isinstance(schema, Mapping):
            return True
        if isinstance(part, int):
            schema = schema.get("items", {})
        else:
            schema = schema.get("properties", {}).get(part, {})
    if not isinstance(schema, Mapping):
        return True
    return path[-1] in schema.get("required", ())


def _set_path(target: Any, path: Sequence[Any], value: Any) -> bool:
    node = target
    for part in path[:-1]:
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            return False
    last = path[-1]
    if isinstance(value, _Delete):
        if isinstance(node, dict) and last in node:
            del node[last]
            return True
        return False
    try:
        node[last] = value
    except (KeyError, IndexError, TypeError):
        return False
    return True


def _describe(error: ValidationError) -> str:
    """One line naming the failing field, written for the model to act on."""
    field = _field(error)
    prefix = f"{field}." if field else ""
    instance = error.instance
    expected: Any = error.validator_value
    schema: Any = error.schema
    if error.validator == "required" and isinstance(instance, dict):
        missing = [name for name in expected if name not in instance]
        if missing:
            return f"missing required argument '{prefix}{missing[0]}'"
    if error.validator == "additionalProperties" and isinstance(instance, dict):
        known = sorted(schema.get("properties", {}))
        extra = sorted(set(instance) - set(known))
        if extra:
            expected = ", ".join(known) if known else "no arguments"
            close = difflib.get_close_matches(extra[0], known, n=1)
            guess = f"; did you mean '{prefix}{close[0]}'?" if close else ""
            return f"unexpected argument '{prefix}{extra[0]}' (expected: {expected}){guess}"
    if not field:
        return error.message
    if error.validator == "type":
        wanted = expected if isinstance(expected, str) else " or ".join(expected)
        shown = repr(instance)
        if len(shown) > 60:
            shown = shown[:57] + "..."
        return f"argument '{field}' must be {wanted}, got {_kind(instance)} {shown}"
    if error.validator == "enum":
        options = ", ".join(str(option) for option in expected)
        return f"argument '{field}' must be one of: {options}"
    if error.validator in ("maxLength", "minLength") and isinstance(instance, str):
        size = "at most" if error.validator == "maxLength" else "at least"
        return f"argument '{field}' must have {size} {expected} characters, got {len(instance)}"
    message = error.message
    return f"argument '{field}': {message if len(message) <= 160 else message[:157] + '...'}"
