"""The capability registry: what host functions a .pym script may call and how they bind.

A capability is an ordinary Python function ``func(ctx, **kwargs)`` returning a JSON-like
value (dict, list, str, int, float, bool, None), because its result crosses into the
sandbox. :func:`capability` marks it; nothing is registered on import. Whoever assembles
the tools (the toolkit here, each operation for its own) lists its modules with
:func:`capabilities_of`, which records each marked function's signature (parameters after
``ctx``, annotations resolved) and docstring for the .pym checker to compare against
``@external`` stubs. The mapping travels with the job: a :class:`CapabilityContext` holds
the capabilities its scripts may call and the job's working state, both gone with the job.

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
from dataclasses import dataclass, field
from types import MappingProxyType, ModuleType
from typing import Any, TypeVar

from pydantic import BaseModel

from remora.config import ToolsConfig
from remora.errors import ToolError
from remora.workspace.base import FileStore

F = TypeVar("F", bound=Callable[..., Any])
M = TypeVar("M", bound=BaseModel)


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
    capabilities: Mapping[str, Capability] = field(default_factory=lambda: _NONE)
    """What the job's scripts may call: the capabilities its agent was checked against."""
    state: dict[str, Any] = field(default_factory=dict)
    """The job's working state (drafts kept between tool calls), shared by every call of
    the job and dropped with it; capability modules keep their entries under their own key."""

    def options(self, model: type[M]) -> M:
        """The operation's options as its typed ``model``: what the job carries, each
        option it leaves out at the model's default, so a capability never keeps a default
        of its own. Keys the model does not know (an agent run for another operation) are
        ignored."""
        given = self.system.get("options")
        known = {
            name: value
            for name, value in (given.items() if isinstance(given, Mapping) else ())
            if name in model.model_fields
        }
        return model.model_validate(known)

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


_NONE: Mapping[str, Capability] = MappingProxyType({})
_MARK = "__remora_capability__"


def capability(func: F) -> F:
    """Mark ``func`` as a capability (its first parameter must be the context); it is
    offered to scripts only where :func:`capabilities_of` lists its module."""
    Capability.of(func)
    setattr(func, _MARK, True)
    return func


def capabilities_of(*modules: ModuleType) -> Mapping[str, Capability]:
    """The capabilities marked in ``modules`` (those defined there, not imported), by name."""
    found: dict[str, Capability] = {}
    for module in modules:
        for value in vars(module).values():
            if getattr(value, _MARK, False) is True and value.__module__ == module.__name__:
                _add(found, Capability.of(value))
    return MappingProxyType(found)


def merge_capabilities(*registries: Mapping[str, Capability]) -> Mapping[str, Capability]:
    """One mapping of several; a name two of them give different functions is an error."""
    merged: dict[str, Capability] = {}
    for registry in registries:
        for described in registry.values():
            _add(merged, described)
    return MappingProxyType(merged)


def _add(into: dict[str, Capability], described: Capability) -> None:
    known = into.get(described.name)
    if known is not None and known.func is not described.func:
        raise TypeError(
            f"capability {described.name} is defined twice "
            f"({known.func.__module__} and {described.func.__module__})"
        )
    into[described.name] = described


def bind_capabilities(
    ctx: CapabilityContext, names: Iterable[str] | None = None
) -> dict[str, Callable[..., Any]]:
    """``name -> callable(**kwargs)`` with ``ctx`` bound, for all or the named capabilities
    of ``ctx.capabilities``."""
    registry = ctx.capabilities
    selected = sorted(registry) if names is None else list(names)
    bound: dict[str, Callable[..., Any]] = {}
    for name in selected:
        cap = registry.get(name)
        if cap is None:
            close = difflib.get_close_matches(name, list(registry), n=1)
            hint = f"did you mean '{close[0]}'?" if close else "known: " + ", ".join(registry)
            raise ToolError("TOOL_100", f"unknown capability '{name}'", hint)
        bound[name] = _bind(cap, ctx)
    return bound


def _bind(cap: Capability, ctx: CapabilityContext) -> Callable[..., Any]:
    @functools.wraps(cap.func)
    def call(*args: Any, **kwargs: Any) -> Any:
        return cap.func(ctx, *args, **kwargs)

    call.__signature__ = cap.signature  # type: ignore[attr-defined]
    return call
