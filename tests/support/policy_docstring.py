"""Scripted model policies that drive the real docstring agent on the synthetic package
(``tests/data/eval_package``), as the docstring evaluation's stand-in model.

A policy answers every turn of every job, so it decides from the request alone: the function
from the node context, the step from the tools that already answered. ``docstring_policy``
follows the agent's ideal sequence and writes the summary line the package's authors wrote
(read from the package itself), so its summaries match the originals exactly;
``submit_only_policy`` submits at once, writing nothing.
"""

from __future__ import annotations

import ast
import inspect
import re

from remora.model.base import ModelRequest, ToolCall
from remora.operations.docstring.expert import original_descriptions
from remora.testing import call
from tests.support.eval_context import EVAL_PACKAGE

FALLBACK = "Combine the values into a total."
_NODE = re.compile(r"`([^`]+)` in \S+:")


def original_docstrings() -> dict[str, str]:
    """The docstring of every top-level function of the package, by name."""
    found: dict[str, str] = {}
    for path in sorted((EVAL_PACKAGE / "shapes").glob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef) and (doc := ast.get_docstring(node)):
                found[node.name] = inspect.cleandoc(doc)
    return found


DOCSTRINGS = original_docstrings()
SUMMARIES = {name: doc.splitlines()[0].strip() for name, doc in DOCSTRINGS.items()}


def docstring_policy(request: ModelRequest) -> ToolCall:
    """The ideal sequence: the function's original summary line, then each item the host
    asks for in the original's words (submitting when the original does not describe it)."""
    name = _function(request)
    answered = {message.name for message in request.messages if message.role == "tool"}
    allowed = {spec.name for spec in request.allowed_specs()}
    if "write_docstring" not in answered:
        return call("write_docstring", summary=SUMMARIES.get(name, FALLBACK))
    asked = request.choices.get("item") if "describe" in allowed else None
    described = original_descriptions(DOCSTRINGS.get(name, ""))
    if asked and str(asked[0]) in described:
        return call("describe", item=str(asked[0]), text=described[str(asked[0])])
    return call("submit_result")


def submit_only_policy(request: ModelRequest) -> ToolCall:
    """Finish every job at once without writing anything."""
    return call("submit_result", summary="Nothing to do.")


def _function(request: ModelRequest) -> str:
    """The job's function, from the node context (``function `name` in path:``)."""
    text = "\n".join(message.content for message in request.messages if message.role == "user")
    found = _NODE.search(text)
    return found.group(1).rsplit(".", 1)[-1] if found else ""
