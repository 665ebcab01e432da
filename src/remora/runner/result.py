"""AgentResult: the structured outcome every agent run ends with."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

AgentStatus = Literal["success", "partial", "left", "failed", "skipped", "interrupted"]
"""``partial``: the job did part of what it set out to do (changes to review, work left).
``left``: the job ran as it should and left its work to the person (no summary the host
could vouch for, no input that gave a behaviour worth a test): a note to read, not a
failure of Remora's. ``failed``: Remora could not do its job (a crash, a timeout, a tool
or the sandbox failing)."""


class TimelineEntry(BaseModel):
    """One step of a run: a model call or a tool call."""

    ts: float
    kind: Literal["model", "tool"]
    name: str
    effect: str | None = None
    duration_s: float


class AgentTelemetry(BaseModel):
    """Per-run counters; also the raw material of the harness report."""

    turns: int = 0
    model_calls: int = 0
    tool_calls: dict[str, int] = Field(default_factory=dict)
    tool_calls_by_effect: dict[str, int] = Field(default_factory=dict)
    parse_paths: dict[str, int] = Field(default_factory=dict)
    tool_misses: int = 0
    textual_tool_call_patterns: int = 0
    invalid_calls: int = 0
    coercions: int = 0
    repeats: int = 0
    stall_triggers: dict[str, int] = Field(default_factory=dict)
    requeries: int = 0
    host_steps: int = Field(
        default=0, description="Tool calls the host made itself, as the agent's host steps."
    )
    context_trims: int = Field(
        default=0, description="History messages summarized or dropped to fit the context."
    )
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0
    candidates: int = Field(
        default=0,
        description="Answers the model gave at screened decisions (greedy and samples; "
        "their tokens are counted above).",
    )
    candidates_passed: int = Field(
        default=0, description="Of those, the valid calls the host's screen accepted."
    )
    model_latency_s: list[float] = Field(default_factory=list)
    tool_latency_s: dict[str, list[float]] = Field(default_factory=dict)
    wall_time_s: float = 0.0
    timeline: list[TimelineEntry] = Field(default_factory=list)


class AgentResult(BaseModel):
    """What one (operation, node) job produced; ``changed_files`` is checked against the store."""

    status: AgentStatus
    operation: str
    node_id: str
    workspace_id: str | None = None
    changed_files: list[str] = Field(default_factory=list)
    summary: str = ""
    details: dict[str, Any] = Field(default_factory=dict)
    error: str | None = None
    telemetry: AgentTelemetry = Field(default_factory=AgentTelemetry)
