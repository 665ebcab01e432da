"""Recover tool calls from whatever a small model wrote.

Small models do not always use the format they were prompted with: the same model
answers with FunctionGemma tags one turn and with a JSON object wrapped in prose the
next. This module tries every format we have seen, in a fixed order, and records which
path parsed each call so telemetry shows how often the model strays. It is pure: text
in, calls out. Truncated or garbage output is a clean miss, never an exception.

Order: native ``tool_calls`` from the backend; FunctionGemma tags; ``<tool_call>``
tags; fenced code blocks; bare JSON (``{"name", "arguments"|"parameters"}``, lists of
those, ``{"tool_calls": [...]}``) anywhere in the text; untagged ``call:NAME{...}``;
a Python-style call expression (``read_file(path="a.py")``).
"""

from __future__ import annotations

import ast
import json
import math
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from remora import pyast
from remora.model.base import ModelResponse, ToolCall
from remora.model.functiongemma import (
    END_CALL,
    END_RESPONSE,
    ESCAPE,
    START_CALL,
    START_RESPONSE,
    neutralize,
)

PATH_NATIVE = "native"
PATH_FUNCTIONGEMMA = "functiongemma"
PATH_TOOL_CALL_TAG = "tool_call_tag"
PATH_FENCED = "fenced"
PATH_JSON = "json"
PATH_JSON_TOOL_CALLS = "json_tool_calls"
PATH_PYTHONIC = "pythonic"

_MAX_DEPTH = 32
_NAME_RE = re.compile(r"[A-Za-z_][\w.\-]*")
_NAME_FULL_RE = re.compile(r"[A-Za-z_][\w.\-]*\Z")
_BARE_KEY_RE = re.compile(r"[^\s:{}\[\],<>\"']+")
_INT_RE = re.compile(r"-?\d+\Z")
_FLOAT_RE = re.compile(r"-?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?\Z")
_BARE_CALL_RE = re.compile(r"(?<![\w:])call:\s*([A-Za-z_][\w.\-]*)\s*\{")
_TAG_RE = re.compile(
    r"<(tool_call|function_call|functioncall)>\s*(.*?)\s*(?:</\1>|(?=<\1>)|\Z)", re.DOTALL
)
_FENCE_RE = re.compile(r"```[ \t]*[\w+\-]*[ \t]*\r?\n?(.*?)(?:```|\Z)", re.DOTALL)
_RESPONSE_BLOCK_RE = re.compile(
    re.escape(START_RESPONSE) + r".*?(?:" + re.escape(END_RESPONSE) + r"|\Z)", re.DOTALL
)
_QUOTED_CALL_RE = re.compile(
    re.escape(neutralize(START_CALL))
    + r".*?(?:"
    + re.escape(neutralize(END_CALL))
    + r"|(?="
    + re.escape(START_CALL)
    + r")|\Z)",
    re.DOTALL,
)
"""A call the renderer quoted from foreign text (its tags neutralized): text the model
echoed from a tool result or a file, never a call of its own."""
_ATTEMPT_RE = re.compile(
    r"call:\s*[A-Za-z_]|<start_function_call>|<tool_call>|\btool_calls?\b|function_call"
    r"|[\"']name[\"']\s*:|[\"'](?:arguments|parameters)[\"']\s*:"
    r"|\b[A-Za-z_]\w*\(\s*[A-Za-z_]\w*\s*="
)
_ARG_KEYS = ("arguments", "parameters", "args", "params", "input", "tool_input")
_NAME_KEYS = ("name", "tool", "tool_name", "function")
_CALL_ONLY_KEYS = frozenset({"name", "tool", "tool_name", "function", "type", "id"})


class FunctionGemmaSyntaxError(ValueError):
    """FunctionGemma argument text that does not follow the format."""


@dataclass(frozen=True)
class ParseResult:
    """The calls recovered from one response and why others were not.

    ``textual_pattern`` is true when the text looked like an attempted call that did
    not (fully) parse: the telemetry signal for "the model tried, the format failed".
    """

    calls: tuple[ToolCall, ...] = ()
    textual_pattern: bool = False
    problems: tuple[str, ...] = ()

    @property
    def paths(self) -> list[str]:
        return [call.parse_path or PATH_NATIVE for call in self.calls]


@dataclass
class _Found:
    calls: list[ToolCall]
    problems: list[str]


def parse_response(response: ModelResponse) -> ParseResult:
    """Calls from a backend response: its native calls if any, else parsed from its text."""
    if response.tool_calls:
        calls = tuple(
            call if call.parse_path else call.model_copy(update={"parse_path": PATH_NATIVE})
            for call in response.tool_calls
        )
        return ParseResult(calls=calls)
    result = parse_text(response.raw_text or response.content)
    if not result.calls and response.finish_reason == "length" and result.textual_pattern:
        return ParseResult(
            textual_pattern=True,
            problems=(*result.problems, "the output was cut off at the token limit"),
        )
    return result


def parse_text(text: str) -> ParseResult:
    """Calls written in the text of a response, trying every known format in order."""
    if not text or not text.strip():
        return ParseResult()
    cleaned = _QUOTED_CALL_RE.sub("", _RESPONSE_BLOCK_RE.sub("", text))
    problems: list[str] = []
    for finder in (_find_functiongemma_tagged, _find_tagged, _find_fenced, _find_bare):
        found = finder(cleaned)
        problems.extend(found.problems)
        if found.calls:
            return ParseResult(
                calls=tuple(found.calls),
                textual_pattern=bool(found.problems),
                problems=tuple(found.problems),
            )
    attempted = bool(problems) or _ATTEMPT_RE.search(cleaned) is not None
    return ParseResult(textual_pattern=attempted, problems=tuple(dict.fromkeys(problems)))


def parse_functiongemma_calls(text: str) -> list[ToolCall]:
    """Every well-formed FunctionGemma call in ``text``; malformed ones are skipped.

    Accepts ``<start_function_call>call:NAME{...}<end_function_call>`` blocks, one
    after the other for parallel calls, or untagged ``call:NAME{...}`` when the
    control tokens were stripped by detokenization. A call between neutralized tags is
    text quoted from a tool result or a file, not a call.
    """
    text = _QUOTED_CALL_RE.sub("", text)
    found = _find_functiongemma_tagged(text)
    if found.calls or found.problems:
        return found.calls
    return _find_functiongemma_bare(text).calls


def parse_functiongemma_arguments(text: str) -> dict[str, Any]:
    """The ``{key:value,...}`` object of a FunctionGemma call or response.

    Strings are wrapped in ``<escape>`` (double-quoted JSON strings are accepted too),
    numbers, ``true``/``false`` and ``null`` are bare, objects and lists nest. Raises
    ``FunctionGemmaSyntaxError`` on malformed or trailing text.
    """
    reader = _FGReader(text, 0)
    reader.skip_ws()
    value = reader.parse_object(0)
    reader.skip_ws()
    if reader.pos != len(text):
        raise FunctionGemmaSyntaxError(f"unexpected text after the object at {reader.pos}")
    return value


class _FGReader:
    """A recursive-descent reader for FunctionGemma's argument syntax."""

    def __init__(self, text: str, pos: int) -> None:
        self.text = text
        self.pos = pos

    def skip_ws(self) -> None:
        text, pos, end = self.text, self.pos, len(self.text)
        while pos < end and text[pos].isspace():
            pos += 1
        self.pos = pos

    def _fail(self, reason: str) -> FunctionGemmaSyntaxError:
        snippet = self.text[self.pos : self.pos + 24]
        where = f" near {snippet!r}" if snippet else " at the end of the output"
        return FunctionGemmaSyntaxError(reason + where)

    def _expect(self, char: str) -> None:
        self.skip_ws()
        if not self.text.startswith(char, self.pos):
            raise self._fail(f"expected {char!r}")
        self.pos += len(char)

    def _escaped(self) -> str:
        start = self.pos + len(ESCAPE)
        end = self.text.find(ESCAPE, start)
        if end < 0:
            raise self._fail("unterminated <escape> string")
        self.pos = end + len(ESCAPE)
        return self.text[start:end]

    def _quoted(self) -> str:
        try:
            value, end = json.JSONDecoder().raw_decode(self.text, self.pos)
        except json.JSONDecodeError:
            raise self._fail("unterminated quoted string") from None
        if not isinstance(value, str):
            raise self._fail("expected a string")
        self.pos = end
        return value

    def parse_key(self) -> str:
        self.skip_ws()
        if self.text.startswith(ESCAPE, self.pos):
            return self._escaped()
        if self.text.startswith('"', self.pos):
            return self._quoted()
        match = _BARE_KEY_RE.match(self.text, self.pos)
        if match is None:
            raise self._fail("expected a key")
        self.pos = match.end()
        return match.group()

    def parse_value(self, depth: int) -> Any:
        if depth > _MAX_DEPTH:
            raise self._fail("nesting too deep")
        self.skip_ws()
        text = self.text
        if text.startswith(ESCAPE, self.pos):
            return self._escaped()
        if self.pos >= len(text):
            raise self._fail("expected a value")
        char = text[self.pos]
        if char == "{":
            return self.parse_object(depth + 1)
        if char == "[":
            return self._parse_list(depth + 1)
        if char == '"':
            return self._quoted()
        return self._scalar()

    def _scalar(self) -> Any:
        start = self.pos
        end = start
        text = self.text
        while end < len(text) and text[end] not in ",}]<\n":
            end += 1
        token = text[start:end].strip()
        if not token:
            raise self._fail("expected a value")
        self.pos = end
        return _scalar_value(token)

    def parse_object(self, depth: int) -> dict[str, Any]:
        result: dict[str, Any] = {}

        def entry() -> None:
            key = self.parse_key()
            self._expect(":")
            result[key] = self.parse_value(depth)

        self._items("{", "}", entry)
        return result

    def _parse_list(self, depth: int) -> list[Any]:
        items: list[Any] = []
        self._items("[", "]", lambda: items.append(self.parse_value(depth)))
        return items

    def _items(self, opening: str, closing: str, read_item: Callable[[], None]) -> None:
        """``opening item, item, ... closing``; a trailing comma is allowed."""
        self._expect(opening)
        while not self._closed_by(closing):
            read_item()
            self.skip_ws()
            if self.text.startswith(",", self.pos):
                self.pos += 1
            elif not self.text.startswith(closing, self.pos):
                raise self._fail(f"expected ',' or {closing!r}")

    def _closed_by(self, closing: str) -> bool:
        self.skip_ws()
        if self.text.startswith(closing, self.pos):
            self.pos += 1
            return True
        return False


def _scalar_value(token: str) -> Any:
    """A bare FunctionGemma scalar: number, boolean, null, or (leniently) a bare word."""
    lowered = token.lower()
    if lowered == "true":
        return True
    if lowered == "false":
        return False
    if lowered in ("null", "none"):
        return None
    if _INT_RE.match(token):
        return int(token)
    if _FLOAT_RE.match(token):
        number = float(token)
        if math.isfinite(number):
            return number
    return token


def _functiongemma_call(text: str, pos: int) -> tuple[ToolCall, int]:
    """Parse ``call:NAME{...}`` (``call:`` optional) starting at ``pos``."""
    reader = _FGReader(text, pos)
    reader.skip_ws()
    if text.startswith("call:", reader.pos):
        reader.pos += len("call:")
        reader.skip_ws()
    match = _NAME_RE.match(text, reader.pos)
    if match is None:
        raise reader._fail("expected a function name after call:")
    name = match.group()
    reader.pos = match.end()
    reader.skip_ws()
    if text.startswith(END_CALL, reader.pos):
        arguments: dict[str, Any] = {}
    elif reader.pos >= len(text):
        raise reader._fail("truncated call")
    else:
        arguments = reader.parse_object(0)
    call = ToolCall(name=name, arguments=arguments, parse_path=PATH_FUNCTIONGEMMA)
    return call, reader.pos


def _find_functiongemma_tagged(text: str) -> _Found:
    found = _Found([], [])
    start = text.find(START_CALL)
    while start >= 0:
        body_start = start + len(START_CALL)
        following = text.find(START_CALL, body_start)
        segment_end = following if following >= 0 else len(text)
        stripped = text[body_start:segment_end].lstrip()
        try:
            if stripped.startswith(("{", "[")):
                attempt = _calls_from_text_json(text[body_start:segment_end])
                found.problems.extend(attempt.problems)
                found.calls.extend(
                    call.model_copy(update={"parse_path": PATH_FUNCTIONGEMMA})
                    for call in attempt.calls
                )
            else:
                call, _ = _functiongemma_call(text[:segment_end], body_start)
                found.calls.append(call)
        except FunctionGemmaSyntaxError as exc:
            found.problems.append(f"malformed function call: {exc}")
        start = following
    return found


def _find_functiongemma_bare(text: str) -> _Found:
    found = _Found([], [])
    pos = 0
    while True:
        match = _BARE_CALL_RE.search(text, pos)
        if match is None:
            return found
        try:
            call, end = _functiongemma_call(text, match.start())
        except FunctionGemmaSyntaxError as exc:
            found.problems.append(f"malformed function call: {exc}")
            end = match.end()
        else:
            found.calls.append(call)
        pos = end


def _find_tagged(text: str) -> _Found:
    found = _Found([], [])
    for match in _TAG_RE.finditer(text):
        body = match.group(2)
        attempt = _calls_from_text_json(body)
        if not attempt.calls and not attempt.problems:
            attempt = _find_functiongemma_bare(body)
        if not attempt.calls and not attempt.problems:
            attempt = _calls_from_pythonic(body)
        if not attempt.calls and not attempt.problems:
            attempt.problems.append(f"<{match.group(1)}> block without a readable call")
        found.problems.extend(attempt.problems)
        found.calls.extend(
            call.model_copy(update={"parse_path": PATH_TOOL_CALL_TAG}) for call in attempt.calls
        )
    return found


def _find_fenced(text: str) -> _Found:
    found = _Found([], [])
    if "```" not in text:
        return found
    for match in _FENCE_RE.finditer(text):
        attempt = _find_bare(match.group(1))
        found.problems.extend(attempt.problems)
        found.calls.extend(
            call.model_copy(update={"parse_path": PATH_FENCED}) for call in attempt.calls
        )
    return found


def _find_bare(text: str) -> _Found:
    attempt = _calls_from_text_json(text)
    if attempt.calls:
        return attempt
    fg = _find_functiongemma_bare(text)
    if fg.calls:
        return _Found(fg.calls, [*attempt.problems, *fg.problems])
    pythonic = _calls_from_pythonic(text)
    return _Found(pythonic.calls, [*attempt.problems, *fg.problems, *pythonic.problems])


def _calls_from_text_json(text: str) -> _Found:
    """Every JSON (or Python-literal) object or list in ``text`` that describes calls."""
    found = _Found([], [])
    decoder = json.JSONDecoder()
    pos = 0
    length = len(text)
    while pos < length:
        brace = _next_open(text, pos)
        if brace < 0:
            break
        value, end = _decode_at(decoder, text, brace)
        if end < 0:
            pos = brace + 1
            continue
        attempt = _calls_from_json(value)
        if attempt is None:
            pos = brace + 1 if isinstance(value, list) else end
            continue
        found.calls.extend(attempt.calls)
        found.problems.extend(attempt.problems)
        pos = end
    return found


def _next_open(text: str, pos: int) -> int:
    brace = text.find("{", pos)
    bracket = text.find("[", pos)
    if brace < 0:
        return bracket
    if bracket < 0:
        return brace
    return min(brace, bracket)


def _decode_at(decoder: json.JSONDecoder, text: str, pos: int) -> tuple[Any, int]:
    """Decode one JSON value at ``pos``, falling back to a Python literal; ``-1`` on failure."""
    try:
        return decoder.raw_decode(text, pos)
    except json.JSONDecodeError:
        pass
    end = _matching_close(text, pos)
    if end < 0:
        return None, -1
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.literal_eval(text[pos:end]), end
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None, -1


def _matching_close(text: str, pos: int) -> int:
    """Index after the bracket closing the one at ``pos``, honouring quotes; -1 if none."""
    depth = 0
    quote = ""
    index = pos
    length = len(text)
    while index < length:
        char = text[index]
        if quote:
            if char == "\\":
                index += 1
            elif char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 0:
                return index + 1
        index += 1
    return -1


def _calls_from_json(value: Any) -> _Found | None:
    """Interpret a decoded JSON value as calls; ``None`` when it does not describe any."""
    if isinstance(value, list):
        if not value or not all(isinstance(item, dict) for item in value):
            return None
        found = _Found([], [])
        for item in value:
            attempt = _single_call(item, PATH_JSON)
            if attempt is None:
                return None
            found.calls.extend(attempt.calls)
            found.problems.extend(attempt.problems)
        return found
    if not isinstance(value, dict):
        return None
    listed = value.get("tool_calls")
    if isinstance(listed, list) and listed:
        found = _Found([], [])
        for item in listed:
            attempt = _single_call(item, PATH_JSON_TOOL_CALLS) if isinstance(item, dict) else None
            if attempt is None:
                found.problems.append("an entry of tool_calls is not a call")
                continue
            found.calls.extend(attempt.calls)
            found.problems.extend(attempt.problems)
        return found
    for wrapper in ("function_call", "tool_call"):
        inner = value.get(wrapper)
        if isinstance(inner, dict) and len(value) == 1:
            return _single_call(inner, PATH_JSON)
    return _single_call(value, PATH_JSON)


def _single_call(item: dict[str, Any], path: str) -> _Found | None:
    raw_id = item.get("id")
    call_id = raw_id if isinstance(raw_id, str) else ""
    function = item.get("function")
    if isinstance(function, dict):
        item = function
    name: Any = None
    for key in _NAME_KEYS:
        if isinstance(item.get(key), str):
            name = item[key]
            break
    if not isinstance(name, str) or not _NAME_FULL_RE.match(name):
        return None
    arg_key = next((key for key in _ARG_KEYS if key in item), None)
    if arg_key is None:
        if not set(item) <= _CALL_ONLY_KEYS:
            return None
        raw: Any = {}
    else:
        raw = item[arg_key]
    if raw is None:
        raw = {}
    if isinstance(raw, str):
        if not raw.strip():
            raw = {}
        else:
            try:
                raw = json.loads(raw)
            except json.JSONDecodeError:
                return _Found([], [f"the arguments of {name} are not valid JSON"])
    if not isinstance(raw, dict):
        return _Found([], [f"the arguments of {name} must be an object"])
    call = ToolCall(id=call_id, name=name, arguments=raw, parse_path=path)
    return _Found([call], [])


def _calls_from_pythonic(text: str) -> _Found:
    """``name(key=value, ...)`` or ``[a(...), b(...)]`` when that is the whole text."""
    found = _Found([], [])
    source = text.strip()
    if "(" not in source or len(source) > 4000:
        return found
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = pyast.parse(source, mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return found
    nodes = tree.body.elts if isinstance(tree.body, ast.List | ast.Tuple) else [tree.body]
    calls: list[ToolCall] = []
    for node in nodes:
        call = _pythonic_call(node)
        if call is None:
            return found
        calls.append(call)
    found.calls.extend(calls)
    return found


def _pythonic_call(node: ast.expr) -> ToolCall | None:
    if not isinstance(node, ast.Call) or node.args:
        return None
    func = node.func
    if isinstance(func, ast.Name):
        name = func.id
    elif isinstance(func, ast.Attribute):
        name = func.attr
    else:
        return None
    arguments: dict[str, Any] = {}
    for keyword in node.keywords:
        if keyword.arg is None:
            return None
        try:
            arguments[keyword.arg] = ast.literal_eval(keyword.value)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            name_value = keyword.value
            if isinstance(name_value, ast.Name) and name_value.id in ("true", "false", "null"):
                arguments[keyword.arg] = {"true": True, "false": False, "null": None}[name_value.id]
                continue
            return None
    return ToolCall(name=name, arguments=arguments, parse_path=PATH_PYTHONIC)
