"""Render conversations in FunctionGemma's prompt format.

The base Gemma 3 GGUF ships no chat template, so Remora renders prompts itself. The
output follows Google's published FunctionGemma chat template byte for byte: the
first system message becomes the ``developer`` turn followed by one
``<start_function_declaration>`` block per tool; calls and their responses stay inside
one ``model`` turn; after a function response there is no generation prompt because
the model continues the same turn. Strings are wrapped in ``<escape>``, numbers and
booleans are bare, schema types are upper-case, keys are sorted case-insensitively
(Jinja's ``dictsort``).

Two template quirks are reproduced on purpose, because the model was trained on them:
property names ``description``, ``type``, ``properties``, ``required`` and ``nullable``
are left out of declarations, and ``enum`` is only declared for STRING properties.

Text the renderer did not write itself (messages, tool results, descriptions, keys and
values) is passed through ``neutralize`` first: every control tag of the format or of
Gemma's vocabulary in it (``<end_of_turn>``, ``<start_function_call>``, ``<escape>``,
``<bos>``...) gets a zero-width space after its ``<``. The text reads the same, but the
backends tokenize prompts with special tokens parsed, so an intact tag in a file or an
observed value would otherwise become a real control token: the end of a turn, a call
the model never made, or the end of a string.

Parsing model output back into calls is the runner's job (``remora.runner.parsing``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from remora.model.base import Message, ModelRequest, ToolCall, ToolSpec

BOS = "<bos>"
START_OF_TURN = "<start_of_turn>"
END_OF_TURN = "<end_of_turn>"
START_DECLARATION = "<start_function_declaration>"
END_DECLARATION = "<end_function_declaration>"
START_CALL = "<start_function_call>"
END_CALL = "<end_function_call>"
START_RESPONSE = "<start_function_response>"
END_RESPONSE = "<end_function_response>"
ESCAPE = "<escape>"

TRIGGER_SENTENCE = "You are a model that can do function calling with the following functions"
"""The developer-turn sentence that switches FunctionGemma into tool-calling mode."""

STOP_SEQUENCES: tuple[str, ...] = (START_RESPONSE, END_OF_TURN)
"""Where generation must stop: the model would otherwise invent the tool's response."""

TAG_BREAK = "\u200b"
"""What ``neutralize`` inserts after the ``<`` of a control tag in foreign text."""

_CONTROL_TAG = re.compile(
    r"<(?=(?:start_\w+|end_\w+|escape|bos|eos|pad|unk|mask|unused\d+|image_soft_token|/s)>)"
)
"""The ``<`` of every tag the tokenizer could read as a control token: the format's own
(each starts ``<start_`` or ``<end_``, or is ``<escape>``) and Gemma 3's control tokens."""


def neutralize(text: str) -> str:
    """``text`` with every control tag broken by a zero-width space after its ``<``.

    Readable as before, but no tokenizer can form the control token from it any more;
    idempotent, so text that passes through twice is not changed again.
    """
    return _CONTROL_TAG.sub("<" + TAG_BREAK, text)


def _text(value: Any) -> str:
    """Foreign text (a value, key, name or description) as it may enter a prompt."""
    return neutralize(str(value))


_STANDARD_KEYS = frozenset({"description", "type", "properties", "required", "nullable"})
_CALL_BLOCK = re.compile(re.escape(START_CALL) + r".*?" + re.escape(END_CALL), re.DOTALL)


def _dictsort(mapping: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """Jinja's ``dictsort``: by key, case-insensitively, stable."""
    return sorted(mapping.items(), key=lambda item: str(item[0]).lower())


def _scalar(value: Any) -> str:
    """How Jinja prints a value that is neither string, bool, mapping nor sequence."""
    return str(value)


def format_argument(value: Any, *, escape_keys: bool = True) -> str:
    """One value in FunctionGemma syntax (the template's ``format_argument`` macro)."""
    if isinstance(value, str):
        return ESCAPE + neutralize(value) + ESCAPE
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Mapping):
        parts = []
        for key, item in _dictsort(value):
            name = ESCAPE + _text(key) + ESCAPE if escape_keys else _text(key)
            parts.append(name + ":" + format_argument(item, escape_keys=escape_keys))
        return "{" + ",".join(parts) + "}"
    if isinstance(value, Sequence):
        return (
            "[" + ",".join(format_argument(item, escape_keys=escape_keys) for item in value) + "]"
        )
    return _text(_scalar(value))


class _Missing:
    """Jinja's undefined: prints as nothing and is falsy."""

    def __str__(self) -> str:
        return ""

    def __bool__(self) -> bool:
        return False


_MISSING = _Missing()


def _lookup(schema: Any, key: str) -> Any:
    """``schema[key]`` the way Jinja reads it: missing or non-mapping is undefined."""
    if isinstance(schema, Mapping) and key in schema:
        return schema[key]
    return _MISSING


def _upper(value: Any) -> str:
    """Jinja's ``upper`` filter: prints lists and None the way Python does."""
    return _text(str(value).upper())


def _required_list(items: Any) -> str:
    return ",".join(ESCAPE + _text(item) + ESCAPE for item in items or [])


def _format_items(items: Mapping[str, Any]) -> str:
    parts = []
    for key, value in _dictsort(items):
        if value is None:
            continue
        if key == "properties":
            inner = format_parameters(value) if isinstance(value, Mapping) else ""
            parts.append("properties:{" + inner + "}")
        elif key == "required":
            parts.append("required:[" + _required_list(value) + "]")
        elif key == "type":
            if isinstance(value, str):
                parts.append("type:" + format_argument(value.upper()))
            else:
                parts.append("type:" + format_argument([str(v).upper() for v in value]))
        else:
            parts.append(_text(key) + ":" + format_argument(value))
    return ",".join(parts)


def format_parameters(properties: Mapping[str, Any]) -> str:
    """The ``properties`` block of a declaration (the template's ``format_parameters``)."""
    parts = []
    for key, value in _dictsort(properties):
        if key in _STANDARD_KEYS:
            continue
        description = _text(_lookup(value, "description"))
        text = _text(key) + ":{description:" + ESCAPE + description + ESCAPE
        kind = _upper(_lookup(value, "type"))
        if kind == "STRING":
            enum = _lookup(value, "enum")
            if enum:
                text += ",enum:" + format_argument(enum)
        elif kind == "OBJECT":
            nested = _lookup(value, "properties")
            text += ",properties:{" + format_parameters(
                nested if isinstance(nested, Mapping) else value
            )
            text += "}"
            required = _lookup(value, "required")
            if required:
                text += ",required:[" + _required_list(required) + "]"
        elif kind == "ARRAY":
            items = _lookup(value, "items")
            if isinstance(items, Mapping) and items:
                text += ",items:{" + _format_items(items) + "}"
        text += ",type:" + ESCAPE + kind + ESCAPE + "}"
        parts.append(text)
    return ",".join(parts)


def format_declaration(tool: ToolSpec) -> str:
    """``declaration:NAME{description:...,parameters:{...}}`` for one tool."""
    text = (
        "declaration:"
        + _text(tool.name)
        + "{description:"
        + ESCAPE
        + neutralize(tool.description)
        + ESCAPE
    )
    params = tool.parameters
    if params:
        text += ",parameters:{"
        properties = _lookup(params, "properties")
        if properties:
            text += "properties:{" + format_parameters(properties) + "},"
        required = _lookup(params, "required")
        if required:
            text += "required:[" + _required_list(required) + "],"
        kind = _lookup(params, "type")
        if kind:
            text += "type:" + ESCAPE + _upper(kind) + ESCAPE + "}"
    return (text + "}").strip()


def render_declaration(tool: ToolSpec) -> str:
    """One tool as the developer turn declares it."""
    return START_DECLARATION + format_declaration(tool) + END_DECLARATION


def render_call_body(name: str, arguments: Mapping[str, Any]) -> str:
    """``call:NAME{k:v,...}`` without the surrounding tags."""
    parts = [
        _text(key) + ":" + format_argument(value, escape_keys=False)
        for key, value in _dictsort(arguments)
    ]
    return "call:" + _text(name) + "{" + ",".join(parts) + "}"


def render_call(call: ToolCall) -> str:
    """A tool call exactly as the model is trained to write it."""
    return START_CALL + render_call_body(call.name, call.arguments) + END_CALL


def render_response(name: str, response: Any) -> str:
    """A tool's response block; a mapping is spread into keys, anything else is ``value``."""
    if isinstance(response, Mapping):
        parts = [
            _text(key) + ":" + format_argument(value, escape_keys=False)
            for key, value in _dictsort(response)
        ]
        body = "{" + ",".join(parts) + "}"
    else:
        body = "{value:" + format_argument(response, escape_keys=False) + "}"
    return START_RESPONSE + "response:" + _text(name.strip()) + body + END_RESPONSE


def _tool_payload(message: Message, fallback_name: str) -> tuple[str, Any]:
    """The (name, response) a ``tool`` message carries.

    The runner sends JSON text: either ``{"name", "response"}`` (what the model should
    see) or a bare result object. Text that is not JSON is passed through as a string.
    """
    try:
        data: Any = json.loads(message.content)
    except ValueError:
        data = message.content
    name = message.name or fallback_name
    if isinstance(data, dict) and "name" in data and "response" in data:
        return str(data["name"]), data["response"]
    return name, data


def _answered_call_name(messages: Sequence[Message], index: int) -> str:
    """Name of the call a ``tool`` message answers: by id, else by position."""
    tool_message = messages[index]
    for j in range(index - 1, -1, -1):
        candidate = messages[j]
        if candidate.role != "assistant" or not candidate.tool_calls:
            continue
        if tool_message.tool_call_id:
            for call in candidate.tool_calls:
                if call.id == tool_message.tool_call_id:
                    return call.name
        position = sum(1 for m in messages[j + 1 : index] if m.role == "tool")
        if position < len(candidate.tool_calls):
            return candidate.tool_calls[position].name
        break
    return ""


def _system_text(content: str, has_tools: bool, ensure_trigger: bool) -> str:
    text = neutralize(content.strip())
    if has_tools and ensure_trigger and TRIGGER_SENTENCE not in text:
        text = TRIGGER_SENTENCE if not text else text + "\n" + TRIGGER_SENTENCE
    return text


def render_prompt(
    messages: Sequence[Message],
    tools: Sequence[ToolSpec] = (),
    *,
    add_generation_prompt: bool = True,
    bos: bool = True,
    ensure_trigger: bool = False,
) -> str:
    """The whole conversation as FunctionGemma text, ready for completion.

    ``ensure_trigger`` appends the trigger sentence to the developer turn when tools are
    declared and the system prompt lacks it (the published template never adds it; the
    backend does, because without it the model does not call tools). Assistant content
    that repeats its own call markup is stripped when ``tool_calls`` carries the calls,
    so a runner that stores raw text does not render each call twice. A user message
    after tool responses closes the model turn first (the template has no rule for it).
    """
    out = [BOS] if bos else []
    loop: Sequence[Message] = messages
    first_is_system = bool(messages) and messages[0].role == "system"
    if tools or first_is_system:
        out.append(START_OF_TURN + "developer\n")
        if first_is_system:
            out.append(_system_text(messages[0].content, bool(tools), ensure_trigger))
            loop = messages[1:]
        elif ensure_trigger:
            out.append(TRIGGER_SENTENCE)
        out.extend(render_declaration(tool) for tool in tools)
        out.append(END_OF_TURN + "\n")

    previous: str | None = None
    for index, message in enumerate(loop):
        if message.role == "tool":
            name, response = _tool_payload(message, _answered_call_name(loop, index))
            out.append(render_response(name, response))
            previous = "tool_response"
            continue
        role = "model" if message.role == "assistant" else message.role
        if previous == "tool_response" and role != "model":
            # The published template only continues the model turn after responses; a
            # user message there (the runner's guard notes) must be a turn of its own,
            # or the model would read it as its own words.
            out.append(END_OF_TURN + "\n")
            previous = None
        if previous != "tool_response":
            out.append(START_OF_TURN + role + "\n")
        content = message.content
        if message.tool_calls:
            content = _CALL_BLOCK.sub("", content)
        out.append(neutralize(content.strip()))
        previous = "content"
        if message.tool_calls:
            out.extend(render_call(call) for call in message.tool_calls)
            if index == len(loop) - 1:
                out.append(START_RESPONSE)
            previous = "tool_call"
        if previous not in ("tool_call", "tool_response"):
            out.append(END_OF_TURN + "\n")

    if add_generation_prompt and previous != "tool_response":
        out.append(START_OF_TURN + "model\n")
    return "".join(out)


def render_request(request: ModelRequest) -> str:
    """The exact prompt a backend completes for ``request`` (the trigger sentence ensured
    when tools are declared); training data is rendered by this very function."""
    return render_prompt(request.messages, request.tools, ensure_trigger=bool(request.tools))


def render_completion(call: ToolCall) -> str:
    """What the model writes for ``call``: the call, then the tag the backend stops at."""
    return render_call(call) + START_RESPONSE


_PIECE_SEAM = re.compile(f"(?={re.escape(START_CALL)})|(?<={re.escape(START_RESPONSE)})")


def prompt_pieces(text: str) -> list[str]:
    """``text`` cut where a model's call starts and where it stops, to be tokenized apart.

    The model writes each call from a token boundary, so a prompt whose earlier calls are
    tokenized as one text (which merges the ``>`` before a call with its ``<``) is not
    what the model saw while writing them. Tokenized piece by piece, a prompt's tokens are
    the previous prompt's, then the call's, then the new text's: what a backend caches,
    and what training packs into one sequence per episode.
    """
    return [piece for piece in _PIECE_SEAM.split(text) if piece]
