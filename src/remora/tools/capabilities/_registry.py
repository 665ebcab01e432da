"""The capability registry: what host functions a .pym script may call and how they bind.

A capability is an ordinary Python function ``func(ctx, **kwargs)`` returning a JSON-like
value (dict, list, str, int, float, bool, None), because its result crosses into the
sandbox. Registering it with :func:`capability` records its signature (parameters after
``ctx``, annotations resolved) and docstring, which the .pym checker compares against
``@external`` stubs.

A call runs under the deadline of the tool call that made it (``CapabilityContext.deadline``);
capabilities that wait on anything (subprocesses above all) take their time from
:meth:`CapabilityContext.time_left`.

Codes: TOOL_100 unknown capability name, TOOL_202 the tool call's deadline has passed.
"""

from __future__ import annotations

import difflib
import functools
import inspect
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, TypeVar

from remora.config import ToolsConfig
from remora.errors import ToolError
from remora.workspace.base import FileStore

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class CapabilityContext:
    """What every capability call is bound to: the job's workspace, limits and system inputs.

    ``system`` carries node_text, file_path, node_name, node_type, qualname, node_id,
    workspace_id, operation and options, as the runner injects them into scripts.
    """

    store: FileStore
    config: ToolsConfig
    system: Mapping[str, Any]
    deadline: float | None = None
    """``time.monotonic()`` value by which the tool call must end; None means no deadline."""

    def time_left(self, limit: float) -> float:
        """``limit`` seconds, cut to what is left of the call's deadline (TOOL_202 if none)."""
        if self.deadline is None:
            return limit
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise ToolError(
                "TOOL_202",
                "the tool call ran out of time before this step could start",
                "the call hit tools.call_timeout or the job's runner.job_timeout; "
                "call submit_result with what you have",
            )
        return min(limit, left)


@dataclass(frozen=True)
class Capability:
    """One registered host function; ``signature`` excludes the leading ``ctx``."""

    name: str
    func: Callable[..., Any]
    signature: inspect.Signature
    doc: str

    @classmethod
    def of(cls, func: Callable[..., Any]) -> Capability:
        """``func`` described without registering it; its first parameter must be the context."""
        full = inspect.signature(func, eval_str=True)
        params = list(full.parameters.values())
        if not params or params[0].name != "ctx":
            raise TypeError(f"capability {func.__name__} must take 'ctx' as its first parameter")
        return cls(
            name=func.__name__,
            func=func,
            signature=full.replace(parameters=params[1:]),
            doc=inspect.getdoc(func) or "",
        )


_REGISTRY: dict[str, Capability] = {}
CAPABILITIES: Mapping[str, Capability] = MappingProxyType(_REGISTRY)


def capability(func: F) -> F:
    """Register ``func`` under its own name; its first parameter must be the context."""
    described = Capability.of(func)
    if described.name in _REGISTRY:
        raise TypeError(f"capability {described.name} is registered twice")
    _REGISTRY[described.name] = described
    return func


def bind_capabilities(
    ctx: CapabilityContext, names: Iterable[str] | None = None
) -> dict[str, Callable[..., Any]]:
    """``name -> callable(**kwargs)`` with ``ctx`` bound, for all or the named capabilities."""
    selected = sorted(_REGISTRY) if names is None else list(names)
    bound: dict[str, Callable[..., Any]] = {}
    for name in selected:
        cap = _REGISTRY.get(name)
        if cap is None:
            close = difflib.get_close_matches(name, list(_REGISTRY), n=1)
            hint = f"did you mean '{close[0]}'?" if close else "known: " + ", ".join(_REGISTRY)
            raise ToolError("TOOL_100", f"unknown capability '{name}'", hint)
        bound[name] = _bind(cap, ctx)
    return bound


def _bind(cap: Capability, ctx: CapabilityContext) -> Callable[..., Any]:
    @functools.wraps(cap.func)
    def call(*args: Any, **kwargs: Any) -> Any:
        return cap.func(ctx, *args, **kwargs)

    call.__signature__ = cap.signature  # type: ignore[attr-defined]
    return call
