"""Test doubles for agent runs: a scripted model and scripted tools.

``ScriptedModel`` implements the ``ModelClient`` protocol by replaying a list of
responses — raw text (parsed by the runner like any model output), tool calls (as a
backend with native tool calling returns them), full ``ModelResponse`` objects,
exceptions to raise, or callables that decide from the request — and records every
request it received, so a test can assert what the loop sent. ``ScriptedTools`` is a
``ToolInvoker`` that answers each tool from a fixed result or a function and records
the calls. Both are public so users can test their own agents without a model.
"""

from __future__ import annotations

import inspect
import json
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, TypeAlias

from remora.model.base import Message, ModelRequest, ModelResponse, ToolCall, Usage, sure_of
from remora.runner.history import MESSAGE_OVERHEAD, estimate_tokens
from remora.tools.result import ToolResult

Step: TypeAlias = (
    "str | ToolCall | list[ToolCall] | ModelResponse | BaseException "
    "| Callable[[ModelRequest], Step | Awaitable[Step]]"
)
ToolReply: TypeAlias = "ToolResult | Callable[[dict[str, Any]], ToolResult | Awaitable[ToolResult]]"


class ScriptExhaustedError(RuntimeError):
    """The loop asked for more responses than the script holds."""


def call(name: str, /, **arguments: Any) -> ToolCall:
    """A tool call for a script: ``call("read_file", path="a.py")``."""
    return ToolCall(name=name, arguments=arguments)


def _calls_text(calls: Iterable[ToolCall]) -> str:
    return "".join(item.name + json.dumps(item.arguments, default=str) for item in calls)


def _message_tokens(message: Message) -> int:
    return (
        MESSAGE_OVERHEAD
        + estimate_tokens(message.content)
        + estimate_tokens(_calls_text(message.tool_calls))
    )


class ScriptedModel:
    """A ``ModelClient`` that replays scripted responses and records every request.

    ``usage`` fills token counts with a chars/4 estimate, and reports as cached the
    tokens of the messages the request shares with the previous one (what a backend
    reusing its KV cache would skip). ``repeat_last`` answers with the last step again
    once the script runs out instead of raising ``ScriptExhaustedError``. A request for
    samples is answered by the step repeated, as a model sure of its answer samples it,
    unless the step is a ``ModelResponse`` with its own ``alternatives``.
    """

    def __init__(
        self,
        script: Iterable[Step],
        *,
        usage: bool = True,
        repeat_last: bool = False,
    ) -> None:
        self._script: deque[Step] = deque(script)
        self._usage = usage
        self._repeat_last = repeat_last
        self._last: Step | None = None
        self.requests: list[ModelRequest] = []
        self.closed = False

    @property
    def remaining(self) -> int:
        """Scripted steps not used yet."""
        return len(self._script)

    @property
    def message_counts(self) -> list[int]:
        """How many messages each request carried, in order."""
        return [len(request.messages) for request in self.requests]

    async def complete(self, request: ModelRequest) -> ModelResponse:
        previous = self.requests[-1] if self.requests else None
        self.requests.append(request)
        if self._script:
            step = self._script.popleft()
            self._last = step
        elif self._repeat_last and self._last is not None:
            step = self._last
        else:
            raise ScriptExhaustedError(
                f"the script ran out after {len(self.requests) - 1} response(s)"
            )
        while callable(step) and not isinstance(step, BaseException):
            produced = step(request)
            step = await produced if inspect.isawaitable(produced) else produced
        if isinstance(step, BaseException):
            raise step
        response = _response(step)
        if self._usage and response.usage == Usage():
            response = response.model_copy(update={"usage": _usage(request, previous, response)})
        return sure_of(response, request.samples)

    async def aclose(self) -> None:
        self.closed = True


def _response(step: str | ToolCall | list[ToolCall] | ModelResponse) -> ModelResponse:
    if isinstance(step, ModelResponse):
        return step
    if isinstance(step, str):
        return ModelResponse(content=step, raw_text=step, finish_reason="stop")
    calls = [step] if isinstance(step, ToolCall) else list(step)
    return ModelResponse(tool_calls=calls, finish_reason="tool_calls")


def _usage(request: ModelRequest, previous: ModelRequest | None, response: ModelResponse) -> Usage:
    prompt = sum(_message_tokens(message) for message in request.messages)
    cached = 0
    if previous is not None:
        for old, new in zip(previous.messages, request.messages, strict=False):
            if old != new:
                break
            cached += _message_tokens(new)
    output = (response.raw_text or response.content) + _calls_text(response.tool_calls)
    return Usage(
        prompt_tokens=prompt,
        completion_tokens=estimate_tokens(output),
        cached_prompt_tokens=cached,
    )


class ScriptedTools:
    """A ``ToolInvoker`` answering each tool from a fixed result or a function of its arguments.

    Every call is recorded in ``calls`` as ``(name, arguments)``. A tool without a reply
    answers with an error result, as a real runtime would for a broken tool.
    """

    def __init__(self, replies: Mapping[str, ToolReply]) -> None:
        self._replies = dict(replies)
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def names(self) -> list[str]:
        """The tools called so far, in order."""
        return [name for name, _ in self.calls]

    async def __call__(
        self, name: str, arguments: dict[str, Any], *, deadline: float | None = None
    ) -> ToolResult:
        self.calls.append((name, arguments))
        reply = self._replies.get(name)
        if reply is None:
            return ToolResult.failure(f"no scripted reply for tool {name}")
        if isinstance(reply, ToolResult):
            return reply
        produced = reply(arguments)
        return await produced if inspect.isawaitable(produced) else produced
