"""A scripted stand-in for the model in the lint agent: it rewrites the lines of the issue
asked about as ruff's unsafe fix would leave them, when the question shows that fix, and
otherwise answers with a line that does not parse (a model's failure the host must refuse).

It keeps no state: the question is the latest tool result, and the grammar's choices hold
the code and line asked."""

from __future__ import annotations

import re

from remora.model.base import ModelRequest, ToolCall
from remora.testing import call

CANDIDATE = re.compile(r"would give:\n(.*?)\nCall rewrite_lines", re.DOTALL)
BROKEN = "if (:"


def lint_policy(request: ModelRequest) -> ToolCall:
    """``rewrite_lines`` for the issue asked, or ``submit_result`` when none is asked."""
    allowed = {spec.name for spec in request.allowed_specs()}
    if "rewrite_lines" not in allowed or not request.choices.get("code"):
        return call("submit_result")
    found = CANDIDATE.search(request.messages[-1].content)
    text = found.group(1) if found else BROKEN
    [code] = request.choices["code"]
    [line] = request.choices["line"]
    return call("rewrite_lines", code=code, line=line, text=text)
