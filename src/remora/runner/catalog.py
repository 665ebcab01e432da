"""The tools one agent run may call, as plain inputs to the loop.

The loop does not know about subagent YAML or the sandbox: the coordinator hands it a
list of ``LoopTool`` (what the model sees plus the effect that drives stall detection)
and a ``ToolInvoker`` that runs a tool by name. This keeps the runner testable with
nothing but a scripted model and an async function.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from remora.contracts import EFFECTS, SUBMIT_TOOL, Effect
from remora.errors import RunnerError
from remora.model.base import ToolSpec
from remora.tools.result import ToolResult


@dataclass(frozen=True)
class LoopTool:
    """A tool as the loop needs it: the model-facing spec and its effect.

    A ``host_step`` is a call that follows from the state: when a result names it as the
    only next tool, the loop calls it itself, without arguments and without a model turn.
    """

    spec: ToolSpec
    effect: Effect
    host_step: bool = False
    screened: bool = False
    """The host can screen a call of it without running it (the loop's ``screen``): the
    model is then asked for several answers at once and the host picks among them."""

    @property
    def name(self) -> str:
        return self.spec.name


class ToolInvoker(Protocol):
    """Runs one tool with validated model arguments; tool failures come back as results.

    ``deadline`` is the ``time.monotonic()`` value the job ends at; the tool should be done
    by then (the loop stops waiting for it shortly after).
    """

    async def __call__(
        self, name: str, arguments: dict[str, Any], *, deadline: float | None = None
    ) -> ToolResult: ...


class ToolCatalog:
    """Checked, indexed tools: unique names and exactly one terminal ``submit_result``."""

    def __init__(self, tools: Sequence[LoopTool]) -> None:
        if not tools:
            raise RunnerError("RUN_001", "an agent run needs at least one tool", None)
        effects: dict[str, Effect] = {}
        for tool in tools:
            if tool.effect not in EFFECTS:
                raise RunnerError(
                    "RUN_001",
                    f"tool {tool.name!r} has effect {tool.effect!r}",
                    "use one of: read, write, terminal",
                )
            if tool.name in effects:
                raise RunnerError("RUN_001", f"tool {tool.name!r} is listed twice", None)
            effects[tool.name] = tool.effect
        terminals = [name for name, effect in effects.items() if effect == "terminal"]
        if terminals != [SUBMIT_TOOL]:
            raise RunnerError(
                "RUN_001",
                f"exactly one terminal tool named {SUBMIT_TOOL} is required, got {terminals}",
                f"mark {SUBMIT_TOOL} as 'effect: terminal' and no other tool",
            )
        self.specs = [tool.spec for tool in tools]
        self.names = tuple(effects)
        self._effects = effects
        self.write_names = tuple(name for name, effect in effects.items() if effect == "write")
        self.progress_names = (*self.write_names, SUBMIT_TOOL)
        self.host_steps = frozenset(tool.name for tool in tools if tool.host_step)
        self.screened = frozenset(tool.name for tool in tools if tool.screened)

    def effect(self, name: str) -> Effect:
        return self._effects[name]
