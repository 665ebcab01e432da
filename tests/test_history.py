"""History: whole conversation every turn, trimmed by token budget without losing the node."""

from __future__ import annotations

import json

import pytest

from remora.model.base import Message, ToolCall
from remora.runner.history import (
    MESSAGE_OVERHEAD,
    History,
    estimate_tokens,
    summary_message,
    tool_message,
)
from remora.tools.result import ToolResult

SYSTEM = "You are a model that can do function calling with the following functions"
NODE = "def add(a, b):\n    return a + b"


def call_message(name: str, call_id: str) -> Message:
    return Message(role="assistant", tool_calls=[ToolCall(id=call_id, name=name, arguments={})])


def big_result(index: int, size: int = 400) -> ToolResult:
    return ToolResult(outcome="success", summary=f"read chunk {index}", result="x" * size)


def add_turn(history: History, index: int, size: int = 400) -> None:
    history.start_turn(call_message("read_file", f"c{index}"))
    history.add_tool_result("read_file", f"c{index}", big_result(index, size))


def test_estimate_is_chars_over_four_rounded_up() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("abcde") == 2


def test_tool_message_has_the_name_response_shape_errors_included() -> None:
    result = ToolResult.failure("line 40 does not exist")
    message = tool_message("apply_fix", "c1", result)
    assert message.role == "tool"
    assert (message.name, message.tool_call_id) == ("apply_fix", "c1")
    payload = json.loads(message.content)
    assert payload["name"] == "apply_fix"
    assert payload["response"]["outcome"] == "error"
    assert payload["response"]["error"] == "line 40 does not exist"


def test_summary_message_keeps_outcome_summary_and_error() -> None:
    result = ToolResult(
        outcome="error", summary="fix failed", error="no such code", result="x" * 99
    )
    payload = json.loads(summary_message("apply_fix", "c1", result).content)
    assert payload == {
        "name": "apply_fix",
        "response": {
            "outcome": "error",
            "summary": "fix failed",
            "error": "no such code",
            "trimmed": True,
        },
    }


def test_history_grows_by_whole_turns() -> None:
    history = History(SYSTEM, NODE, budget=100_000)
    assert [m.role for m in history.render()] == ["system", "user"]
    add_turn(history, 1)
    assert [m.role for m in history.render()] == ["system", "user", "assistant", "tool"]
    add_turn(history, 2)
    history.add_note("Now make the change.")
    roles = [m.role for m in history.render()]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "tool", "user"]


def test_system_and_node_messages_are_built_once() -> None:
    history = History(SYSTEM, NODE, budget=100_000)
    first = history.render()
    add_turn(history, 1)
    second = history.render()
    assert second[0] is first[0]
    assert second[1] is first[1]


def test_notes_merge_into_one_user_message_per_turn() -> None:
    history = History(SYSTEM, NODE, budget=100_000)
    add_turn(history, 1)
    before = history.total_tokens
    history.add_note("first")
    history.add_note("second")
    messages = history.render()
    assert messages[-1] == Message(role="user", content="first\nsecond")
    assert [m.role for m in messages].count("user") == 2
    assert history.total_tokens - before == estimate_tokens("first\nsecond") + MESSAGE_OVERHEAD


def test_under_budget_nothing_is_trimmed() -> None:
    history = History(SYSTEM, NODE, budget=100_000)
    for index in range(5):
        add_turn(history, index)
    assert len(history.render()) == 2 + 10
    assert history.trimmed == 0


def test_older_results_are_summarized_first_and_latest_kept_whole() -> None:
    history = History(SYSTEM, NODE, budget=300)
    for index in range(3):
        add_turn(history, index)
    messages = history.render()
    assert len(messages) == 2 + 6, "summaries were enough; no turn dropped"
    tools = [json.loads(m.content) for m in messages if m.role == "tool"]
    assert [tool["response"].get("trimmed", False) for tool in tools] == [True, True, False]
    assert tools[0]["response"]["summary"] == "read chunk 0"
    assert history.total_tokens <= 300
    assert history.trimmed == 2


def test_oldest_turns_are_dropped_whole_when_summaries_are_not_enough() -> None:
    history = History(SYSTEM, NODE, budget=260)
    for index in range(12):
        add_turn(history, index)
    messages = history.render()
    assert messages[0].content == SYSTEM
    assert messages[1].content == NODE
    body = messages[2:]
    assert body[0].role == "assistant", "a tool result never loses its call"
    for assistant, tool in zip(body[::2], body[1::2], strict=True):
        assert assistant.tool_calls[0].id == tool.tool_call_id
    assert body[-1].tool_call_id == "c11"
    assert json.loads(body[-1].content)["response"].get("trimmed") is None
    assert history.total_tokens <= 260
    assert len(body) < 24


def test_node_context_survives_even_when_it_alone_exceeds_the_budget() -> None:
    node = "x = 1\n" * 400
    history = History(SYSTEM, node, budget=50)
    add_turn(history, 1)
    add_turn(history, 2)
    messages = history.render()
    assert messages[1].content == node
    assert messages[-1].tool_call_id == "c2"
    assert json.loads(messages[-1].content)["response"]["trimmed"] is True


def test_trimming_is_monotone_so_the_prefix_stays_stable() -> None:
    history = History(SYSTEM, NODE, budget=600)
    for index in range(4):
        add_turn(history, index, size=300)
    first = history.render()
    history.start_turn(call_message("run_linter", "small"))
    history.add_tool_result("run_linter", "small", ToolResult(outcome="success", summary="ok"))
    second = history.render()
    assert second[: len(first)] == first


def test_custom_token_counter_is_used() -> None:
    counted: list[str] = []

    def count(text: str) -> int:
        counted.append(text)
        return len(text.split())

    history = History(SYSTEM, NODE, budget=1_000, count_tokens=count)
    assert SYSTEM in counted
    assert history.total_tokens == len(SYSTEM.split()) + len(NODE.split()) + 2 * MESSAGE_OVERHEAD


def test_tool_result_needs_a_turn() -> None:
    history = History(SYSTEM, NODE, budget=1_000)
    with pytest.raises(ValueError, match="model turn"):
        history.add_tool_result("read_file", "c1", big_result(1))


def test_tighten_trims_at_least_the_excess_and_keeps_the_budget_low() -> None:
    history = History(SYSTEM, NODE, budget=10_000)
    for index in range(4):
        add_turn(history, index)
    before = history.total_tokens
    assert history.tighten(150)
    assert history.total_tokens <= before - 150
    assert history.budget == before - 150
    add_turn(history, 4)  # later turns are trimmed to the lowered budget too
    history.render()
    assert history.total_tokens <= before - 150
    assert [m.content for m in history.messages()[:2]] == [SYSTEM, NODE]


def test_tighten_with_nothing_left_to_trim_says_so() -> None:
    history = History(SYSTEM, NODE, budget=10_000)
    assert not history.tighten(10)
    assert [m.content for m in history.render()] == [SYSTEM, NODE]
