"""Scripted model policies that drive the real test and sample_data agents on the synthetic
package (``tests/data/eval_package``), as the characterization evaluation's stand-in model.

A policy answers every turn of every job, so it decides from the request alone: the agent
from the tools offered, the function from the node context, the step from the tools that
already answered. Each agent proposes the argument lists a sensible model would propose for
that function (none for a function it does not know), once.
"""

from __future__ import annotations

import re

from remora.model.base import ModelRequest, ToolCall
from remora.testing import call

PROPOSALS: dict[str, list[str]] = {
    "clamp": ["5, 0, 10", "-3, 0, 10", "20, 0, 10", "1, 2, 0"],
    "area": ["2", "2, 3"],
    "perimeter": ["[1, 2, 3]", "[]", "['a']"],
    "scale": ["[(1, 2)], 2", "[(1, 2)], 2, 'cm'", "[(1, 2)], 1, 'yd'"],
    "distance": ["(0, 0), (3, 4)"],
    "home_relative": ["'/nowhere/x'"],
    "at_most": ["[1, 5, 3], 3", "[2, 9]"],
    "slug": ["'Hello, World!'", "'--'"],
    "word_counts": ["['a', 'A', 'b']", "[]"],
    "first": ["[1, 2]", "[], 0", "[]"],
    "join_words": ["['a', '', 'b']", "['a', 'b'], '-'"],
    "parse_pair": ["' a = b '", "'nothing'"],
    "is_printable": ["'abc'", "'tab\\there'"],
}
"""Argument lists the scripted model proposes, by function name."""

_NODE = re.compile(r"`([^`]+)` in \S+:")


def test_policy(request: ModelRequest) -> ToolCall:
    """The test agent's decision for whichever function the job is on."""
    return _propose(request, "propose_inputs", "cases")


def sample_data_policy(request: ModelRequest) -> ToolCall:
    """The sample_data agent's decision for whichever function the job is on."""
    return _propose(request, "propose_fixtures", "fixtures")


def _propose(request: ModelRequest, tool: str, argument: str) -> ToolCall:
    """Propose the function's argument lists once; then submit (the host takes every other
    step: it writes, runs and measures, and asks again only while coverage grows)."""
    answered = {message.name for message in request.messages if message.role == "tool"}
    allowed = {spec.name for spec in request.allowed_specs()}
    if tool in allowed and tool not in answered:
        return call(tool, **{argument: PROPOSALS.get(_function(request), [])})
    return call("submit_result")


def _function(request: ModelRequest) -> str:
    """The job's function name, from the node context (the first user message)."""
    text = next((m.content for m in request.messages if m.role == "user"), "")
    found = _NODE.search(text)
    return found.group(1).rsplit(".", 1)[-1] if found else ""
