"""A scripted stand-in for the model in the lint agent, deciding each turn from the request.

It answers every turn of every job (concurrent jobs interleave freely), so it keeps no
state: it reads the conversation. First it calls ``run_linter``; then ``apply_fix`` with
the code and line of the first fixable issue the latest listing shows (``run_linter``'s
report or ``apply_fix``'s "Still fixable"), skipping those already asked for since that
listing (a failed fix lists nothing new); when none is left, ``submit_result``.
"""

from __future__ import annotations

import json
import re

from remora.model.base import Message, ModelRequest, ToolCall
from remora.testing import call

FIXABLE = re.compile(r"line (\d+) ([A-Z]+[0-9]+) \((?:ruff_safe|rewrite|ruff_unsafe)\)")
LISTINGS = ("run_linter", "apply_fix")


def lint_policy(request: ModelRequest) -> ToolCall:
    """The next call of an ideal lint session, as far as the conversation shows it."""
    allowed = {spec.name for spec in request.allowed_specs()}
    messages = request.messages
    listed = [i for i, message in enumerate(messages) if _listing(message)]
    if not listed:
        return call("run_linter")
    latest = listed[-1]
    issues = [(code, int(line)) for line, code in FIXABLE.findall(_summary(messages[latest]))]
    asked = {
        (str(item.arguments.get("code")), int(item.arguments.get("line", 0)))
        for message in messages[latest + 1 :]
        for item in message.tool_calls
        if item.name == "apply_fix"
    }
    pending = [issue for issue in issues if issue not in asked]
    if pending and "apply_fix" in allowed:
        code, line = pending[0]
        return call("apply_fix", code=code, line=line)
    if "submit_result" not in allowed and issues:
        code, line = issues[0]
        return call("apply_fix", code=code, line=line)
    return call("submit_result", summary="Fixed the fixable lint issues.")


def _response(message: Message) -> dict[str, object]:
    try:
        content = json.loads(message.content)
    except json.JSONDecodeError:
        return {}
    response = content.get("response") if isinstance(content, dict) else None
    return response if isinstance(response, dict) else {}


def _listing(message: Message) -> bool:
    """A successful tool result that lists the file's fixable issues."""
    return (
        message.role == "tool"
        and message.name in LISTINGS
        and _response(message).get("outcome") == "success"
    )


def _summary(message: Message) -> str:
    return str(_response(message).get("summary", ""))
