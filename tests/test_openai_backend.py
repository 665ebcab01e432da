"""The OpenAI-compatible backend against scripted local servers and a real llama.cpp server."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from remora.errors import ModelError
from remora.model.base import Message, ModelRequest, ModelResponse, ToolCall, ToolSpec
from remora.model.llama_cpp import LlamaCppBackend
from remora.model.openai_http import OpenAIBackend
from tests.support.http import Script, scripted_server
from tests.support.llama_server import llama_server as start_llama_server

ECHO = ToolSpec(
    name="echo",
    description="Repeat a word.",
    parameters={
        "type": "object",
        "properties": {"word": {"type": "string", "enum": ["hello", "bye"]}},
        "required": ["word"],
    },
)
SUBMIT = ToolSpec(name="submit_result", description="Finish.", parameters={"type": "object"})


def completion(
    content: str | None = "", calls: list[dict[str, Any]] | None = None, cached: int = 0
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [
            {"id": f"call_{i}", "type": "function", "function": call}
            for i, call in enumerate(calls)
        ]
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {
            "prompt_tokens": 20,
            "completion_tokens": 5,
            "total_tokens": 25,
            "prompt_tokens_details": {"cached_tokens": cached},
        },
    }


def error(status: int, message: str) -> tuple[int, dict[str, Any]]:
    return status, {"error": {"message": message, "type": "invalid_request_error", "code": status}}


@pytest.fixture
def fake_server() -> Iterator[tuple[str, Script]]:
    script = Script(answers=[(200, completion("hi"))])
    with scripted_server(script) as url:
        yield url, script


def run(base_url: str, request: ModelRequest, **options: Any) -> ModelResponse:
    async def go() -> ModelResponse:
        settings: dict[str, Any] = {"model_id": "m", "backoff": 0.01, **options}
        backend = OpenAIBackend(base_url=base_url, **settings)
        try:
            return await backend.complete(request)
        finally:
            await backend.aclose()

    return asyncio.run(go())


def history() -> list[Message]:
    return [
        Message(role="system", content="Call tools."),
        Message(role="user", content="Say hello."),
        Message(role="assistant", tool_calls=[ToolCall(name="echo", arguments={"word": "hello"})]),
        Message(role="tool", name="echo", content='{"name": "echo", "response": {"ok": true}}'),
    ]


def test_native_calls_usage_and_payload(fake_server: tuple[str, Script]) -> None:
    url, script = fake_server
    script.answers = [
        (200, completion(None, [{"name": "echo", "arguments": '{"word": "bye"}'}], cached=12))
    ]
    request = ModelRequest(messages=history(), tools=[ECHO, SUBMIT], allowed_tools=["echo"])
    response = run(url, request)
    assert response.tool_calls == [
        ToolCall(id="call_0", name="echo", arguments={"word": "bye"}, parse_path="native")
    ]
    assert response.content == ""
    assert response.usage.prompt_tokens == 20
    assert response.usage.cached_prompt_tokens == 12
    sent = script.bodies()[0]
    assert sent["model"] == "m"
    assert [tool["function"]["name"] for tool in sent["tools"]] == ["echo"]
    assert sent["tool_choice"] == {"type": "function", "function": {"name": "echo"}}
    assistant, tool = sent["messages"][2], sent["messages"][3]
    assert assistant["content"] == ""
    call_id = assistant["tool_calls"][0]["id"]
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == {"word": "hello"}
    assert tool == {
        "role": "tool",
        "tool_call_id": call_id,
        "content": '{"name": "echo", "response": {"ok": true}}',
    }


def test_tool_choice_per_request_and_model_id(fake_server: tuple[str, Script]) -> None:
    url, script = fake_server
    script.models = ["m", "lint-lora"]
    run(url, ModelRequest(messages=history(), tools=[ECHO, SUBMIT], model_id="lint-lora"))
    run(url, ModelRequest(messages=history(), tools=[ECHO, SUBMIT], tool_choice="auto"))
    run(url, ModelRequest(messages=history()))
    first, second, third = script.bodies()
    assert first["model"] == "lint-lora"
    assert first["tool_choice"] == "required"
    assert second["tool_choice"] == "auto"
    assert "tools" not in third and "tool_choice" not in third


def test_rejected_required_falls_back_to_auto(fake_server: tuple[str, Script]) -> None:
    url, script = fake_server
    script.answers = [
        error(400, "tool_choice 'required' is not supported"),
        (200, completion('{"name": "echo", "arguments": {"word": "hello"}}')),
    ]

    async def go() -> list[ModelResponse]:
        backend = OpenAIBackend(base_url=url, model_id="m", backoff=0.01)
        request = ModelRequest(messages=history(), tools=[ECHO, SUBMIT])
        try:
            return [await backend.complete(request), await backend.complete(request)]
        finally:
            await backend.aclose()

    first, _ = asyncio.run(go())
    assert [r["tool_choice"] for r in script.bodies()] == ["required", "auto", "auto"]
    assert '"name": "echo"' in first.raw_text


def test_server_errors_are_retried_with_backoff(fake_server: tuple[str, Script]) -> None:
    url, script = fake_server
    script.answers = [error(500, "boom"), error(503, "busy"), (200, completion("fine"))]
    response = run(url, ModelRequest(messages=history()), max_retries=3)
    assert response.content == "fine"
    assert len(script.bodies()) == 3


def test_persistent_server_errors_give_up(fake_server: tuple[str, Script]) -> None:
    url, script = fake_server
    script.answers = [error(500, "out of memory")]
    with pytest.raises(ModelError) as info:
        run(url, ModelRequest(messages=history()), max_retries=2)
    assert info.value.code == "MODEL_032"
    assert "out of memory" in info.value.message
    assert len(script.bodies()) == 3


def test_timeouts_are_retried_then_reported(fake_server: tuple[str, Script]) -> None:
    url, script = fake_server
    script.delay = 1.0
    with pytest.raises(ModelError) as info:
        run(url, ModelRequest(messages=history()), max_retries=1, timeout=0.2)
    assert info.value.code == "MODEL_035"
    assert "0.2 s (2 attempts)" in info.value.message
    assert len(script.bodies()) == 2


def test_model_not_served_is_named(fake_server: tuple[str, Script]) -> None:
    url, script = fake_server
    script.models = ["gemma-test", "lint-lora"]
    with pytest.raises(ModelError) as info:
        run(url, ModelRequest(messages=history(), model_id="docstring-lora"))
    assert info.value.code == "MODEL_031"
    assert "docstring-lora" in info.value.message
    assert "gemma-test, lint-lora" in info.value.message
    assert script.bodies() == []


def test_not_found_is_reported_as_model_not_served(fake_server: tuple[str, Script]) -> None:
    url, script = fake_server
    script.answers = [error(404, "model 'm' not found")]
    with pytest.raises(ModelError) as info:
        run(url, ModelRequest(messages=history()), check_model=False)
    assert info.value.code == "MODEL_031"


def test_rejected_credentials_and_requests(fake_server: tuple[str, Script]) -> None:
    url, script = fake_server
    script.answers = [error(401, "invalid api key")]
    with pytest.raises(ModelError) as auth:
        run(url, ModelRequest(messages=history()))
    assert auth.value.code == "MODEL_033"
    assert "api_key_env" in (auth.value.hint or "")
    script.answers = [error(422, "messages: field required")]
    with pytest.raises(ModelError) as bad:
        run(url, ModelRequest(messages=history()))
    assert bad.value.code == "MODEL_033"
    assert "field required" in bad.value.message


def test_unparseable_native_arguments_stay_in_the_text(fake_server: tuple[str, Script]) -> None:
    url, script = fake_server
    script.answers = [(200, completion("", [{"name": "echo", "arguments": '{"word": "hel'}]))]
    response = run(url, ModelRequest(messages=history(), tools=[ECHO]))
    assert response.tool_calls == []
    assert json.loads(response.raw_text) == {"name": "echo", "arguments": '{"word": "hel'}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_no_server_is_a_clear_error() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    started = time.perf_counter()
    with pytest.raises(ModelError) as info:
        run(url, ModelRequest(messages=history()), max_retries=2)
    assert info.value.code == "MODEL_030"
    assert "model.base_url" in (info.value.hint or "")
    assert time.perf_counter() - started < 10


@pytest.fixture
def llama_server(embedded_llama: LlamaCppBackend) -> Iterator[str]:
    """``python -m llama_cpp.server`` on the embedded GGUF, on a free local port."""
    with start_llama_server(
        embedded_llama.model_path, "gemma-test", context=1024, threads=2, ready_within=60
    ) as url:
        yield url


@pytest.mark.model
def test_llama_cpp_server_round_trip(llama_server: str, tmp_path: Path) -> None:
    """A real OpenAI-compatible server: native calls, text answers, model checks."""

    async def go() -> tuple[ModelResponse, ModelResponse]:
        backend = OpenAIBackend(base_url=llama_server, model_id="gemma-test", max_retries=1)
        try:
            called = await backend.complete(
                ModelRequest(messages=history()[:2], tools=[ECHO, SUBMIT], allowed_tools=["echo"])
            )
            talked = await backend.complete(
                ModelRequest(
                    messages=history(), tools=[ECHO, SUBMIT], tool_choice="auto", max_tokens=8
                )
            )
            return called, talked
        finally:
            await backend.aclose()

    called, talked = asyncio.run(go())
    assert len(called.tool_calls) == 1
    call = called.tool_calls[0]
    assert (call.name, call.parse_path) == ("echo", "native")
    assert call.arguments["word"] in ("hello", "bye")
    assert called.usage.prompt_tokens > 0
    assert isinstance(talked.content, str)
    assert talked.usage.completion_tokens <= 8
    with pytest.raises(ModelError) as info:
        run(llama_server, ModelRequest(messages=history()), model_id="no-such-model")
    assert info.value.code == "MODEL_031"
    assert "gemma-test" in info.value.message
