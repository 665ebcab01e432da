"""The sample_data agent's host side: observed calls as a JSON or YAML fixture file.

Each fixture is one argument list that called the function without an argument error (see
:mod:`.inputs`), with what it returned or raised (the exception by its class name, as a
reader's ``type(exc).__name__`` gives it). Files are written with the ``json`` and
``yaml`` libraries to ``fixtures/<module path>/<qualname>.<ext>``. A value that is not data
(a callable, a tuple, a set, an object) is written as ``{"$python": "<expression>"}``: an
expression to evaluate with the module's public names in scope; a result that has no such
expression is left out, with the reason. Whoever loads the file evaluates those expressions on
their own machine, so each is re-emitted by the host from what it can prove is data (see
:mod:`remora.tools.capabilities.arguments`), never copied from the sandbox's report; data
that merely looks like a marker (a dict with a ``"$python"`` key) is written as an
expression too.

Codes: TOOL_104 an unknown format, TOOL_705 nothing observed yet or no usable fixture.
"""

from __future__ import annotations

import ast
import json
import posixpath
from typing import Any

import yaml

from remora import pyast
from remora.errors import ToolError
from remora.operations.characterize.inputs import (
    Observation,
    draft,
    left_out,
    load_target,
    nothing_as_data,
    observe_cases,
)
from remora.tools.capabilities.arguments import (
    MAX_CASE_CHARS,
    Case,
    CaseError,
    Scope,
    check_value,
    parse_case,
)
from remora.tools.capabilities.project import module_names
from remora.tools.capabilities.registry import CapabilityContext, capability
from remora.tools.capabilities.store_io import write_text

FORMATS = ("json", "yaml")
MAX_FIXTURES = 12
PYTHON_MARKER = "$python"
_NOTE = (
    f'Values written as {{"{PYTHON_MARKER}": "..."}} are Python expressions (callables, '
    "tuples, sets, objects): evaluate them with the module's public names in scope."
)


@capability
def write_fixtures(
    ctx: CapabilityContext, path: str, qualname: str, format: str = "json"
) -> dict[str, Any]:
    """Write every validated fixture of the job to ``fixtures/<module>/<qualname>.<format>``."""
    kind = str(format).strip().lower().lstrip(".")
    kind = "yaml" if kind == "yml" else kind
    if kind not in FORMATS:
        raise ToolError("TOOL_104", f"'format' must be json or yaml, got {format!r}", "pass json")
    target = load_target(ctx, path, qualname)
    job = draft(ctx, target.path, qualname)
    if not job.observations:
        raise ToolError(
            "TOOL_705",
            f"no fixture of {qualname} has been validated yet",
            "call validate_fixtures first",
        )
    usable = _usable(job.observations)
    if not usable:
        problems = sorted({o.verdict for o in job.observations})
        raise ToolError(
            "TOOL_705",
            f"no fixture called {qualname} without an argument error ({', '.join(problems)})",
            "propose fixtures whose values fit the parameters, then validate them",
        )
    entries: list[dict[str, Any]] = []
    notes: list[dict[str, str]] = []
    for observation in usable:
        try:
            entries.append(fixture(observation, target.allowed))
        except CaseError as exc:
            notes.append(left_out(observation, f"left out: {exc}"))
    if not entries:
        raise nothing_as_data(f"no fixture of {qualname}", notes)
    module = module_names(target.path)[0]
    data = {
        "function": f"{module}.{qualname}",
        "generated_by": "remora sample_data",
        "note": _NOTE,
        "fixtures": entries,
    }
    text = (
        json.dumps(data, indent=2, ensure_ascii=False) + "\n"
        if kind == "json"
        else yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
    )
    loaded = json.loads(text) if kind == "json" else yaml.safe_load(text)
    if loaded != data:
        raise ToolError("TOOL_705", "the fixtures do not survive a round trip", "use json")
    out = fixture_path(target.path, qualname, kind)
    write_text(ctx, out, text)
    omitted = [f for f in data["fixtures"] if "returns_omitted" in f]
    raised = [f["raises"]["type"] for f in entries if "raises" in f]
    job.fixture_report = {
        "path": out,
        "fixtures": len(entries),
        "raising": len(raised),
        "raised_types": sorted(set(raised)),
        "empty": sum(1 for f in entries if shows_nothing(f)),
        "results_omitted": len(omitted),
        "format": kind,
    }
    if notes:
        job.fixture_report["left_out"] = notes
    return job.fixture_report


@capability
def fixtures_result(
    ctx: CapabilityContext, path: str, qualname: str, format: str = "json"
) -> dict[str, Any]:
    """For submit: the written fixture file (``ok``) or why there is none (``reason``).

    When no file was written yet, the fixtures are validated (if needed) and written first.
    """
    try:
        target = load_target(ctx, path, qualname)
        job = draft(ctx, target.path, qualname)
        if job.fixture_report and ctx.store.exists(job.fixture_report["path"]):
            return {"ok": True, **job.fixture_report}
        if not job.observations:
            observe_cases(ctx, path, qualname, job.model_inputs)
        return {"ok": True, **write_fixtures(ctx, path, qualname, format)}
    except ToolError as exc:
        return {"ok": False, "reason": exc.message, "code": exc.code}


def fixture_path(module_path: str, qualname: str, kind: str) -> str:
    """``fixtures/<module path without .py>/<qualname>.<kind>``."""
    stem = posixpath.splitext(module_path)[0]
    return posixpath.join("fixtures", stem, f"{qualname}.{kind}")


def _usable(observations: list[Observation]) -> list[Observation]:
    """Kept observations, one per argument list, at most :data:`MAX_FIXTURES`, in the order
    they ran; past the cap, calls that return are kept before calls that raise (samples of
    the function's work before more of its guards)."""
    seen: set[tuple[str, str | None]] = set()
    usable: list[Observation] = []
    for observation in observations:
        key = (observation.case, observation.receiver)
        if observation.verdict == "kept" and key not in seen:
            seen.add(key)
            usable.append(observation)
    if len(usable) <= MAX_FIXTURES:
        return usable
    returning = [o for o in usable if o.raised is None][:MAX_FIXTURES]
    raising = [o for o in usable if o.raised is not None][: MAX_FIXTURES - len(returning)]
    chosen = {id(o) for o in returning + raising}
    return [o for o in usable if id(o) in chosen]


def fixture(observation: Observation, scope: Scope) -> dict[str, Any]:
    """One fixture: arguments as data (or ``$python``), then the observed outcome.

    The arguments and the receiver are re-checked (CaseError: the call cannot be written),
    and a ``$python`` result is re-emitted from the host's own check of it, since the child
    that reported it ran project code; a result that is not data is omitted with the reason.
    """
    case = parse_case(observation.case, scope) if observation.case.strip() else Case(())
    entry: dict[str, Any] = {}
    if observation.receiver:
        receiver = check_value(observation.receiver, scope, MAX_CASE_CHARS)
        entry["receiver"] = {PYTHON_MARKER: receiver}
    entry["args"] = [as_data(_expression(text)) for text in case.args]
    entry["kwargs"] = {name: as_data(_expression(text)) for name, text in case.kwargs}
    if observation.raised is not None:
        entry["raises"] = {"type": class_name(observation.raised["type"])}
        if observation.varies is None:
            entry["raises"]["message"] = observation.raised["message"]
    elif observation.varies is not None:
        entry["returns_omitted"] = (
            "the result varies from run to run (it draws random numbers)"
            + _held(observation.varies)
        )
    else:
        returned = observation.returned or {}
        literal = returned.get("literal")
        if "json" in returned and not _has_marker(returned["json"]):
            entry["returns"] = returned["json"]
        elif "json" in returned or literal is not None:
            source = str(literal) if literal is not None else repr(returned["json"])
            try:
                entry["returns"] = {PYTHON_MARKER: check_value(source, scope)}
            except CaseError as exc:
                entry["returns_omitted"] = f"the result is not written: {exc}"
        else:
            entry["returns_omitted"] = (
                f"a {returned.get('type', 'value')} cannot be written as data or as an "
                "expression that rebuilds it"
            )
        if returned.get("kind") == "iterator":
            entry["returns_kind"] = "iterator (items listed)"
            if returned.get("items_truncated"):
                entry["returns_kind"] = "iterator (first items listed)"
    if observation.stdout:
        entry["stdout"] = observation.stdout
    return entry


def _held(varies: dict[str, Any]) -> str:
    """What held in every run of a varying result, in words."""
    held = [
        f"{label} {varies[key]}"
        for key, label in (("type", "type"), ("len", "length"), ("sorted", "sorted items"))
        if varies.get(key) is not None
    ]
    return f"; in every run: {', '.join(held)}" if held else ""


def class_name(dotted: object) -> str:
    """The exception class as a reader matches it, ``type(exc).__name__``: the child reports
    ``dateutil.parser._parser.ParserError``, a module path no reader imports from."""
    return str(dotted).rsplit(".", 1)[-1]


def shows_nothing(entry: dict[str, Any]) -> bool:
    """Whether a fixture returned an empty value (None, '', [], {}, (), 0, False) and printed
    nothing: it shows the call runs, not what it gives."""
    if "returns" not in entry or entry.get("stdout"):
        return False
    value = entry["returns"]
    if isinstance(value, dict) and set(value) == {PYTHON_MARKER}:
        try:
            value = ast.literal_eval(str(value[PYTHON_MARKER]))
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return False
    return not value


def _expression(text: str) -> ast.expr:
    return pyast.parse(text, mode="eval").body


def as_data(node: ast.expr) -> Any:
    """The argument as JSON data when it is exactly that, else ``{"$python": source}``: a
    dict holding the marker key would be read back as an expression, so it is one."""
    try:
        value = ast.literal_eval(node)
        same = json.loads(json.dumps(value, allow_nan=False)) == value and _plain_types(value)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        same = False
    if same and not _has_marker(value):
        return value
    return {PYTHON_MARKER: ast.unparse(node)}


def _has_marker(value: Any) -> bool:
    """Whether a dict anywhere in ``value`` has the ``$python`` key (iteratively: the value
    came from the child, nested as deep as it likes)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if PYTHON_MARKER in item:
                return True
            stack += item.values()
        elif isinstance(item, list):
            stack += item
    return False


def _plain_types(value: Any) -> bool:
    """Only JSON's own types (a tuple would come back a list, an int key a string)."""
    if value is None or isinstance(value, bool | int | float | str):
        return True
    if isinstance(value, list):
        return all(_plain_types(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain_types(v) for k, v in value.items())
    return False
