"""A scripted model policy for the harness and marker agents, as the tests' stand-in model.

It answers each conversation on its own (concurrent jobs interleave freely): the first
turn calls the agent's one working tool (``echo`` with the node's name, or ``mark``), every
later turn calls ``submit_result``. ``delay`` seconds pass before each answer; the policy
counts the calls in flight, so tests can check the scheduler's concurrency.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass

from remora.model.base import ModelRequest, ToolCall
from remora.testing import ScriptedModel, call


@dataclass
class Policy:
    delay: float = 0.0
    in_flight: int = 0
    most_in_flight: int = 0
    calls: int = 0

    async def __call__(self, request: ModelRequest) -> ToolCall:
        self.calls += 1
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.delay)
        finally:
            self.in_flight -= 1
        names = {spec.name for spec in request.allowed_specs()}
        worked = any(message.role == "tool" for message in request.messages)
        if worked or names == {"submit_result"}:
            return call("submit_result", summary="done")
        if "mark" in names:
            return call("mark")
        found = re.search(r'Call echo with text "([^"]*)"', request.messages[1].content or "")
        return call("echo", text=found.group(1) if found else "?")


def scripted_model(policy: Policy) -> ScriptedModel:
    return ScriptedModel([policy], repeat_last=True)
