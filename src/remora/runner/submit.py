"""Turn an accepted ``submit_result`` call into the AgentResult, trusting nothing.

The model's claims are only claims: the status must be one the contract knows, the
submit tool (which may verify things on the host) can override what the model said,
and ``changed_files`` always comes from the workspace itself. Where the model's claim
and the workspace disagree, the difference is reported in ``details``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from remora.runner.result import AgentResult, AgentStatus, AgentTelemetry
from remora.tools.result import ToolResult

SUBMIT_STATUSES: tuple[AgentStatus, ...] = ("success", "partial", "left", "failed", "skipped")
_KNOWN_ARGUMENTS = frozenset({"status", "summary", "details", "changed_files", "error"})


def normalize_path(path: str) -> str:
    """Compare paths the way the workspace stores them: POSIX, relative, no ``./``."""
    text = path.strip().replace("\\", "/")
    while text.startswith("./"):
        text = text[2:]
    return text


def _claimed_files(value: Any) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = [value] if value.strip() else []
    if not isinstance(value, list):
        return None
    return [normalize_path(item) for item in value if isinstance(item, str) and item.strip()]


def submitted_result(
    *,
    arguments: dict[str, Any],
    tool_result: ToolResult,
    operation: str,
    node_id: str,
    workspace_id: str | None,
    changed: Iterable[str],
    telemetry: AgentTelemetry,
) -> AgentResult:
    """The AgentResult of a successful submit: the arguments, checked and reconciled."""
    verified = tool_result.result if isinstance(tool_result.result, dict) else {}
    details: dict[str, Any] = {}
    raw_details = arguments.get("details")
    if isinstance(raw_details, dict):
        details.update(raw_details)
    elif raw_details not in (None, ""):
        details["details"] = raw_details
    for key, value in arguments.items():
        if key not in _KNOWN_ARGUMENTS:
            details.setdefault(key, value)
    if isinstance(verified.get("details"), dict):
        details.update(verified["details"])

    claimed_status = verified.get("status", arguments.get("status", "success"))
    normalized = claimed_status.strip().lower() if isinstance(claimed_status, str) else ""
    status: AgentStatus = next(
        (known for known in SUBMIT_STATUSES if known == normalized), "failed"
    )
    if normalized not in SUBMIT_STATUSES:
        details["claimed_status"] = claimed_status
    if tool_result.outcome != "success":
        details["submit_outcome"] = tool_result.outcome

    summary = verified.get("summary") or arguments.get("summary") or tool_result.summary
    summary = summary if isinstance(summary, str) else str(summary)

    actual = sorted({normalize_path(path) for path in changed})
    claimed = _claimed_files(arguments.get("changed_files"))
    if claimed is not None:
        not_changed = sorted(set(claimed) - set(actual))
        not_claimed = sorted(set(actual) - set(claimed))
        if not_changed:
            details["claimed_but_not_changed"] = not_changed
        if not_claimed:
            details["changed_but_not_claimed"] = not_claimed

    error: str | None = None
    if status == "failed":
        reported = arguments.get("error")
        error = f"agent reported failure: {reported if isinstance(reported, str) else summary}"
    return AgentResult(
        status=status,
        operation=operation,
        node_id=node_id,
        workspace_id=workspace_id,
        changed_files=actual,
        summary=summary,
        details=details,
        error=error,
        telemetry=telemetry,
    )
