"""Several answers at a screened decision: the host screens each and picks by agreement."""

from __future__ import annotations

import asyncio
from typing import Any

from remora.events import CollectingEmitter
from remora.model.base import ModelRequest, ModelResponse, ToolCall, ToolSpec
from remora.runner import AgentRun, LoopSettings, LoopTool, run_agent, watching
from remora.runner.candidates import call_words, choose, most_agreed, similarity
from remora.testing import ScriptedModel, call
from remora.tools.result import ToolResult

WRITE = LoopTool(
    ToolSpec(
        name="write_summary",
        parameters={
            "type": "object",
            "properties": {"summary": {"type": "string"}},
            "required": ["summary"],
            "additionalProperties": False,
        },
    ),
    "write",
    screened=True,
)
SUBMIT = LoopTool(ToolSpec(name="submit_result"), "terminal", host_step=True)
READ = LoopTool(ToolSpec(name="read_code"), "read", host_step=True)
REFUSED = {"Return the result.", "Do it twice."}


class Tools:
    """A write tool that refuses what the screen refuses; records what was written."""

    def __init__(self) -> None:
        self.written: list[str] = []
        self.screened: list[str] = []

    async def invoke(
        self, name: str, arguments: dict[str, Any], *, deadline: float | None = None
    ) -> ToolResult:
        if name == "submit_result":
            return ToolResult(outcome="success", summary="submitted")
        if name == "read_code":
            return ToolResult(outcome="success", summary="read", next_tools=["write_summary"])
        self.written.append(arguments["summary"])
        return ToolResult(outcome="success", summary="written", next_tools=["submit_result"])

    async def screen(
        self, name: str, arguments: dict[str, Any], *, deadline: float | None = None
    ) -> ToolResult:
        self.screened.append(arguments["summary"])
        if arguments["summary"] in REFUSED:
            return ToolResult.failure("vague")
        return ToolResult(outcome="success", summary="usable")


def answer(summary: str) -> ModelResponse:
    return ModelResponse(tool_calls=[call("write_summary", summary=summary)])


def run(model: ScriptedModel, tools: Tools, candidates: int) -> Any:
    return asyncio.run(
        run_agent(
            AgentRun(
                system_prompt="system",
                node_context="def f(): ...",
                tools=[READ, WRITE, SUBMIT],
                opening=["read_code"],
                settings=LoopSettings(max_turns=4, candidates=candidates),
                operation="docstring",
                node_id="n1",
            ),
            model=model,
            invoke=tools.invoke,
            screen=tools.screen,
            observers=watching(CollectingEmitter()),
        )
    )


def test_the_screened_survivor_closest_to_the_others_is_written() -> None:
    greedy = answer("Return the result.")
    greedy = greedy.model_copy(
        update={
            "alternatives": [
                answer("Count the words of a text."),
                answer("Count the words in the text."),
                answer("Split the text into lines."),
            ]
        }
    )
    model = ScriptedModel([greedy])
    tools = Tools()
    result = run(model, tools, candidates=4)
    assert result.status == "success"
    assert tools.written == ["Count the words of a text."]
    assert tools.screened == [
        "Return the result.",
        "Count the words of a text.",
        "Count the words in the text.",
        "Split the text into lines.",
    ]
    assert model.requests[0].samples == 4
    assert result.telemetry.candidates == 4
    assert result.telemetry.candidates_passed == 3


class OneAnswerModel(ScriptedModel):
    """A backend that ignores ``samples`` (one answer per request), as a server may."""

    async def complete(self, request: ModelRequest) -> ModelResponse:
        response = await super().complete(request)
        return response.model_copy(update={"alternatives": []})


def test_a_backend_without_samples_is_asked_for_each_and_none_passing_keeps_the_greedy() -> None:
    model = OneAnswerModel(
        [answer("Return the result."), answer("Do it twice."), answer("Return the result.")]
    )
    tools = Tools()
    result = run(model, tools, candidates=3)
    # No candidate passed: the greedy answer goes to the tool (which decides as before).
    assert tools.written == ["Return the result."]
    sampled = model.requests[1:]
    assert [request.temperature for request in sampled] == [0.8, 0.8]
    assert {request.conversation_id for request in sampled} == {
        f"{model.requests[0].conversation_id}~1",
        f"{model.requests[0].conversation_id}~2",
    }
    # The duplicate of the greedy answer is screened once.
    assert tools.screened == ["Return the result.", "Do it twice."]
    assert result.telemetry.candidates == 3
    assert result.telemetry.candidates_passed == 0


def test_a_scripted_step_answers_samples_with_itself() -> None:
    model = ScriptedModel([answer("Count the words.")])
    tools = Tools()
    result = run(model, tools, candidates=4)
    assert len(model.requests) == 1
    assert tools.screened == ["Count the words."]
    assert tools.written == ["Count the words."]
    assert result.telemetry.candidates == 4


def test_one_candidate_asks_once_and_does_not_screen() -> None:
    model = ScriptedModel([answer("Return the result.")])
    tools = Tools()
    run(model, tools, candidates=1)
    assert len(model.requests) == 1
    assert model.requests[0].samples == 1
    assert tools.screened == []


def test_a_decision_with_other_tools_allowed_is_not_sampled() -> None:
    other = LoopTool(ToolSpec(name="read_more"), "read")
    model = ScriptedModel([answer("Count the words.")])
    tools = Tools()
    asyncio.run(
        run_agent(
            AgentRun(
                system_prompt="system",
                node_context="def f(): ...",
                tools=[WRITE, other, SUBMIT],
                settings=LoopSettings(max_turns=4, candidates=4),
                operation="docstring",
                node_id="n1",
            ),
            model=model,
            invoke=tools.invoke,
            screen=tools.screen,
            observers=watching(CollectingEmitter()),
        )
    )
    assert model.requests[0].samples == 1
    assert tools.screened == []


def test_agreement_prefers_the_answer_most_like_the_others() -> None:
    words = [
        call_words({"summary": "Merge two sorted lists."}),
        call_words({"summary": "Merge the sorted lists into one."}),
        call_words({"summary": "Return a list."}),
        call_words({"summary": "Merge sorted lists."}),
    ]
    assert most_agreed(words) == 3
    assert similarity(frozenset(), frozenset()) == 1.0
    assert most_agreed([words[2], words[2]]) == 0  # ties go to the earliest


def test_request_samples_must_be_positive() -> None:
    import pydantic
    import pytest

    with pytest.raises(pydantic.ValidationError):
        ModelRequest(messages=[], samples=0)
    assert ToolCall(name="x").arguments == {}


def test_a_greedy_answer_the_screen_accepts_is_used_over_agreeing_samples() -> None:
    greedy = answer("Count the lines.").model_copy(
        update={
            "alternatives": [
                answer("Split the text into words."),
                answer("Split the text into its words."),
                answer("Split a text into words."),
            ]
        }
    )
    tools = Tools()
    run(ScriptedModel([greedy]), tools, candidates=4)
    assert tools.written == ["Count the lines."]


def test_a_lone_accepted_sample_is_not_used() -> None:
    greedy = answer("Return the result.").model_copy(
        update={
            "alternatives": [
                answer("Do it twice."),
                answer("Merge two sorted lists."),
                answer("Do it twice."),
            ]
        }
    )
    tools = Tools()
    run(ScriptedModel([greedy]), tools, candidates=4)
    # Only one sample passed: one draw's luck; the greedy answer goes on to be refused.
    assert tools.written == ["Return the result."]


def test_choose_needs_support_for_a_sample() -> None:
    words = [
        None,
        call_words({"summary": "Merge sorted lists."}),
        call_words({"summary": "Count the lines of a file."}),
    ]
    assert choose(words) is None
    words.append(call_words({"summary": "Merge the sorted lists."}))
    assert choose(words) == 1
    assert choose([call_words({"summary": "Anything at all."}), None]) == 0
    assert choose([]) is None
