"""Stall guards: what the loop does when a small model stops making progress.

Small models repeat the same call, alternate between two calls, keep reading without
ever writing, or answer without a usable call. Each guard here notices one of those
patterns and answers with a short instruction for the model and, where needed, a
narrower set of tools for the next turn (the backend enforces it with its grammar).
The state machine is pure: the loop reports what happened and asks what to allow next.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from remora.contracts import SUBMIT_TOOL, Effect
from remora.runner.catalog import ToolCatalog
from remora.runner.settings import LoopSettings
from remora.tools.result import ToolResult

REPEAT = "repeat"
REPEAT_FORCE = "repeat_force"
CYCLE = "cycle"
READ_ONLY_NUDGE = "read_only_nudge"
READ_ONLY_FORCE = "read_only_force"
REQUERY = "requery"
MISTAKE_LIMIT = "mistake_limit"
MAX_TURNS = "max_turns"
HOST_FINISH = "host_finish"
"""Not a guard of its own: the loop's note that the guards left the model only host steps,
so the host submitted (see ``AgentLoop._left_to_host``)."""

_CYCLE_PERIODS = (2, 3)
_SEQUENCE_LIMIT = 12


def call_signature(name: str, arguments: dict[str, Any]) -> str:
    """Name plus canonical JSON arguments: equal for calls that would do the same thing."""
    try:
        canonical = json.dumps(arguments, sort_keys=True, separators=(",", ":"), default=str)
    except ValueError:
        canonical = repr(sorted(arguments.items(), key=lambda item: item[0]))
    return f"{name}:{canonical}"


@dataclass(frozen=True)
class GuardFiring:
    """One guard triggered: its name, a detail for telemetry, and what the model is told."""

    guard: str
    detail: str
    message: str = ""


@dataclass(frozen=True)
class TurnPlan:
    """What the next request allows; ``stop`` ends the run with that error instead."""

    allowed: tuple[str, ...] | None
    tool_choice: str
    closing: bool = False
    stop: str | None = None


@dataclass(frozen=True)
class CallRecord:
    """A valid call of the finished turn, executed or served from an earlier result."""

    name: str
    signature: str
    effect: Effect
    repeated: bool = False


class Guards:
    """Tracks one run's calls and mistakes and plans the tools allowed each turn."""

    def __init__(self, catalog: ToolCatalog, settings: LoopSettings) -> None:
        self._catalog = catalog
        self._settings = settings
        self._results: dict[str, ToolResult] = {}
        self._repeat_counts: dict[str, int] = {}
        self._sequence: list[str] = []
        self._names_by_signature: dict[str, str] = {}
        self._blocked: set[str] = set()
        self.read_only_streak = 0
        self.mistakes = 0
        self.closing_reason: str | None = None
        self._closing_turns = 0

    @property
    def closing(self) -> bool:
        return self.closing_reason is not None

    def earlier_result(self, signature: str) -> ToolResult | None:
        """The result of an identical call since the last write, if there was one."""
        return self._results.get(signature)

    def remember(self, signature: str, effect: Effect, result: ToolResult) -> None:
        """Keep a result for repeat detection; a write may change what reads return."""
        if effect == "write":
            self._results.clear()
        self._results[signature] = result

    def repeated(self, name: str, signature: str) -> GuardFiring:
        """An identical call is being answered from its earlier result instead of run."""
        count = self._repeat_counts.get(signature, 0) + 1
        self._repeat_counts[signature] = count
        return GuardFiring(
            REPEAT,
            f"{name} repeated with identical arguments ({count}x)",
            f"You already called {name} with these arguments. It was not run again; its "
            "earlier result is shown. Use that result and take the next step instead.",
        )

    def end_turn(self, calls: Sequence[CallRecord], mistake: str | None) -> list[GuardFiring]:
        """Update the state after a turn; ``mistake`` describes a turn with no valid call."""
        if mistake is not None:
            return self._on_mistake(mistake)
        self.mistakes = 0
        firings: list[GuardFiring] = []
        if all(call.effect == "read" for call in calls):
            self.read_only_streak += 1
        else:
            self.read_only_streak = 0
        for call in calls:
            self._names_by_signature[call.signature] = call.name
            self._sequence.append(call.signature)
        del self._sequence[:-_SEQUENCE_LIMIT]
        cycle = _find_cycle(self._sequence)
        if cycle is not None:
            names = sorted({self._names_by_signature[signature] for signature in cycle})
            self._blocked.update(names)
            self._sequence.clear()
            shown = " -> ".join(self._names_by_signature[signature] for signature in cycle)
            firings.append(
                GuardFiring(
                    CYCLE,
                    f"cycle {shown} repeated twice",
                    f"You are going in circles ({shown}). Those tools are blocked for the "
                    "next turn; do something that makes progress.",
                )
            )
        for call in calls:
            if call.repeated and self._repeat_counts[call.signature] >= self._settings.max_repeats:
                self._blocked.add(call.name)
                firings.append(
                    GuardFiring(
                        REPEAT_FORCE,
                        f"{call.name} repeated {self._repeat_counts[call.signature]}x",
                        f"{call.name} is blocked for the next turn because you keep repeating "
                        "the same call.",
                    )
                )
        streak = self.read_only_streak
        progress = ", ".join(self._catalog.progress_names)
        if streak >= self._settings.read_only_force_after:
            firings.append(
                GuardFiring(
                    READ_ONLY_FORCE,
                    f"{streak} consecutive read-only turns",
                    f"You have only read so far. Next turn only these tools are allowed: "
                    f"{progress}. Call one of them.",
                )
            )
        elif streak >= self._settings.read_only_nudge_after:
            writes = ", ".join(self._catalog.write_names)
            step = (
                f"Now make the change with {writes}, or call {SUBMIT_TOOL} if nothing needs to "
                "change."
                if writes
                else f"Now call {SUBMIT_TOOL} with your result."
            )
            firings.append(
                GuardFiring(
                    READ_ONLY_NUDGE,
                    f"{streak} consecutive read-only turns",
                    f"You have enough context. {step}",
                )
            )
        return firings

    def _on_mistake(self, mistake: str) -> list[GuardFiring]:
        self.mistakes += 1
        if self.closing:
            return [
                GuardFiring(
                    REQUERY,
                    f"{mistake} while closing",
                    f"{_sentence(mistake)} Call {SUBMIT_TOOL} now with a status and a summary.",
                )
            ]
        if self.mistakes <= self._settings.max_requeries:
            names = ", ".join(self._catalog.names)
            return [
                GuardFiring(
                    REQUERY,
                    f"{mistake} ({self.mistakes} in a row)",
                    f"{_sentence(mistake)} Reply with exactly one function call to one of: "
                    f"{names}.",
                )
            ]
        self.closing_reason = MISTAKE_LIMIT
        return [
            GuardFiring(
                MISTAKE_LIMIT,
                f"{self.mistakes} unusable responses in a row",
                f"{_sentence(mistake)} Too many unusable replies. Call {SUBMIT_TOOL} now; use "
                "status 'failed' if the task is not done.",
            )
        ]

    def plan(self, turn: int) -> tuple[TurnPlan, list[GuardFiring]]:
        """The tools allowed for ``turn`` (1-based) and any guard that fired to decide it."""
        firings: list[GuardFiring] = []
        settings = self._settings
        if not self.closing and turn > settings.max_turns:
            self.closing_reason = MAX_TURNS
            firings.append(
                GuardFiring(
                    MAX_TURNS,
                    f"turn limit of {settings.max_turns} reached",
                    f"The turn limit is reached. Call {SUBMIT_TOOL} now with your status and a "
                    "summary of what you did.",
                )
            )
        if self.closing:
            if self._closing_turns > settings.max_requeries:
                return TurnPlan(None, settings.tool_choice, True, self._stop_reason()), firings
            self._closing_turns += 1
            self._blocked.clear()
            return TurnPlan((SUBMIT_TOOL,), SUBMIT_TOOL, closing=True), firings
        names = self._catalog.names
        allowed = [name for name in names if name not in self._blocked]
        if self.read_only_streak >= settings.read_only_force_after:
            progress = set(self._catalog.progress_names)
            allowed = [name for name in allowed if name in progress]
        self._blocked.clear()
        if not allowed:
            allowed = [SUBMIT_TOOL]
        if len(allowed) == len(names):
            return TurnPlan(None, settings.tool_choice), firings
        return TurnPlan(tuple(allowed), "required"), firings

    def _stop_reason(self) -> str:
        if self.closing_reason == MISTAKE_LIMIT:
            return (
                f"RUN_003: the model gave {self.mistakes} unusable responses in a row and "
                f"never called {SUBMIT_TOOL}"
            )
        return (
            f"RUN_002: no valid {SUBMIT_TOOL} call within {self._settings.max_turns} turns "
            f"and {self._closing_turns} closing turn(s)"
        )


def _find_cycle(sequence: Sequence[str]) -> tuple[str, ...] | None:
    """The repeating unit when the sequence ends with A-B-A-B (or A-B-C-A-B-C)."""
    for period in _CYCLE_PERIODS:
        if len(sequence) < 2 * period:
            continue
        tail = sequence[-2 * period :]
        unit = tuple(tail[:period])
        if unit == tuple(tail[period:]) and len(set(unit)) == period:
            return unit
    return None


def _sentence(text: str) -> str:
    text = text.strip()
    if not text:
        return ""
    text = text[0].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else text + "."
