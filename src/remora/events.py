"""Typed events and the emitters that carry them.

Every layer reports what it does as small pydantic events; an emitter decides where
they go (a JSONL file for machines, nothing at all, a list in tests). Emitters are
thread-safe because tool workers and the model scheduler emit from other threads.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field


class Event(BaseModel):
    """Fields every event carries; subclasses fix ``type``."""

    model_config = ConfigDict(extra="forbid")

    type: str
    ts: float = Field(default_factory=time.time)
    run_id: str | None = None
    job_id: str | None = None


class RunStarted(Event):
    type: Literal["run_started"] = "run_started"
    targets: list[str]
    operations: list[str]


class RunFinished(Event):
    type: Literal["run_finished"] = "run_finished"
    status: str
    jobs: int


class JobStarted(Event):
    type: Literal["job_started"] = "job_started"
    operation: str
    node_id: str
    qualname: str
    file_path: str


class JobFinished(Event):
    type: Literal["job_finished"] = "job_finished"
    operation: str
    node_id: str
    status: str
    summary: str
    error: str | None = None
    changed_files: list[str] = Field(default_factory=list)
    wall_time_s: float


class DiscoveryProblemEvent(Event):
    type: Literal["discovery_problem"] = "discovery_problem"
    path: str
    code: str
    message: str
    hint: str | None = None


class ModelRequestEvent(Event):
    type: Literal["model_request"] = "model_request"
    turn: int
    messages: int
    allowed_tools: list[str]
    tool_choice: str


class ModelResponseEvent(Event):
    type: Literal["model_response"] = "model_response"
    turn: int
    finish_reason: str | None
    tool_calls: int
    parse_paths: list[str]
    prompt_tokens: int
    completion_tokens: int
    cached_prompt_tokens: int
    latency_s: float


class ToolCallEvent(Event):
    type: Literal["tool_call"] = "tool_call"
    turn: int
    tool: str
    effect: str
    arguments: dict[str, Any]


class ToolResultEvent(Event):
    type: Literal["tool_result"] = "tool_result"
    turn: int
    tool: str
    outcome: str
    summary: str
    duration_s: float


class SandboxPrintEvent(Event):
    type: Literal["sandbox_print"] = "sandbox_print"
    script: str
    stream: str
    text: str


class GuardTriggeredEvent(Event):
    type: Literal["guard_triggered"] = "guard_triggered"
    turn: int
    guard: str
    detail: str


class AgentDoneEvent(Event):
    type: Literal["agent_done"] = "agent_done"
    operation: str
    node_id: str
    status: str
    summary: str
    telemetry: dict[str, Any]


@runtime_checkable
class Emitter(Protocol):
    """Where events go."""

    def emit(self, event: Event) -> None: ...

    def close(self) -> None: ...


class NullEmitter:
    """Drops every event."""

    def emit(self, event: Event) -> None:
        return None

    def close(self) -> None:
        return None


class CollectingEmitter:
    """Keeps events in memory; used by the harness and by tests."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self._lock = threading.Lock()

    def emit(self, event: Event) -> None:
        with self._lock:
            self.events.append(event)

    def of_type(self, kind: str) -> list[Event]:
        with self._lock:
            return [event for event in self.events if event.type == kind]

    def close(self) -> None:
        return None


class JsonlEmitter:
    """Appends one JSON object per line; the file is opened lazily and flushed per event."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._handle: Any = None

    def emit(self, event: Event) -> None:
        line = json.dumps(event.model_dump(mode="json"), ensure_ascii=False)
        with self._lock:
            if self._handle is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._handle = self.path.open("a", encoding="utf-8")
            self._handle.write(line + "\n")
            self._handle.flush()

    def close(self) -> None:
        with self._lock:
            if self._handle is not None:
                self._handle.close()
                self._handle = None


class FanoutEmitter:
    """Sends each event to several emitters."""

    def __init__(self, *emitters: Emitter) -> None:
        self.emitters = list(emitters)

    def emit(self, event: Event) -> None:
        for emitter in self.emitters:
            emitter.emit(event)

    def close(self) -> None:
        for emitter in self.emitters:
            emitter.close()
