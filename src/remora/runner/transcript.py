"""A human-readable log of one agent run: full prompts, raw outputs, calls and results.

Events carry counts for machines; when something goes wrong a person needs to read
exactly what the model was sent and what it wrote back. The transcript is written as
the run goes, so it survives a crash or Ctrl-C.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import IO, Any

from remora.model.base import Message, ModelRequest, ModelResponse, ToolCall
from remora.tools.result import ToolResult


class Transcript:
    """Appends readable sections to a text file; a no-op when ``path`` is None."""

    def __init__(self, path: Path | None, title: str) -> None:
        self._handle: IO[str] | None = None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._handle = path.open("a", encoding="utf-8")
            self._write(f"##### {title}\n")

    def _write(self, text: str) -> None:
        if self._handle is not None:
            self._handle.write(text)
            self._handle.flush()

    def request(self, turn: int, request: ModelRequest) -> None:
        if self._handle is None:
            return
        allowed = "all" if request.allowed_tools is None else ", ".join(request.allowed_tools)
        lines = [
            f"\n=== turn {turn}: request ({len(request.messages)} messages; allowed: {allowed};"
            f" tool_choice: {request.tool_choice}) ===",
        ]
        if request.choices:
            lines.append(f"choices: {json.dumps(request.choices, default=str)}")
        lines.extend(_message(message) for message in request.messages)
        self._write("\n".join(lines) + "\n")

    def response(self, turn: int, response: ModelResponse, calls: tuple[ToolCall, ...]) -> None:
        if self._handle is None:
            return
        raw = response.raw_text or response.content
        lines = [f"--- turn {turn}: model output (finish: {response.finish_reason}) ---", raw]
        lines.extend(f"  parsed [{call.parse_path}] {_call(call)}" for call in calls)
        if not calls:
            lines.append("  (no usable tool call)")
        self._write("\n".join(lines) + "\n")

    def tool(self, turn: int, name: str, arguments: dict[str, Any], result: ToolResult) -> None:
        if self._handle is None:
            return
        body = json.dumps(result.for_model(name), ensure_ascii=False, default=str, indent=2)
        self._write(f"--- turn {turn}: {name}({_json(arguments)}) ---\n{body}\n")

    def note(self, turn: int, text: str) -> None:
        self._write(f"--- turn {turn}: {text}\n")

    def close(self, summary: str) -> None:
        if self._handle is not None:
            self._write(f"##### done: {summary}\n")
            self._handle.close()
            self._handle = None


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str, sort_keys=True)


def _call(call: ToolCall) -> str:
    return f"{call.name}({_json(call.arguments)})"


def _message(message: Message) -> str:
    head = f"[{message.role}" + (f" {message.name}" if message.name else "") + "]"
    parts = [head]
    if message.content:
        parts.append(message.content)
    parts.extend(f"call {_call(call)}" for call in message.tool_calls)
    return "\n".join(parts)
