"""ToolResult: what a .pym tool returns and what the model reads back."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Outcome = Literal["success", "partial", "error"]


class ToolResult(BaseModel):
    """The tool-result contract (docs/writing-an-agent.md, "The result contract").

    ``summary`` must stand on its own: the runner replaces old results by their
    summary when the history outgrows the context. ``choices`` lets the backend
    restrict the next call's arguments to values this result reported; ``next_tools``
    restricts which tools the next call may name (the host knows what makes sense next).
    """

    model_config = ConfigDict(extra="forbid")

    outcome: Outcome
    summary: str
    result: Any = None
    error: str | None = None
    knowledge: dict[str, Any] = Field(default_factory=dict)
    choices: dict[str, list[Any]] = Field(default_factory=dict)
    next_tools: list[str] | None = None

    @classmethod
    def failure(cls, message: str, summary: str | None = None) -> ToolResult:
        return cls(outcome="error", summary=summary or message, error=message)

    def for_model(self, tool_name: str) -> dict[str, Any]:
        """The ``{"name", "response"}`` shape the model sees."""
        response = self.model_dump(exclude_defaults=True)
        response.setdefault("outcome", self.outcome)
        response.setdefault("summary", self.summary)
        return {"name": tool_name, "response": response}


def cut_text(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, saying how much was cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]} [... {len(text) - limit} more characters cut]"
