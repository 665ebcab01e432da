"""Concurrent requests on the embedded model share forward passes; forced text is not sampled."""

from __future__ import annotations

import asyncio

import pytest

from remora.model import llama_cpp
from remora.model.base import Message, ModelRequest
from remora.model.llama_cpp import LlamaCppBackend
from remora.runner.parsing import parse_functiongemma_calls
from tests.test_llama_backend import TOOLS, request, start

USERS = [
    "Fix the lint problems in inventory/pricing.py.",
    "Fix the lint problems in inventory/stock.py, please.",
    "Check reports.py for unused imports and fix them.",
]


def requests() -> list[ModelRequest]:
    return [request(start(user), f"batch-{index}") for index, user in enumerate(USERS)]


def prose() -> list[ModelRequest]:
    """Free text, so every request samples all its tokens (nothing is forced)."""
    return [
        ModelRequest(
            messages=[Message(role="user", content=f"Write a sentence about {topic}.")],
            max_tokens=12,
            conversation_id=f"prose-{topic}",
        )
        for topic in ("rivers", "mountains", "bread")
    ]


def valid(text: str) -> bool:
    calls = parse_functiongemma_calls(text)
    return len(calls) == 1 and calls[0].name in {tool.name for tool in TOOLS}


async def one_by_one(backend: LlamaCppBackend, items: list[ModelRequest]) -> list[str]:
    return [(await backend.complete(item)).raw_text for item in items]


async def together(backend: LlamaCppBackend, items: list[ModelRequest]) -> list[str]:
    replies = await asyncio.gather(*(backend.complete(item) for item in items))
    return [reply.raw_text for reply in replies]


def test_concurrent_requests_on_one_lane_are_decoded_together(
    embedded_llama: LlamaCppBackend,
) -> None:
    backend = LlamaCppBackend(embedded_llama.model_path, context_size=1024, lanes=1)
    try:
        engine = backend.engine
        engine.steps = llama_cpp._StepChoice(trials=0)  # no trials: always together
        before = engine.decodes
        sequential = asyncio.run(one_by_one(backend, prose()))
        sequential_decodes = engine.decodes - before
        backend.clear_cache()
        before = engine.decodes
        concurrent = asyncio.run(together(backend, prose()))
        concurrent_decodes = engine.decodes - before
    finally:
        backend.close()
    assert all(text.strip() for text in sequential + concurrent)
    # one prompt evaluation each, then the three share every generation step
    assert concurrent_decodes <= sequential_decodes / 2
    assert concurrent == sequential  # greedy decoding does not depend on the batch


def test_runs_decoded_one_by_one_give_the_same_text(embedded_llama: LlamaCppBackend) -> None:
    backend = LlamaCppBackend(embedded_llama.model_path, context_size=1024, lanes=1)
    try:
        backend.engine.steps.decided = False
        backend.engine.steps.trials = 0  # no trials: always one decode per run
        apart = asyncio.run(together(backend, prose()))
        decodes = backend.engine.decodes
        backend.clear_cache()
        sequential = asyncio.run(one_by_one(backend, prose()))
    finally:
        backend.close()
    steps = 12  # every generation has max_tokens=12
    assert decodes >= 3 * steps - 3
    assert apart == sequential


def test_the_step_choice_follows_the_measured_time() -> None:
    choice = llama_cpp._StepChoice(trials=2, recheck=8)
    ways = []
    for _ in range(8):
        together = choice.together()
        ways.append(together)
        choice.record(together, 0.040 if together else 0.012)
    # alternate for the trials, then one decode per run, which measured faster
    assert ways == [True, False, True, False, False, False, False, False]
    for _ in range(4):  # the trial repeats after `recheck` steps; now together wins
        together = choice.together()
        choice.record(together, 0.010 if together else 0.030)
    assert choice.together() is True


def test_concurrent_conversations_spread_over_lanes(embedded_llama: LlamaCppBackend) -> None:
    backend = LlamaCppBackend(embedded_llama.model_path, context_size=1024, lanes=2)
    try:
        concurrent = asyncio.run(together(backend, prose()[:2]))
        assert len(backend.engines) == 2
        decodes = [engine.decodes for engine in backend.engines]
        backend.clear_cache()
        again = asyncio.run(one_by_one(backend, prose()[:2]))
    finally:
        backend.close()
    assert all(count > 0 for count in decodes)  # each lane decoded one of the two
    assert concurrent == again  # and a lane gives the text the other one does
    assert all(text.strip() for text in concurrent)


def test_a_conversation_stays_on_the_lane_holding_its_cache() -> None:
    router = llama_cpp._Router(2, memory=8)
    assert router.route("a", [0, 0]) == 0
    assert router.route("b", [0, 0]) == 1  # a new conversation goes where fewer live
    assert router.route("a", [0, 1]) == 0
    assert router.route("a", [1, 0]) == 0  # one more in flight there is not worth a move
    assert router.route("a", [2, 0]) == 1  # two more is
    assert router.route("a", [0, 0]) == 1  # and it stays where it moved
    assert router.route(None, [1, 0]) == 1


def test_the_router_forgets_old_conversations() -> None:
    router = llama_cpp._Router(2, memory=2)
    for name in ("a", "b", "c"):
        router.route(name, [0, 0])
    assert list(router.home) == ["b", "c"]


def test_forced_text_is_appended_not_sampled(embedded_llama: LlamaCppBackend) -> None:
    forced = embedded_llama.generate(request(start(), "forced"))
    assert valid(forced.text)
    assert 0 < forced.forced_tokens < forced.completion_tokens
    plain = LlamaCppBackend(
        embedded_llama.model_path, context_size=1024, sequences=1, jump_forward=False
    )
    try:
        sampled = plain.generate(request(start(), "sampled"))
    finally:
        plain.close()
    assert valid(sampled.text)
    assert sampled.forced_tokens == 0


def test_a_cancelled_request_leaves_the_others_running(embedded_llama: LlamaCppBackend) -> None:
    async def scenario() -> str:
        first = asyncio.ensure_future(embedded_llama.complete(requests()[0]))
        second = asyncio.ensure_future(embedded_llama.complete(requests()[1]))
        await asyncio.sleep(0.05)
        first.cancel()
        return (await second).raw_text

    assert valid(asyncio.run(scenario()))


def test_lanes_default_to_one_per_thread_group(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(llama_cpp, "usable_cpus", lambda: 2)
    lanes, why = llama_cpp.lane_choice(None, 1)
    assert lanes == 2
    assert "2 usable CPUs" in why
    monkeypatch.setattr(llama_cpp, "usable_cpus", lambda: 64)
    assert llama_cpp.lane_choice(None, 1)[0] == 4
    assert llama_cpp.lane_choice(None, 32)[0] == 2
    assert llama_cpp.lane_choice(3, 1) == (3, "set by model.lanes")


def test_threads_default_to_half_the_cpus_and_say_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(llama_cpp, "usable_cpus", lambda: 8)
    assert llama_cpp.thread_choice(None) == (4, llama_cpp.thread_choice(None)[1])
    assert "8 usable CPUs" in llama_cpp.thread_choice(None)[1]
    monkeypatch.setattr(llama_cpp, "usable_cpus", lambda: 1)
    assert llama_cpp.thread_choice(None)[0] == 1
    assert llama_cpp.thread_choice(6) == (6, "set by model.threads")


def test_samples_come_back_with_the_greedy_answer_from_one_prompt_evaluation(
    embedded_llama: LlamaCppBackend,
) -> None:
    """A request for samples answers greedy first (as without samples) and the samples as
    alternatives, decoded on one lane from one evaluation of the prompt."""
    backend = LlamaCppBackend(embedded_llama.model_path, context_size=1024, lanes=2, seed=3)
    try:
        item = prose()[0]
        greedy = asyncio.run(backend.complete(item))
        backend.clear_cache()
        asked = item.model_copy(update={"samples": 4, "sample_temperature": 1.5})
        answered = asyncio.run(backend.complete(asked))
        assert answered.raw_text == greedy.raw_text
        assert len(answered.alternatives) == 3
        texts = {alternative.raw_text for alternative in answered.alternatives}
        assert texts - {greedy.raw_text}, "samples at a high temperature all equal greedy"
        # Each sample reused the prompt evaluated for the first answer but its last token.
        prompt = answered.usage.prompt_tokens
        for alternative in answered.alternatives:
            assert alternative.usage.prompt_tokens == prompt
            assert alternative.usage.cached_prompt_tokens == prompt - 1
        assert sum(lane.opened is not None for lane in backend._lanes) == 1
    finally:
        backend.close()
