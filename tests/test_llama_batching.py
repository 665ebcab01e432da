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


def test_concurrent_requests_are_decoded_together(embedded_llama: LlamaCppBackend) -> None:
    engine = embedded_llama.engine

    async def one_by_one() -> list[str]:
        return [(await embedded_llama.complete(item)).raw_text for item in prose()]

    async def together() -> list[str]:
        replies = await asyncio.gather(*(embedded_llama.complete(item) for item in prose()))
        return [reply.raw_text for reply in replies]

    embedded_llama.clear_cache()
    before = engine.decodes
    sequential = asyncio.run(one_by_one())
    sequential_decodes = engine.decodes - before
    embedded_llama.clear_cache()
    before = engine.decodes
    concurrent = asyncio.run(together())
    concurrent_decodes = engine.decodes - before
    assert all(text.strip() for text in sequential + concurrent)
    # one prompt evaluation each, then the three share every generation step
    assert concurrent_decodes <= sequential_decodes / 2
    assert concurrent == sequential  # greedy decoding does not depend on the batch


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


def test_threads_default_to_half_the_cpus_and_say_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(llama_cpp, "usable_cpus", lambda: 8)
    assert llama_cpp.thread_choice(None) == (4, llama_cpp.thread_choice(None)[1])
    assert "8 usable CPUs" in llama_cpp.thread_choice(None)[1]
    monkeypatch.setattr(llama_cpp, "usable_cpus", lambda: 1)
    assert llama_cpp.thread_choice(None)[0] == 1
    assert llama_cpp.thread_choice(6) == (6, "set by model.threads")
