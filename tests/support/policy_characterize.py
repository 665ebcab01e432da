"""Scripted model policies that drive the real test and sample_data agents on the synthetic
package (``tests/data/eval_package``), as the characterization evaluation's stand-in model.

A policy answers every turn of every job, so it decides from the request alone: the agent
from the tools offered, the function from the node context, the step from the tools that
already answered. Each agent gets its ideal sequence, with argument lists a sensible model
would propose for that function (none for a function it does not know).
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

TEST_STEPS = ("analyze_signature", "propose_inputs", "write_tests", "run_tests", "submit_result")
SAMPLE_DATA_STEPS = (
    "analyze_signature",
    "propose_fixtures",
    "validate_fixtures",
    "write_fixture_file",
    "submit_result",
)
_NODE = re.compile(r"`([^`]+)` in \S+:")


def test_policy(request: ModelRequest) -> ToolCall:
    """The test agent's ideal sequence for whichever function the job is on."""
    return _next_step(request, TEST_STEPS)


def sample_data_policy(request: ModelRequest) -> ToolCall:
    """The sample_data agent's ideal sequence for whichever function the job is on."""
    return _next_step(request, SAMPLE_DATA_STEPS)


def _next_step(request: ModelRequest, steps: tuple[str, ...]) -> ToolCall:
    """The first step no tool has answered yet (``submit_result`` when not allowed now)."""
    answered = {message.name for message in request.messages if message.role == "tool"}
    allowed = {spec.name for spec in request.allowed_specs()}
    step = next((name for name in steps if name not in answered), "submit_result")
    if step not in allowed:
        step = "submit_result"
    cases = PROPOSALS.get(_function(request), [])
    if step == "propose_inputs":
        return call(step, cases=cases)
    if step == "propose_fixtures":
        return call(step, fixtures=cases)
    if step == "write_fixture_file":
        return call(step, format="json")
    if step == "submit_result":
        return call(step, summary="Done.")
    return call(step)


def _function(request: ModelRequest) -> str:
    """The job's function name, from the node context (the first user message)."""
    text = next((m.content for m in request.messages if m.role == "user"), "")
    found = _NODE.search(text)
    return found.group(1).rsplit(".", 1)[-1] if found else ""
