"""Completions mode of the OpenAI-compatible backend against a scripted local server: the
request carries Remora's own FunctionGemma rendering, the call grammar in each server's own
parameter, the in-process stop sequences and budget, and the operation's model id; the
reply is text parsed like the in-process backend's; garbage is MODEL_034; a timed-out
request is retried once at most."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from remora.config import ModelConfig
from remora.errors import ModelError
from remora.model.base import Message, ModelRequest, ModelResponse, ToolCall, ToolSpec
from remora.model.factory import create_client, describe_backend
from remora.model.functiongemma import STOP_SEQUENCES, render_prompt
from remora.model.grammar import build_call_grammar
from remora.model.openai_http import OpenAIBackend, ServerGrammar, completion_prompt
from remora.runner.parsing import parse_response
from tests.support.http import Script, scripted_server

ECHO = ToolSpec(
    name="echo",
    description="Send text back unchanged.",
    parameters={
        "type": "object",
        "properties": {"text": {"type": "string", "maxLength": 200}},
        "required": ["text"],
    },
)
SUBMIT = ToolSpec(
    name="submit_result",
    description="Finish the task.",
    parameters={
        "type": "object",
        "properties": {"summary": {"type": "string"}},
        "required": ["summary"],
    },
)
CALL_TEXT = "<start_function_call>call:echo{text:<escape>total<escape>}<end_function_call>"


def text_completion(
    text: Any = CALL_TEXT, finish: str = "stop", prompt_tokens: int = 30, completion: int = 12
) -> dict[str, Any]:
    return {
        "id": "cmpl-1",
        "object": "text_completion",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "text": text, "finish_reason": finish, "logprobs": None}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion,
            "total_tokens": prompt_tokens + completion,
        },
    }


@pytest.fixture
def fake_server() -> Iterator[tuple[str, Script]]:
    script = Script(answers=[(200, text_completion())])
    with scripted_server(script) as url:
        yield url, script


def run(base_url: str, request: ModelRequest, **options: Any) -> ModelResponse:
    async def go() -> ModelResponse:
        settings: dict[str, Any] = {
            "model_id": "m",
            "backoff": 0.01,
            "mode": "completions",
            **options,
        }
        backend = OpenAIBackend(base_url=base_url, **settings)
        try:
            return await backend.complete(request)
        finally:
            await backend.aclose()

    return asyncio.run(go())


def harness_request(**update: Any) -> ModelRequest:
    request = ModelRequest(
        messages=[
            Message(
                role="system", content="<task_description>Echo, then submit.</task_description>"
            ),
            Message(role="user", content='Code element: function `total`. Call echo with "total".'),
        ],
        tools=[ECHO, SUBMIT],
        allowed_tools=["echo", "submit_result"],
        max_tokens=64,
    )
    return request.model_copy(update=update)


def second_turn() -> ModelRequest:
    call = ToolCall(id="call_1_0", name="echo", arguments={"text": "total"})
    messages = [
        *harness_request().messages,
        Message(role="assistant", tool_calls=[call]),
        Message(
            role="tool",
            name="echo",
            tool_call_id="call_1_0",
            content=json.dumps({"name": "echo", "response": {"outcome": "success"}}),
        ),
    ]
    return harness_request(messages=messages, choices={"text": ["total"]})


@pytest.mark.parametrize("request_", [harness_request(), second_turn()], ids=["first", "second"])
def test_the_prompt_is_the_in_process_rendering(
    fake_server: tuple[str, Script], request_: ModelRequest
) -> None:
    url, script = fake_server
    run(url, request_)
    (body,) = script.bodies("/v1/completions")
    rendered = render_prompt(request_.messages, request_.tools, ensure_trigger=True)
    assert rendered.startswith("<bos>")
    assert body["prompt"] == rendered.removeprefix("<bos>") == completion_prompt(request_)
    assert "messages" not in body and "tools" not in body


@pytest.mark.parametrize(
    ("flavour", "field_path"),
    [
        ("llama_cpp", ("grammar",)),
        ("vllm", ("structured_outputs", "grammar")),
        ("vllm_guided", ("guided_grammar",)),
    ],
)
def test_the_call_grammar_goes_in_the_servers_own_field(
    fake_server: tuple[str, Script], flavour: ServerGrammar, field_path: tuple[str, ...]
) -> None:
    url, script = fake_server
    request = second_turn()
    run(url, request, server_grammar=flavour)
    (body,) = script.bodies("/v1/completions")
    value: Any = body
    for key in field_path:
        value = value[key]
    expected = build_call_grammar([ECHO, SUBMIT], {"text": ["total"]}, optional_call=False)
    assert value == expected.gbnf
    assert "echo{text:<escape>total<escape>}" in value
    grammar_fields = {"grammar", "structured_outputs", "guided_grammar"}
    assert grammar_fields & set(body) == {field_path[0]}
    assert body["stop"] == list(STOP_SEQUENCES)
    assert body["temperature"] == 0.0
    assert body["top_k"] == 64 and body["min_p"] == 0.0
    if flavour == "llama_cpp":
        assert body["repeat_penalty"] == 1.0
    else:
        assert body["skip_special_tokens"] is False
        assert body["spaces_between_special_tokens"] is False


@pytest.mark.parametrize(
    "options",
    [{"server_grammar": "none"}, {"grammar": False}],
    ids=["server-grammar-none", "grammar-off"],
)
def test_no_grammar_is_sent_when_turned_off(
    fake_server: tuple[str, Script], options: dict[str, Any]
) -> None:
    url, script = fake_server
    run(url, harness_request(), **options)
    (body,) = script.bodies("/v1/completions")
    assert not {"grammar", "structured_outputs", "guided_grammar"} & set(body)
    assert body["stop"] == list(STOP_SEQUENCES)
    assert body["max_tokens"] == 64


def test_optional_calls_get_the_optional_grammar_and_the_plain_budget(
    fake_server: tuple[str, Script],
) -> None:
    url, script = fake_server
    run(url, harness_request(tool_choice="auto", max_tokens=40))
    run(url, harness_request(max_tokens=40))
    optional, required = script.bodies("/v1/completions")
    assert optional["grammar"] == build_call_grammar([ECHO, SUBMIT], optional_call=True).gbnf
    assert optional["max_tokens"] == 40
    # In-process, a required call under the grammar is always extended once when cut.
    assert required["grammar"] == build_call_grammar([ECHO, SUBMIT]).gbnf
    assert required["max_tokens"] == 80


def test_only_the_allowed_tools_are_in_the_grammar_but_all_are_declared(
    fake_server: tuple[str, Script],
) -> None:
    url, script = fake_server
    run(url, harness_request(allowed_tools=["submit_result"]))
    (body,) = script.bodies("/v1/completions")
    assert "submit_result" in body["grammar"]
    assert "echo" not in body["grammar"]
    assert "<start_function_declaration>declaration:echo" in body["prompt"]


def test_the_operations_model_id_is_the_model_field(fake_server: tuple[str, Script]) -> None:
    """vLLM serves LoRA adapters (``--lora-modules docstring-lora=...``) as model ids."""
    url, script = fake_server
    script.models = ["gemma-base", "docstring-lora", "lint-lora"]
    run(url, harness_request(model_id="docstring-lora"), model_id="gemma-base")
    run(url, harness_request(), model_id="gemma-base")
    assert [body["model"] for body in script.bodies("/v1/completions")] == [
        "docstring-lora",
        "gemma-base",
    ]
    with pytest.raises(ModelError) as info:
        run(url, harness_request(model_id="test-lora"), model_id="gemma-base")
    assert info.value.code == "MODEL_031"
    assert "test-lora" in info.value.message
    assert len(script.bodies("/v1/completions")) == 2


def test_the_reply_is_parsed_like_the_in_process_backends(
    fake_server: tuple[str, Script],
) -> None:
    url, script = fake_server
    script.answers = [(200, text_completion(CALL_TEXT, prompt_tokens=31, completion=17))]
    response = run(url, harness_request())
    assert response.tool_calls == []
    assert response.content == response.raw_text == CALL_TEXT
    assert response.finish_reason == "stop"
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (31, 17)
    parsed = parse_response(response)
    assert [(call.name, call.arguments) for call in parsed.calls] == [("echo", {"text": "total"})]
    assert parsed.paths == ["functiongemma"]


def test_a_call_cut_by_max_tokens_is_asked_again_with_the_extended_budget(
    fake_server: tuple[str, Script],
) -> None:
    url, script = fake_server
    cut = "Sure.<start_function_call>call:echo{text:<escape>to"
    script.answers = [
        (200, text_completion(cut, finish="length", prompt_tokens=30, completion=40)),
        (200, text_completion("Sure." + CALL_TEXT, prompt_tokens=30, completion=45)),
    ]
    response = run(url, harness_request(tool_choice="auto", max_tokens=40))
    first, second = script.bodies("/v1/completions")
    assert (first["max_tokens"], second["max_tokens"]) == (40, 80)
    assert second["prompt"] == first["prompt"] and second["grammar"] == first["grammar"]
    assert response.raw_text == "Sure." + CALL_TEXT
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (60, 85)


def test_text_cut_outside_a_call_is_not_asked_again(fake_server: tuple[str, Script]) -> None:
    url, script = fake_server
    script.answers = [(200, text_completion("I think", finish="length"))]
    response = run(url, harness_request(tool_choice="auto", max_tokens=40))
    assert len(script.bodies("/v1/completions")) == 1
    assert response.finish_reason == "length"


GARBAGE = {
    "bad-json": b'{"id": "x", "choices": [ {',
    "html": b"<html><body>502 Bad Gateway</body></html>",
    "no-choices": {"id": "x", "object": "text_completion"},
    "chat-shaped": {
        "id": "x",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}}],
    },
    "text-not-a-string": text_completion(text={"call": "echo"}),
}


@pytest.mark.parametrize("kind", sorted(GARBAGE))
def test_a_reply_that_is_not_a_completion_is_model_034(
    fake_server: tuple[str, Script], kind: str
) -> None:
    url, script = fake_server
    script.answers = [(200, GARBAGE[kind])]
    started = time.perf_counter()
    with pytest.raises(ModelError) as info:
        run(url, harness_request(), max_retries=0)
    assert info.value.code == "MODEL_034"
    assert "not a completion" in info.value.message
    assert url in info.value.message
    assert time.perf_counter() - started < 10


def test_a_server_without_completions_is_model_036(fake_server: tuple[str, Script]) -> None:
    url, script = fake_server
    script.answers = [(404, {"error": {"message": "Not Found", "type": "not_found"}})]
    with pytest.raises(ModelError) as info:
        run(url, harness_request())
    assert info.value.code == "MODEL_036"
    assert "model.openai_mode: chat" in (info.value.hint or "")


def test_a_timed_out_request_is_retried_once_only(fake_server: tuple[str, Script]) -> None:
    url, script = fake_server
    script.delay = 1.0
    started = time.monotonic()
    with pytest.raises(ModelError) as info:
        run(url, harness_request(), max_retries=3, timeout=0.3)
    assert info.value.code == "MODEL_035"
    assert "0.3 s (2 attempts)" in info.value.message
    assert len(script.bodies("/v1/completions")) == 2
    assert time.monotonic() - started < 2 * 0.3 + 1.5 * 0.01 + 2.0


def test_server_errors_keep_every_retry(fake_server: tuple[str, Script]) -> None:
    url, script = fake_server
    script.answers = [(503, {"error": {"message": "loading model"}})]
    with pytest.raises(ModelError) as info:
        run(url, harness_request(), max_retries=3)
    assert info.value.code == "MODEL_032"
    assert len(script.bodies("/v1/completions")) == 4


def test_server_errors_do_not_use_up_the_timeout_retry(fake_server: tuple[str, Script]) -> None:
    url, script = fake_server
    script.answers = [(500, {"error": {"message": "busy"}})] * 2 + [(200, text_completion())]
    script.delays = [0.0, 0.0]
    script.delay = 1.0
    with pytest.raises(ModelError) as info:
        run(url, harness_request(), max_retries=5, timeout=0.3)
    assert info.value.code == "MODEL_035"
    assert "(4 attempts)" in info.value.message
    assert len(script.bodies("/v1/completions")) == 4


def test_the_configured_mode_is_built_and_named() -> None:
    default = ModelConfig(backend="openai")
    client = create_client(default, environ={})
    assert isinstance(client, OpenAIBackend)
    assert (client.mode, client.server_grammar) == ("completions", "llama_cpp")
    assert client.label == describe_backend(default) == "openai (completions + llama_cpp grammar)"
    chat = ModelConfig(backend="openai", openai_mode="chat")
    assert describe_backend(chat) == "openai (chat + native tools)"
    vllm = ModelConfig(backend="openai", server_grammar="vllm")
    assert describe_backend(vllm) == "openai (completions + vllm grammar)"
    assert describe_backend(ModelConfig(backend="openai", grammar=False)) == (
        "openai (completions, no grammar)"
    )
    assert describe_backend(ModelConfig()) == "llama_cpp"
