"""Run calls written as Python source in the sandbox and record what each did.

Every operation that grounds its work in observed behaviour (the test agent's cases, the
docstring agent's evidence) runs its calls here: the child ``_call_child.py`` in observe mode
evaluates each case's arguments in the module's namespace, calls, and appends one JSON record
per case; a case that kills the process loses only itself, and the rest are run again in a
new process.

Codes: TOOL_106 the module cannot be imported or the name cannot be called.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from dataclasses import dataclass, field
from typing import Any

from remora.errors import ToolError
from remora.tools.capabilities.arguments import Case
from remora.tools.capabilities.call import CHILD
from remora.tools.capabilities.registry import CapabilityContext
from remora.tools.interpreter import remoras_packages
from remora.tools.isolation import Sandbox, project_sandbox
from remora.tools.process import import_roots

CASE_TIMEOUT = 2.0
"""Seconds one case may run."""
ITEMS_LIMIT = 50
"""Items of a returned iterator that are consumed and recorded: one with more is taken as
endless, and its test pins its first few."""
_RELAUNCHES = 4


@dataclass
class ObservedRun:
    """``records`` by case id (a case during which the process died is ``{"crashed": why}``);
    ``clock_unmoved`` says why the clock could not be moved, when it was asked to be;
    ``forged`` counts result lines the child did not sign (the project's code wrote them),
    which are ignored."""

    records: dict[int, dict[str, Any]] = field(default_factory=dict)
    clock_unmoved: str | None = None
    forged: int = 0


def observe_in(
    ctx: CapabilityContext,
    box: Sandbox,
    path: str,
    qualname: str,
    cases: list[dict[str, Any]],
    *,
    method: bool = False,
    span: tuple[int, int] = (0, 0),
    seed: str = "1",
    travel: float | None = None,
    call_args: list[str] | None = None,
) -> ObservedRun:
    """Run ``cases`` (``{"id", "args": [source], "kwargs": [[name, source]], "receiver"}``)
    of ``qualname`` in ``path`` inside ``box``, with ``PYTHONHASHSEED=seed``; the arcs run in
    the lines of ``span`` are recorded. With ``travel``, the wall clock reads that moment (a
    POSIX timestamp) in the child. A callable a case returns is called on each of
    ``call_args`` (argument lists as source the host has checked as data)."""
    lend = remoras_packages() if box.python.shares_remoras_packages else []
    run = ObservedRun()
    pending = list(cases)
    for launch in range(_RELAUNCHES + 1):
        if not pending:
            break
        results = box.exchange / f"observe-{seed}-{launch}.jsonl"
        request = box.exchange / f"observe-{seed}-{launch}.json"
        roots = import_roots(box.root)
        key = secrets.token_bytes(32)
        request.write_text(
            json.dumps(
                {
                    "mode": "observe",
                    "key": key.hex(),
                    "file": str(box.root / path),
                    "roots": [str(root) for root in roots],
                    "qualname": qualname,
                    "method": method,
                    "cases": pending,
                    "span": list(span),
                    "cwd": str(box.exchange / f"cwd-{seed}-{launch}"),
                    "case_timeout": CASE_TIMEOUT,
                    "items_limit": ITEMS_LIMIT,
                    "travel": travel,
                    "lend": lend,
                    "call_args": list(call_args or []),
                }
            ),
            encoding="utf-8",
        )
        budget = ctx.time_left(
            min(ctx.config.subprocess_timeout, 10 + CASE_TIMEOUT * 2 * len(pending))
        )
        try:
            completed = box.run_python(
                CHILD,
                [str(request), str(results)],
                pythonpath=roots,
                timeout=budget,
                what=f"the cases of {qualname}",
                env={"PYTHONHASHSEED": seed},
            )
            died = completed.stderr.strip().splitlines()[-1:] if completed.returncode else []
        except ToolError as exc:
            died = [exc.message]
        lines = results.read_text(encoding="utf-8").splitlines() if results.is_file() else []
        for line in lines:
            record = _authentic(line, key)
            if record is None:
                run.forged += 1
                continue
            if "travel_unavailable" in record:
                run.clock_unmoved = str(record["travel_unavailable"])
                continue
            if "error" in record:
                raise ToolError(
                    "TOOL_106",
                    f"cannot call '{qualname}': {record['error']['message']}",
                    "study a module-level function or a method",
                )
            if record.get("stage") == "import":
                raise ToolError(
                    "TOOL_106",
                    f"{path} cannot be imported: {record['raised']['type']}: "
                    f"{record['raised']['message']}",
                    "the module must import without error to run its functions",
                )
            run.records[record["id"]] = record
        pending = [c for c in pending if c["id"] not in run.records]
        if pending:
            crashed = pending.pop(0)
            run.records[crashed["id"]] = {"crashed": (died or ["the process exited"])[-1]}
    return run


def _authentic(line: str, key: bytes) -> dict[str, Any] | None:
    """The record of a result line the child signed with the run's ``key`` (see
    ``_call_child.signed``), or None for a line the project's code wrote or altered: the
    child deletes the request holding the key before it imports any project code."""
    mac, _, text = line.partition(" ")
    expected = hmac.new(key, text.encode("utf-8"), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(mac, expected):
        return None
    try:
        record = json.loads(text)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def observe_request(number: int, case: Case, receiver: str | None = None) -> dict[str, Any]:
    """``case`` as :func:`observe_in` and :func:`observe_calls` take it, with id ``number``
    (``receiver``: the source of the instance a method is called on)."""
    return {
        "id": number,
        "args": list(case.args),
        "kwargs": list(case.kwargs),
        "receiver": receiver,
    }


def observe_calls(
    ctx: CapabilityContext, path: str, qualname: str, cases: list[dict[str, Any]]
) -> dict[int, dict[str, Any]]:
    """:func:`observe_in` once, in a sandbox of its own: the records by case id."""
    with project_sandbox(ctx.store, ctx.config, harvest=False) as box:
        return observe_in(ctx, box, path, qualname, cases).records
