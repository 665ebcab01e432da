"""What watches an agent run: hooks the loop calls at each step.

The loop decides; observers record. Its telemetry (:class:`TelemetryRecorder`), its events
(:class:`EventObserver`) and its transcript (:class:`TranscriptObserver`) are observers, so
a caller adds what it wants watched (a progress display, a trace for training) without
touching the loop, and the loop's own code says only what happens. Every hook defaults to
nothing; an observer overrides the ones it needs.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from remora.events import (
    AgentDoneEvent,
    Emitter,
    GuardTriggeredEvent,
    ModelRequestEvent,
    ModelResponseEvent,
    ToolCallEvent,
    ToolResultEvent,
)
from remora.model.base import ModelRequest, ModelResponse, ToolCall
from remora.runner.guards import REQUERY, GuardFiring
from remora.runner.parsing import ParseResult
from remora.runner.result import AgentResult, AgentTelemetry, TimelineEntry
from remora.runner.transcript import Transcript
from remora.tools.result import ToolResult

if TYPE_CHECKING:
    from remora.runner.run import AgentRun


class LoopObserver:
    """The loop's hooks, in the order a turn meets them; each does nothing here."""

    def started(self, run: AgentRun) -> None:
        """The run begins."""

    def requested(self, turn: int, request: ModelRequest, allowed: list[str]) -> None:
        """The model is asked (``allowed``: the tools it may call this turn)."""

    def answered(self, turn: int, response: ModelResponse, latency_s: float) -> None:
        """The model answered the turn's request."""

    def model_failed(self, turn: int, error: str) -> None:
        """The model could not answer (the run fails)."""

    def parsed(self, turn: int, response: ModelResponse, parsed: ParseResult) -> None:
        """The calls read from the answer (none: a miss)."""

    def candidates(
        self,
        turn: int,
        answers: Sequence[ModelResponse],
        verdicts: Sequence[str],
        chosen: int | None,
        passed: int,
    ) -> None:
        """Several answers were screened; ``chosen`` is the one used (None: the greedy
        one goes on), ``passed`` how many the host's screen accepted."""

    def coerced(self, turn: int, call: ToolCall, coercions: int) -> None:
        """Arguments of ``call`` were coerced to their schema's types."""

    def rejected(self, turn: int, call: ToolCall, error: ToolResult) -> None:
        """An invalid call; ``error`` is what the model is shown instead of a result."""

    def repeated(self, turn: int, call: ToolCall) -> None:
        """A call made before, answered with its earlier result, not run again."""

    def tool_called(self, turn: int, call: ToolCall, effect: str, host_step: bool) -> None:
        """A tool is about to run (``host_step``: the host called it, not the model)."""

    def tool_returned(
        self, turn: int, call: ToolCall, effect: str, result: ToolResult, duration_s: float
    ) -> None:
        """A tool ran."""

    def guard_fired(self, turn: int, firing: GuardFiring) -> None:
        """A stall guard stepped in."""

    def finished(self, result: AgentResult) -> None:
        """The run ended with ``result`` (also when it was cancelled)."""

    def crashed(self) -> None:
        """The run ended by an exception other than cancellation."""


class TelemetryRecorder(LoopObserver):
    """Counts what a run did into :attr:`telemetry`, the result's ``telemetry``."""

    def __init__(self) -> None:
        self.telemetry = AgentTelemetry()

    def answered(self, turn: int, response: ModelResponse, latency_s: float) -> None:
        telemetry = self.telemetry
        telemetry.turns = turn
        telemetry.model_calls += 1
        _add_usage(telemetry, response)
        telemetry.model_latency_s.append(latency_s)
        telemetry.timeline.append(
            TimelineEntry(ts=time.time(), kind="model", name="model", duration_s=latency_s)
        )

    def model_failed(self, turn: int, error: str) -> None:
        self.telemetry.turns = turn

    def parsed(self, turn: int, response: ModelResponse, parsed: ParseResult) -> None:
        telemetry = self.telemetry
        if parsed.textual_pattern:
            telemetry.textual_tool_call_patterns += 1
        if not parsed.calls:
            telemetry.tool_misses += 1
            return
        for path in parsed.paths:
            telemetry.parse_paths[path] = telemetry.parse_paths.get(path, 0) + 1

    def candidates(
        self,
        turn: int,
        answers: Sequence[ModelResponse],
        verdicts: Sequence[str],
        chosen: int | None,
        passed: int,
    ) -> None:
        for answer in answers[1:]:  # the first was counted when it answered
            _add_usage(self.telemetry, answer)
        self.telemetry.candidates += len(answers)
        self.telemetry.candidates_passed += passed

    def coerced(self, turn: int, call: ToolCall, coercions: int) -> None:
        self.telemetry.coercions += coercions

    def rejected(self, turn: int, call: ToolCall, error: ToolResult) -> None:
        self.telemetry.invalid_calls += 1

    def repeated(self, turn: int, call: ToolCall) -> None:
        self.telemetry.repeats += 1

    def tool_called(self, turn: int, call: ToolCall, effect: str, host_step: bool) -> None:
        if host_step:
            self.telemetry.host_steps += 1

    def tool_returned(
        self, turn: int, call: ToolCall, effect: str, result: ToolResult, duration_s: float
    ) -> None:
        telemetry = self.telemetry
        telemetry.tool_calls[call.name] = telemetry.tool_calls.get(call.name, 0) + 1
        telemetry.tool_calls_by_effect[effect] = telemetry.tool_calls_by_effect.get(effect, 0) + 1
        telemetry.tool_latency_s.setdefault(call.name, []).append(duration_s)
        telemetry.timeline.append(
            TimelineEntry(
                ts=time.time(), kind="tool", name=call.name, effect=effect, duration_s=duration_s
            )
        )

    def guard_fired(self, turn: int, firing: GuardFiring) -> None:
        triggers = self.telemetry.stall_triggers
        triggers[firing.guard] = triggers.get(firing.guard, 0) + 1
        if firing.guard == REQUERY:
            self.telemetry.requeries += 1


def _add_usage(telemetry: AgentTelemetry, response: ModelResponse) -> None:
    telemetry.prompt_tokens += response.usage.prompt_tokens
    telemetry.completion_tokens += response.usage.completion_tokens
    telemetry.cached_prompt_tokens += response.usage.cached_prompt_tokens


EventType = (
    ModelRequestEvent
    | ModelResponseEvent
    | ToolCallEvent
    | ToolResultEvent
    | GuardTriggeredEvent
    | AgentDoneEvent
)


class EventObserver(LoopObserver):
    """The run's steps as typed events on ``emitter``, tagged with the run's ids."""

    def __init__(self, emitter: Emitter) -> None:
        self.emitter = emitter
        self.run_id: str | None = None
        self.job_id: str | None = None
        self._latency = 0.0

    def started(self, run: AgentRun) -> None:
        self.run_id, self.job_id = run.run_id, run.job_id

    def _emit(self, event: EventType) -> None:
        if self.run_id is not None or self.job_id is not None:
            event.run_id = self.run_id
            event.job_id = self.job_id
        self.emitter.emit(event)

    def requested(self, turn: int, request: ModelRequest, allowed: list[str]) -> None:
        self._emit(
            ModelRequestEvent(
                turn=turn,
                messages=len(request.messages),
                allowed_tools=allowed,
                tool_choice=request.tool_choice,
            )
        )

    def answered(self, turn: int, response: ModelResponse, latency_s: float) -> None:
        self._latency = latency_s

    def parsed(self, turn: int, response: ModelResponse, parsed: ParseResult) -> None:
        self._emit(
            ModelResponseEvent(
                turn=turn,
                finish_reason=response.finish_reason,
                tool_calls=len(parsed.calls),
                parse_paths=parsed.paths,
                prompt_tokens=response.usage.prompt_tokens,
                completion_tokens=response.usage.completion_tokens,
                cached_prompt_tokens=response.usage.cached_prompt_tokens,
                latency_s=self._latency,
            )
        )

    def rejected(self, turn: int, call: ToolCall, error: ToolResult) -> None:
        self._emit(
            ToolCallEvent(turn=turn, tool=call.name, effect="invalid", arguments=call.arguments)
        )
        self._emit(
            ToolResultEvent(
                turn=turn,
                tool=call.name,
                outcome=error.outcome,
                summary=error.summary,
                duration_s=0.0,
            )
        )

    def tool_called(self, turn: int, call: ToolCall, effect: str, host_step: bool) -> None:
        self._emit(
            ToolCallEvent(turn=turn, tool=call.name, effect=effect, arguments=call.arguments)
        )

    def tool_returned(
        self, turn: int, call: ToolCall, effect: str, result: ToolResult, duration_s: float
    ) -> None:
        self._emit(
            ToolResultEvent(
                turn=turn,
                tool=call.name,
                outcome=result.outcome,
                summary=result.summary,
                duration_s=duration_s,
            )
        )

    def guard_fired(self, turn: int, firing: GuardFiring) -> None:
        self._emit(GuardTriggeredEvent(turn=turn, guard=firing.guard, detail=firing.detail))

    def finished(self, result: AgentResult) -> None:
        self._emit(
            AgentDoneEvent(
                operation=result.operation,
                node_id=result.node_id,
                status=result.status,
                summary=result.summary,
                telemetry=result.telemetry.model_dump(mode="json"),
            )
        )


class TranscriptObserver(LoopObserver):
    """The run as a readable text file at ``path`` (prompts, raw answers, calls, results),
    written as it goes so it survives a crash or Ctrl-C."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._transcript = Transcript(None, "")

    def started(self, run: AgentRun) -> None:
        self._transcript = Transcript(
            self.path, f"{run.operation} {run.node_id} ({run.conversation_id})"
        )

    def requested(self, turn: int, request: ModelRequest, allowed: list[str]) -> None:
        self._transcript.request(turn, request)

    def parsed(self, turn: int, response: ModelResponse, parsed: ParseResult) -> None:
        self._transcript.response(turn, response, parsed.calls)

    def candidates(
        self,
        turn: int,
        answers: Sequence[ModelResponse],
        verdicts: Sequence[str],
        chosen: int | None,
        passed: int,
    ) -> None:
        self._transcript.note(
            turn,
            f"{len(answers)} candidates: "
            + "; ".join(f"{number}: {verdict}" for number, verdict in enumerate(verdicts))
            + f"; chosen: {chosen if chosen is not None else 'none (the greedy one goes on)'}",
        )

    def rejected(self, turn: int, call: ToolCall, error: ToolResult) -> None:
        self._transcript.tool(turn, call.name, call.arguments, error)

    def tool_returned(
        self, turn: int, call: ToolCall, effect: str, result: ToolResult, duration_s: float
    ) -> None:
        self._transcript.tool(turn, call.name, call.arguments, result)

    def guard_fired(self, turn: int, firing: GuardFiring) -> None:
        self._transcript.note(turn, f"guard {firing.guard}: {firing.detail}")

    def finished(self, result: AgentResult) -> None:
        self._transcript.close(f"{result.status}: {result.summary} {result.error or ''}".strip())

    def crashed(self) -> None:
        self._transcript.close("crashed")


def watching(emitter: Emitter | None = None, transcript: Path | None = None) -> list[LoopObserver]:
    """The usual observers: events on ``emitter`` and a transcript at ``transcript``, each
    where given."""
    observers: list[LoopObserver] = []
    if emitter is not None:
        observers.append(EventObserver(emitter))
    if transcript is not None:
        observers.append(TranscriptObserver(transcript))
    return observers
