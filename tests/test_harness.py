"""The tool-call harness over the real harness agent, tool runtime and workspaces."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from remora.discovery import discover
from remora.errors import RunnerError
from remora.harness import EpisodeRecord, load_variants, run_harness, summarize
from remora.model.base import ModelRequest
from remora.operations import installed_operations, load_agents
from remora.testing import ScriptedModel, Step, call

SAMPLE = Path(__file__).parent.parent / "examples" / "sample_project"


def polite(request: ModelRequest) -> Step:
    """Echo the node name first, then submit: what a well-behaved model does."""
    last = request.messages[-1]
    if last.role == "tool":
        return call("submit_result", summary="echo worked")
    name = request.messages[1].content.split("`")[1]
    return f"<start_function_call>call:echo{{text:<escape>{name}<escape>}}<end_function_call>"


def sloppy(request: ModelRequest) -> Step:
    """Says something without a call first, then behaves."""
    if len(request.messages) == 2:
        return "Sure! I will call echo now."
    return polite(request)


def harness_run(model: ScriptedModel, **kwargs: object):  # type: ignore[no-untyped-def]
    agent = load_agents()["harness"]
    nodes = discover([SAMPLE]).nodes
    before = sorted(p.name for p in SAMPLE.iterdir())
    report = asyncio.run(
        run_harness(
            agent=agent,
            nodes=nodes,
            root=SAMPLE,
            model=model,
            config=installed_operations().config(),
            backend="scripted",
            **kwargs,  # type: ignore[arg-type]
        )
    )
    assert sorted(p.name for p in SAMPLE.iterdir()) == before, "harness left files behind"
    return report


def test_rates_for_a_well_behaved_model() -> None:
    model = ScriptedModel([polite], repeat_last=True)
    report = harness_run(model, requests=3, concurrency=2, variants=["default", "terse"])
    assert [v.variant for v in report.variants] == ["default", "terse"]
    for stats in report.variants:
        assert stats.episodes == 3
        assert stats.success_rate == 1.0
        assert stats.correct_call_rate == 1.0
        assert stats.tool_call_rate == 1.0
        assert stats.valid_call_rate == 1.0
        assert stats.miss_rate == 0.0
        assert stats.mean_turns == 2.0
        assert 0.0 < stats.cache_hit_ratio < 1.0
    assert len(model.requests) == 12
    terse_prompts = {r.messages[0].content for r in model.requests} - {
        load_agents()["harness"].initial_context.system_prompt
    }
    assert len(terse_prompts) == 1


def test_misses_are_counted() -> None:
    model = ScriptedModel([sloppy], repeat_last=True)
    report = harness_run(model, requests=2)
    stats = report.variants[0]
    assert stats.success_rate == 1.0, "a reply without a call is a miss, not a wrong call"
    assert stats.correct_call_rate == 1.0
    assert stats.miss_rate == pytest.approx(1 / 3)
    assert stats.tool_call_rate == pytest.approx(2 / 3)
    assert all(episode.misses == 1 for episode in report.episodes)


def test_unknown_variant_is_a_clean_error() -> None:
    with pytest.raises(RunnerError) as caught:
        harness_run(ScriptedModel([polite], repeat_last=True), variants=["nope"])
    assert caught.value.code == "RUN_011"
    assert "default" in (caught.value.hint or "")


def test_variants_file_is_data() -> None:
    variants = load_variants(load_agents()["harness"])
    assert {"default", "terse", "stepwise"} <= set(variants)


def test_summary_percentiles_and_ratios() -> None:
    def record(
        latencies: list[float], status: str = "success", correct: bool | None = True
    ) -> EpisodeRecord:
        return EpisodeRecord(
            variant="v",
            node="n",
            status=status,
            correct=correct,
            correct_calls=len(latencies) - 1 if correct is False else len(latencies),
            turns=2,
            responses=len(latencies),
            calls=len(latencies),
            invalid_calls=1,
            misses=0,
            repeats=1,
            textual_call_patterns=0,
            latencies_s=latencies,
            prompt_tokens=100,
            completion_tokens=10,
            cached_prompt_tokens=60,
            wall_s=1.0,
        )

    stats = summarize("v", [record([1.0, 2.0]), record([3.0, 4.0], status="failed")])
    assert stats.success_rate == 0.5
    assert stats.submitted_rate == 0.5
    assert stats.correct_call_rate == 1.0
    assert stats.valid_call_rate == 0.5
    assert stats.repeat_rate == 0.5
    assert stats.latency_p50_s in (2.0, 3.0)
    assert stats.latency_p95_s == 4.0
    assert stats.cache_hit_ratio == 0.6
    assert stats.generated_tokens_per_s == pytest.approx(20 / 10)
    assert stats.prompt_tokens_per_s == pytest.approx(80 / 10)


def test_summary_counts_only_correct_submitted_episodes_as_successes() -> None:
    def record(status: str, correct: bool | None, correct_calls: int) -> EpisodeRecord:
        return EpisodeRecord(
            variant="v",
            node="n",
            status=status,
            correct=correct,
            correct_calls=correct_calls,
            turns=2,
            responses=2,
            calls=2,
            invalid_calls=0,
            misses=0,
            repeats=0,
            textual_call_patterns=0,
            latencies_s=[1.0, 1.0],
            prompt_tokens=10,
            completion_tokens=2,
            cached_prompt_tokens=0,
            wall_s=1.0,
        )

    stats = summarize(
        "v", [record("success", True, 2), record("success", False, 1), record("failed", True, 2)]
    )
    assert stats.submitted_rate == pytest.approx(2 / 3)
    assert stats.success_rate == pytest.approx(1 / 3)
    assert stats.correct_call_rate == pytest.approx(5 / 6)
    unchecked = summarize("v", [record("success", None, 0)])
    assert unchecked.correct_call_rate is None
    assert unchecked.success_rate == 1.0
