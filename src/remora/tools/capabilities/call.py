"""``call_function``: call one function of the workspace in an isolated, time-limited process.

The call runs the child script ``_call_child.py`` with ``python -P -s`` in a
:func:`~remora.tools.isolation.project_sandbox` (no network, nothing outside the project and
the Python installation visible, the project's files writable only inside the sandbox),
with a scrubbed environment (PATH, LANG, PYTHONPATH = the project, a private HOME,
PYTHONDONTWRITEBYTECODE), rlimits and a hard timeout. What the function writes or deletes
is discarded with the sandbox: a call observes, it never changes the workspace.
Functions, classes (constructed), staticmethods and classmethods can be called; instance
methods need an instance and are refused with an explanation.

Codes: TOOL_101 no such module file, TOOL_104 an unusable timeout, TOOL_201 the call timed
out, TOOL_701 ``args_json`` is not valid, TOOL_702 the child died without reporting,
TOOL_703 the qualname cannot be called (missing, instance method, property, nested function).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from remora.errors import ToolError
from remora.tools.capabilities.registry import CapabilityContext, capability
from remora.tools.capabilities.store_io import checked_path, not_found
from remora.tools.capabilities.values import as_float
from remora.tools.isolation import project_sandbox
from remora.tools.process import import_roots

CHILD = Path(__file__).with_name("_call_child.py")
_OUTPUT_TAIL = 2000


@capability
def call_function(
    ctx: CapabilityContext,
    module_path: str,
    qualname: str,
    args_json: str | list[Any] | dict[str, Any] = "[]",
    timeout: float | None = None,
) -> dict[str, Any]:
    """Call ``qualname`` from the module file ``module_path`` with JSON arguments.

    ``args_json`` is a JSON list of positional arguments, or an object
    ``{"args": [...], "kwargs": {...}}`` (any other object is taken as keyword arguments).
    The result holds either ``returned`` (repr, type and, when it round-trips exactly,
    json) or ``raised`` (type, message, traceback), plus the tails of stdout and stderr.
    """
    relative = checked_path(ctx, module_path)
    if not relative.endswith(".py"):
        raise ToolError(
            "TOOL_101", f"'{relative}' is not a Python module", "pass the path of a .py file"
        )
    if not ctx.store.exists(relative):
        raise not_found(ctx, relative, "module")
    if not isinstance(qualname, str) or not all(p.isidentifier() for p in qualname.split(".")):
        raise ToolError(
            "TOOL_703", f"'{qualname}' is not a qualified name", "use a name such as 'Class.method'"
        )
    args, kwargs = parse_arguments(args_json)
    limit = ctx.time_left(ctx.config.subprocess_timeout)
    seconds = min(ctx.config.timeout if timeout is None else as_float(timeout, "timeout"), limit)
    with project_sandbox(ctx.store, ctx.config, harvest=False) as box:
        request, result_file = box.exchange / "request.json", box.exchange / "result.json"
        roots = import_roots(box.root)
        request.write_text(
            json.dumps(
                {
                    "file": str(box.root / relative),
                    "roots": [str(root) for root in roots],
                    "qualname": qualname,
                    "args": args,
                    "kwargs": kwargs,
                }
            ),
            encoding="utf-8",
        )
        completed = box.run_python(
            CHILD,
            [str(request), str(result_file)],
            pythonpath=roots,
            timeout=seconds,
            what=f"the call to {qualname}",
        )
        report = result_file.read_text(encoding="utf-8") if result_file.is_file() else None
    if report is None:
        detail = (completed.stderr.strip().splitlines() or ["no output"])[-1]
        raise ToolError(
            "TOOL_702",
            f"the process calling {qualname} exited (code {completed.returncode}) without "
            f"reporting a result: {detail}",
            "the code may call os._exit or crash the interpreter; call something else",
        )
    outcome: dict[str, Any] = json.loads(report)
    if "error" in outcome:
        raise ToolError(
            "TOOL_703",
            f"cannot call '{qualname}' from {relative}: {outcome['error']['message']}",
            "call a module-level function, a class, a staticmethod or a classmethod",
        )
    outcome["stdout"] = completed.stdout[-_OUTPUT_TAIL:]
    outcome["stderr"] = completed.stderr[-_OUTPUT_TAIL:]
    outcome["duration"] = round(completed.duration, 3)
    return outcome


def parse_arguments(
    args_json: str | list[Any] | dict[str, Any],
) -> tuple[list[Any], dict[str, Any]]:
    """(args, kwargs) from the accepted ``args_json`` shapes, or TOOL_701."""
    value: Any = args_json
    if isinstance(args_json, str):
        try:
            value = json.loads(args_json) if args_json.strip() else []
        except json.JSONDecodeError as exc:
            raise ToolError(
                "TOOL_701",
                f"args_json is not valid JSON: {exc.msg} at position {exc.pos}",
                'pass a JSON list such as [1, "a"] or {"args": [1], "kwargs": {"b": 2}}',
            ) from None
    if isinstance(value, list):
        return value, {}
    if isinstance(value, dict):
        if value and set(value) <= {"args", "kwargs"}:
            args, kwargs = value.get("args", []), value.get("kwargs", {})
        else:
            args, kwargs = [], value
        if isinstance(args, list) and isinstance(kwargs, dict):
            return args, {str(key): item for key, item in kwargs.items()}
    raise ToolError(
        "TOOL_701",
        f"args_json must be a JSON list or object, got {type(value).__name__}",
        'pass a JSON list such as [1, "a"] or {"args": [1], "kwargs": {"b": 2}}',
    )
