"""Next-call scoring: what counts as the expert's call, and the rates over examples."""

from __future__ import annotations

import asyncio
import shutil
import sysconfig
from pathlib import Path

import pytest

from remora.contracts import SUBMIT_TOOL
from remora.errors import ModelError, TrainingError
from remora.model.base import Message, ModelRequest, ModelResponse, ToolCall
from remora.model.functiongemma import render_call
from remora.operations import installed_operations, load_agents
from remora.testing import ScriptedModel, Step, call
from remora.training.dataset import TrainingExample
from remora.training.evaluate import (
    CallScore,
    EpisodeScore,
    Scores,
    example_request,
    read_scores,
    same_call,
    score_episodes,
    score_next_calls,
    write_scores,
)
from remora.training.traces import (
    ExpertModel,
    generate_traces,
    held_out_episodes,
    open_session,
    read_outcomes,
)


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


# --- whole held-out episodes through the real loop -------------------------------------------


STDLIB = Path(sysconfig.get_paths()["stdlib"])


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Path], Path]:
    """Docstring episodes recorded on textwrap.py, every file held out."""
    root = tmp_path_factory.mktemp("corpus")
    shutil.copy(STDLIB / "textwrap.py", root / "textwrap.py")
    corpus = [root / "textwrap.py"]
    out = tmp_path_factory.mktemp("traces")
    report = generate_traces(
        "docstring", corpus, out, limit=3, seed=2, tokens="estimate", validation_share=1.0
    )
    assert report.episodes_kept >= 2
    return corpus, out / "docstring"


def test_held_out_episodes_are_the_kept_validation_ones_planned_again(
    recorded: tuple[list[Path], Path],
) -> None:
    corpus, folder = recorded
    agent = load_agents(installed_operations().config().agents.dirs)["docstring"]
    kept = {o.id for o in read_outcomes(folder) if o.status == "kept"}
    planned = held_out_episodes(agent, corpus, folder, share=1.0)
    assert {episode.id for episode in planned} == kept
    assert [e.id for e in held_out_episodes(agent, corpus, folder, limit=1, share=1.0)] == [
        planned[0].id
    ]
    assert held_out_episodes(agent, corpus, folder, share=0.0) == []


def test_episode_success_is_the_expectation_met_through_the_real_loop(
    recorded: tuple[list[Path], Path],
) -> None:
    corpus, folder = recorded
    config = installed_operations().config()
    agent = load_agents(config.agents.dirs)["docstring"]
    episode = held_out_episodes(agent, corpus, folder, limit=1, share=1.0)[0]
    submit_at_once = call(SUBMIT_TOOL, summary="Nothing to do.")

    async def scores() -> tuple[EpisodeScore, EpisodeScore]:
        with open_session(agent, config, "evaluate", None) as session:
            expert = await score_episodes(
                session, [episode], ExpertModel(episode.expert, None), label="expert"
            )
            hasty = await score_episodes(
                session, [episode], ScriptedModel([submit_at_once], repeat_last=True), label="base"
            )
        return expert, hasty

    expert, hasty = asyncio.run(scores())
    assert (expert.episodes, expert.succeeded, expert.success_rate) == (1, 1, 1.0)
    assert (hasty.episodes, hasty.succeeded) == (1, 0)
    assert sum(hasty.problems.values()) == 1
    assert hasty.problems == {"submit_result instead of write_docstring": 1}


def test_scores_round_trip_and_a_bad_file_is_a_coded_error(tmp_path: Path) -> None:
    scores = Scores(
        next_call={"lint": [CallScore(label="base", examples=4, exact=2, named=3)]},
        episodes={"lint": [EpisodeScore(label="base", episodes=2, succeeded=1, problems={"x": 1})]},
    )
    write_scores(tmp_path / "scores.json", scores)
    assert read_scores(tmp_path / "scores.json") == scores
    (tmp_path / "bad.json").write_text('{"lint": []}')
    with pytest.raises(TrainingError) as caught:
        read_scores(tmp_path / "bad.json")
    assert caught.value.code == "TRAIN_001"
