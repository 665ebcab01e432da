"""The tool runtime: one tool call in, one ToolResult out, whatever the script does.

:class:`ToolRuntime` is what the agent loop calls. For a call it loads and checks the
tool's ``.pym`` (cached per file version), validates the model's arguments, fills the
system inputs from the job, runs the tool's context providers and then the tool in the
sandbox, binding exactly the capabilities the script declares, and turns the script's
value into a :class:`~remora.tools.result.ToolResult`:

- a dict with an ``"outcome"`` key is the tool-result contract itself; it is validated,
  and a dict that breaks the contract (unknown key, bad outcome, empty summary, ...)
  becomes an ``error`` result. An ``error`` outcome without ``error`` text gets its
  summary as the error;
- any other JSON-like value (str, number, bool, None, list, a dict without
  ``"outcome"``) is a success whose ``result`` is that value and whose summary says
  what the tool returned;
- a value that is not JSON-like (bytes, sets, objects, non-string keys) is an error.

Context providers are ``.pym`` scripts run before their tool with the same system inputs
and those tool arguments whose names they declare. Each one's text (a string value, a
contract result's summary, or other values as compact JSON) is prepended, one line each,
to the tool result's ``summary`` so the model reads it first and it survives history
trimming. A provider that fails adds a line saying so; the tool still runs.

Every call has one wall-clock deadline, ``tools.call_timeout`` from its start or the
caller's ``deadline`` (the job's) if that comes first. It covers the context providers,
the script (its execution and sleeps) and the host capabilities it calls, which take the
time they may wait, subprocesses included, from :meth:`CapabilityContext.time_left`.

Prints inside scripts become :class:`~remora.events.SandboxPrintEvent` events tagged
with ``run_id``/``job_id`` when the runner puts those keys into the system mapping.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import math
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from remora.config import ToolsConfig
from remora.errors import RemoraError
from remora.events import Emitter, NullEmitter, SandboxPrintEvent
from remora.tools.capabilities import CapabilityContext
from remora.tools.pym import PymScript, check_script_file, render_diagnostics, validate_value
from remora.tools.result import ToolResult, cut_text
from remora.tools.sandbox import PrintSink, Sandbox, SandboxRun
from remora.tools.script_tool import ScriptTool

__all__ = ["ToolRuntime", "to_tool_result"]

_SUMMARY_PREVIEW = 200


class ToolRuntime:
    """Runs tool calls in a long-lived sandbox pool; a context manager, safe across threads."""

    def __init__(
        self,
        config: ToolsConfig,
        emitter: Emitter | None = None,
    ) -> None:
        self.config = config
        self.emitter: Emitter = emitter or NullEmitter()
        self.sandbox = Sandbox(config)

    def __enter__(self) -> ToolRuntime:
        self.sandbox.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the sandbox workers; calls after this return an error result."""
        self.sandbox.close()

    async def run(
        self,
        tool: ScriptTool,
        arguments: Mapping[str, Any],
        context: CapabilityContext,
        *,
        deadline: float | None = None,
    ) -> ToolResult:
        """Run ``tool`` with the model's ``arguments``; never raises for script problems.

        ``deadline`` (a ``time.monotonic()`` value) ends the call earlier than
        ``tools.call_timeout`` would.
        """
        return await asyncio.to_thread(self.run_sync, tool, arguments, context, deadline=deadline)

    def run_sync(
        self,
        tool: ScriptTool,
        arguments: Mapping[str, Any],
        context: CapabilityContext,
        *,
        deadline: float | None = None,
    ) -> ToolResult:
        """:meth:`run` on the calling thread (benchmarks, synchronous callers)."""
        own = time.monotonic() + self.config.call_timeout
        context = dataclasses.replace(
            context, deadline=own if deadline is None else min(own, deadline)
        )
        try:
            result = self._run(tool, arguments, context)
        except RemoraError as exc:
            return ToolResult.failure(
                f"the {tool.name} tool cannot run: {exc.render()}; use another tool",
                summary=f"{tool.name} cannot run ({exc.code})",
            )
        return self._capped(result)

    def _capped(self, result: ToolResult) -> ToolResult:
        """``result`` with its summary and error cut to ``tools.max_result_chars`` (they go to
        events and transcripts as they are; the model's view is cut by the runner)."""
        limit = self.config.max_result_chars
        if len(result.summary) <= limit and len(result.error or "") <= limit:
            return result
        error = cut_text(result.error, limit) if result.error else result.error
        return result.model_copy(
            update={"summary": cut_text(result.summary, limit), "error": error}
        )

    def _run(
        self, tool: ScriptTool, arguments: Mapping[str, Any], context: CapabilityContext
    ) -> ToolResult:
        script = self._checked(tool.pym, tool.name, context)
        if isinstance(script, ToolResult):
            return script
        problem = _argument_problem(script, tool, arguments)
        if problem:
            return ToolResult.failure(problem)
        inputs = _bind_inputs(script, arguments, context.system)
        if isinstance(inputs, str):
            return ToolResult.failure(inputs)
        notes = [self._provide(path, arguments, context) for path in tool.context_providers]
        run = self._execute(script, inputs, context)
        if run.failure is not None:
            result = ToolResult.failure(
                f"{tool.name} failed: {run.failure.message}",
                summary=f"{tool.name} failed ({run.failure.kind})",
            )
        else:
            result = to_tool_result(run.value, tool.name)
        if notes:
            result = result.model_copy(update={"summary": "\n".join([*notes, result.summary])})
        return result

    def _checked(
        self, path: Path, tool_name: str, context: CapabilityContext
    ) -> PymScript | ToolResult:
        """The checked script, or the error result a broken script earns its tool; checked
        against the capabilities the job may call (``context.capabilities``)."""
        script, problems = check_script_file(path, context.capabilities)
        if problems:
            return ToolResult.failure(
                f"the {tool_name} tool is broken ({render_diagnostics(problems[:3])}); "
                "use another tool or call submit_result",
                summary=f"{tool_name} is broken ({problems[0].code})",
            )
        return script

    def _execute(
        self, script: PymScript, inputs: Mapping[str, Any], context: CapabilityContext
    ) -> SandboxRun:
        functions: dict[str, Callable[..., Any]] = {
            ext.name: functools.partial(context.capabilities[ext.name].func, context)
            for ext in script.externals
        }
        return self.sandbox.run(
            script.body,
            script_name=script.path.name,
            inputs=inputs,
            functions=functions,
            on_print=self._print_sink(script.path, context.system),
            deadline=context.deadline,
        )

    def _print_sink(self, path: Path, system: Mapping[str, Any]) -> PrintSink:
        label = "/".join(path.parts[-2:])
        run_id = system.get("run_id")
        job_id = system.get("job_id")

        def sink(stream: str, text: str) -> None:
            self.emitter.emit(
                SandboxPrintEvent(
                    script=label,
                    stream=stream,
                    text=text,
                    run_id=run_id if isinstance(run_id, str) else None,
                    job_id=job_id if isinstance(job_id, str) else None,
                )
            )

        return sink

    def _provide(self, path: Path, arguments: Mapping[str, Any], context: CapabilityContext) -> str:
        """One context provider's text, or a line saying why it is missing."""
        name = path.stem
        try:
            checked, problems = check_script_file(path, context.capabilities)
        except RemoraError as exc:
            return f"[context {name} unavailable: {exc.render()}]"
        if problems:
            return f"[context {name} unavailable: {render_diagnostics(problems[:3])}]"
        declared = {decl.name for decl in checked.inputs}
        passed = {key: value for key, value in arguments.items() if key in declared}
        inputs = _bind_inputs(checked, passed, context.system)
        if isinstance(inputs, str):
            return f"[context {name} unavailable: {inputs}]"
        run = self._execute(checked, inputs, context)
        if run.failure is not None:
            return f"[context {name} unavailable: {run.failure.message}]"
        value = run.value
        if isinstance(value, str):
            return value
        provided = to_tool_result(value, name)
        if provided.outcome == "error":
            return f"[context {name} unavailable: {provided.error}]"
        if isinstance(value, dict) and "outcome" in value:
            return provided.summary
        return json.dumps(provided.result, ensure_ascii=False)


def _argument_problem(
    script: PymScript, tool: ScriptTool, arguments: Mapping[str, Any]
) -> str | None:
    schema = script.parameters_schema(tool.inputs_override)
    properties: dict[str, Any] = schema["properties"]
    unknown = sorted(set(arguments) - set(properties))
    if unknown:
        takes = ", ".join(properties) or "no arguments"
        return f"{tool.name} has no argument {', '.join(map(repr, unknown))}; it takes: {takes}"
    missing = [name for name in schema["required"] if name not in arguments]
    if missing:
        return f"{tool.name} needs the argument {', '.join(map(repr, missing))}"
    for name, value in arguments.items():
        problem = validate_value(properties[name], value, f"argument '{name}'")
        if problem:
            return f"{tool.name}: {problem}"
    return None


def _bind_inputs(
    script: PymScript, arguments: Mapping[str, Any], system: Mapping[str, Any]
) -> dict[str, Any] | str:
    """Globals for the script: arguments, system values and defaults; or what is missing."""
    inputs: dict[str, Any] = {}
    for decl in script.inputs:
        source = system if decl.system else arguments
        if decl.name in source:
            inputs[decl.name] = source[decl.name]
        elif not decl.required:
            inputs[decl.name] = decl.default
        elif decl.system:
            return (
                f"the runner did not provide the system input '{decl.name}' that "
                f"{script.path.name} needs"
            )
        else:
            return f"{script.path.name} needs '{decl.name}', which the call did not pass"
    return inputs


class _NotJson(Exception):
    """A script value with no JSON equivalent."""


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        raise _NotJson(f"the non-finite number {value}")
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        return [_jsonable(item) for item in value]
    if isinstance(value, dict):
        result: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise _NotJson(f"a dict with a non-string key {key!r}")
            result[key] = _jsonable(item)
        return result
    name = getattr(value, "name", None) if type(value).__name__.startswith("Monty") else None
    raise _NotJson(f"an object of type {name or type(value).__name__}")


def to_tool_result(value: Any, tool_name: str) -> ToolResult:
    """A script's value as a ToolResult, following the rules in the module docstring."""
    try:
        data = _jsonable(value)
    except _NotJson as exc:
        return ToolResult.failure(
            f"the {tool_name} tool returned {exc}, which is not JSON; this is a bug in the "
            "tool, so use another tool or call submit_result",
            summary=f"{tool_name} returned an invalid result",
        )
    if isinstance(data, dict) and "outcome" in data:
        try:
            result = ToolResult.model_validate(data)
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(str(part) for part in error["loc"]) or "result"
            return ToolResult.failure(
                f"the {tool_name} tool returned a result that breaks the tool-result contract "
                f"({where}: {error['msg']}); use another tool or call submit_result",
                summary=f"{tool_name} returned an invalid result",
            )
        if not result.summary.strip():
            return ToolResult.failure(
                f"the {tool_name} tool returned a result without a summary; use another tool "
                "or call submit_result",
                summary=f"{tool_name} returned an invalid result",
            )
        if result.outcome == "error" and not result.error:
            result = result.model_copy(update={"error": result.summary})
        return result
    return ToolResult(outcome="success", summary=_preview(tool_name, data), result=data)


def _preview(tool_name: str, value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    if len(text) > _SUMMARY_PREVIEW:
        text = text[: _SUMMARY_PREVIEW - 3] + "..."
    return f"{tool_name} returned {text}"
