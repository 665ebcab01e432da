"""Next-call scoring: what counts as the expert's call, and the rates over examples."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from remora.errors import ModelError, TrainingError
from remora.model.base import Message, ModelRequest, ModelResponse, ToolCall
from remora.model.functiongemma import render_call
from remora.testing import ScriptedModel, Step
from remora.training.dataset import TrainingExample
from remora.training.evaluate import example_request, same_call, score_next_calls


def example(index: int, name: str, **arguments: object) -> TrainingExample:
    request = ModelRequest(messages=[Message(role="user", content=f"turn {index}")])
    return TrainingExample(
        agent="lint",
        source="a.py",
        episode=f"e{index}",
        turn=0,
        prompt="p",
        completion="c",
        request=request.model_dump(mode="json"),
        call={"name": name, "arguments": arguments},
    )


def test_a_call_matches_by_name_then_by_every_argument() -> None:
    expected = {"name": "apply_fix", "arguments": {"code": "F401", "line": 4}}
    assert same_call(
        ToolCall(name="apply_fix", arguments={"line": 4, "code": "F401"}), expected
    ) == (
        True,
        True,
    )
    assert same_call(
        ToolCall(name="apply_fix", arguments={"code": "F401", "line": 5}), expected
    ) == (
        True,
        False,
    )
    assert same_call(ToolCall(name="run_linter", arguments={}), expected) == (False, False)
    assert same_call(None, expected) == (False, False)


def test_rates_count_exact_named_and_failed_turns_per_tool() -> None:
    examples = [
        example(0, "run_linter"),
        example(1, "apply_fix", code="F401", line=4),
        example(2, "apply_fix", code="E711", line=9),
        example(3, "submit_result", summary="Fixed it."),
    ]

    def answer(request: ModelRequest) -> Step:
        turn = request.messages[-1].content
        if turn == "turn 0":  # native call, right
            return ToolCall(name="run_linter", arguments={})
        if turn == "turn 1":  # text call, right
            return ModelResponse(
                raw_text=render_call(
                    ToolCall(name="apply_fix", arguments={"code": "F401", "line": 4})
                )
            )
        if turn == "turn 2":  # right tool, wrong line
            return ToolCall(name="apply_fix", arguments={"code": "E711", "line": 8})
        return ModelError("MODEL_021", "the KV cache cannot hold this generation", None)

    score = asyncio.run(
        score_next_calls(examples, ScriptedModel([answer] * 4), label="base", concurrency=1)
    )
    assert (score.examples, score.exact, score.named, score.failed) == (4, 2, 3, 1)
    assert score.exact_rate == 0.5 and score.name_rate == 0.75
    assert score.by_tool == {"apply_fix": (1, 2), "run_linter": (1, 1), "submit_result": (0, 1)}


def test_the_replayed_request_is_greedy_and_names_the_adapter(tmp_path: Path) -> None:
    item = example(0, "run_linter")
    item.request["temperature"] = 0.7
    request = example_request(item, tmp_path / "lint.gguf")
    assert request.temperature == 0.0
    assert request.adapter == str(tmp_path / "lint.gguf")
    assert example_request(item, None).adapter is None


def test_nothing_to_score_is_a_clear_error() -> None:
    with pytest.raises(TrainingError) as caught:
        asyncio.run(score_next_calls([], ScriptedModel([]), label="base"))
    assert caught.value.code == "TRAIN_006"
