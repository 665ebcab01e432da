"""What every expert policy shares: reading the conversation, choosing an allowed call.

An expert policy is what a careful engineer calls next, decided from the conversation so
far; each operation keeps its own (``remora.operations.<op>.expert``) and training drives
the real agents with them (``remora.training.traces``). A policy reads only what the model
would read, the tool results already in ``request.messages`` (their ``summary`` above all,
since the runner may trim older results to it), plus the episode's real material the model
is meant to learn to produce. A policy that meets a state it has no sensible answer for
raises :class:`ExpertError`: the episode is dropped rather than recorded with a guess.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from remora.contracts import SUBMIT_TOOL
from remora.model.base import ModelRequest, ToolCall

Expert = Callable[[ModelRequest], ToolCall]
"""A policy: the next call for a request."""


class ExpertError(Exception):
    """The policy has no sensible next call; the episode is dropped with this reason."""


@dataclass(frozen=True)
class Seen:
    """One tool response in the conversation, with the arguments of the call it answers."""

    tool: str
    arguments: dict[str, Any]
    outcome: str
    summary: str
    result: Any = None


def seen_results(request: ModelRequest) -> list[Seen]:
    """The tool responses of the conversation, in order (trimmed ones keep their summary)."""
    calls: dict[str, ToolCall] = {}
    found: list[Seen] = []
    for message in request.messages:
        if message.role == "assistant":
            calls.update({call.id: call for call in message.tool_calls})
        if message.role != "tool":
            continue
        try:
            data: Any = json.loads(message.content)
        except ValueError:
            data = {}
        response = data.get("response", {}) if isinstance(data, dict) else {}
        response = response if isinstance(response, dict) else {}
        made = calls.get(message.tool_call_id or "")
        found.append(
            Seen(
                tool=str(data.get("name") or message.name or ""),
                arguments=dict(made.arguments) if made is not None else {},
                outcome=str(response.get("outcome", "error")),
                summary=str(response.get("summary", "")),
                result=response.get("result"),
            )
        )
    return found


def allowed_names(request: ModelRequest) -> list[str]:
    """The tools the runner lets the model call this turn."""
    return [spec.name for spec in request.allowed_specs()]


def call(name: str, /, **arguments: Any) -> ToolCall:
    return ToolCall(name=name, arguments=arguments)


class MistakenCall(ToolCall):
    """A call an expert makes wrong on purpose, so the episode shows the recovery: the
    call stays in the conversation, but is never a training target itself."""


def choose(request: ModelRequest, wanted: ToolCall, submit: Callable[[], ToolCall]) -> ToolCall:
    """``wanted`` when the runner allows it; ``submit`` when only submitting is left."""
    allowed = allowed_names(request)
    if wanted.name in allowed:
        return wanted
    if SUBMIT_TOOL in allowed:
        return submit()
    raise ExpertError(f"{wanted.name} is not allowed this turn ({', '.join(allowed)})")


def join_words(items: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]
