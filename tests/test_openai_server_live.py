"""Completions mode against a real ``python -m llama_cpp.server`` on 127.0.0.1 with the
embedded GGUF: the harness agent's turns come back as valid calls, and as the very text,
finish reason, prompt tokens and parsed calls the in-process backend gives for the same
request. Equal to the token, once three differences that are not the mode's are removed:

- jump-forward: the in-process backend compared runs with ``jump_forward=False``.
  Jump-forward appends the text the grammar forces as one tokenization of that text, not
  the tokens greedy sampling would have chosen one by one (``sub`` + forced
  ``mit_result{`` rather than ``submit``, ``_``, ``result``, ``{``); the model then sees
  other tokens and later choices can differ (on the harness's submit turn it writes
  ``summary`` first instead of ``status``).
- attention kernel: the server runs with ``--flash_attn true``, llama.cpp's default on a
  CPU and so the in-process backend's; llama-cpp-python's server turns it off.
- cache state: both reuse the longest cached prefix, and a prompt evaluated in other
  batches or other KV cells sums its floats in another order, enough to flip a near tie
  (a log-probability gap of 0.009 was seen) deep in a degenerate string. So the
  in-process backend has one KV sequence like the server, and each compared request
  follows the same one-token primer on both sides (:func:`from_the_same_cache`).

One server per module (about 2 s to start, killed with its process group), one thread
like the in-process default on this machine.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest

from remora.config import ModelConfig
from remora.discovery import discover
from remora.model.base import Message, ModelClient, ModelRequest, ModelResponse, ToolCall
from remora.model.defaults import resolve_model_path
from remora.model.llama_cpp import LlamaCppBackend
from remora.model.openai_http import OpenAIBackend, completion_prompt
from remora.operations import installed_operations, load_agents
from remora.runner.parsing import parse_response
from tests.support.llama_server import llama_server
from tests.support.timed import run_timed

pytestmark = pytest.mark.model

ALIAS = "remora-live"
PROJECT = Path(__file__).resolve().parents[1] / "examples" / "sample_project"
SAMPLE = PROJECT / "inventory" / "pricing.py"
LIMIT = 150.0
"""Seconds one request may take before the test fails (a loaded 2-core machine is slow)."""


PRIMER = ModelRequest(
    messages=[Message(role="user", content="Hi.")], max_tokens=1, conversation_id="live"
)
"""A one-token request whose prompt shares only ``<bos><start_of_turn>`` with the others;
the server's first request, so those two cells are computed alike on both sides."""


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    """``python -m llama_cpp.server`` on the embedded GGUF, primed with :data:`PRIMER`."""
    with llama_server(
        resolve_model_path(ModelConfig()), ALIAS, context=4096, threads=1, ready_within=60
    ) as url:
        complete(url, PRIMER)
        yield url


@pytest.fixture(scope="module")
def in_process() -> Iterator[LlamaCppBackend]:
    """One KV sequence like the server's, so cached prefixes occupy the same cells."""
    backend = LlamaCppBackend(
        resolve_model_path(ModelConfig()),
        context_size=4096,
        cache_tokens=4096,
        sequences=1,
        threads=1,
        jump_forward=False,
    )
    backend.load()
    yield backend
    backend.close()


def harness_requests() -> dict[str, ModelRequest]:
    """Turns of the harness agent as the runner sends them: the first turn on two nodes,
    the turn after a correct echo, and a last turn that allows only submit_result."""
    config = installed_operations().config()
    agent = load_agents(config.agents.dirs)["harness"]
    nodes = {node.name: node for node in discover([SAMPLE], config.discovery, PROJECT).nodes}
    tools = agent.tool_specs()
    budget = config.model.max_tokens

    def first(name: str) -> list[Message]:
        node = nodes[name]
        context = agent.render_node_context(
            {
                "node_type": node.node_type,
                "node_name": node.name,
                "file_path": node.file_path,
                "node_text": node.text,
            }
        )
        return [
            Message(role="system", content=agent.initial_context.system_prompt),
            Message(role="user", content=context),
        ]

    echoed = [
        *first("apply_discount"),
        Message(
            role="assistant",
            tool_calls=[ToolCall(id="call_1_0", name="echo", arguments={"text": "apply_discount"})],
        ),
        Message(
            role="tool",
            name="echo",
            tool_call_id="call_1_0",
            content='{"name": "echo", "response": {"outcome": "success", '
            '"summary": "echo returned \\"apply_discount\\"", "result": "apply_discount"}}',
        ),
    ]
    return {
        "first-turn-function": ModelRequest(
            messages=first("apply_discount"), tools=tools, max_tokens=budget
        ),
        "first-turn-other-function": ModelRequest(
            messages=first("format_cents"), tools=tools, max_tokens=budget
        ),
        "after-echo": ModelRequest(messages=echoed, tools=tools, max_tokens=budget),
        "submit-only": ModelRequest(
            messages=echoed,
            tools=tools,
            allowed_tools=["submit_result"],
            choices={"status": ["success"]},
            max_tokens=24,
        ),
    }


REQUESTS = harness_requests()


def complete(model: ModelClient | str, request: ModelRequest) -> ModelResponse:
    """One request to the in-process backend, or to the server at ``model`` in completions
    mode with the llama.cpp grammar; a hang fails the test instead of the suite."""

    async def go() -> ModelResponse:
        if not isinstance(model, str):
            return await model.complete(request)
        backend = OpenAIBackend(
            base_url=model, model_id=ALIAS, mode="completions", timeout=LIMIT, max_retries=0
        )
        try:
            return await backend.complete(request)
        finally:
            await backend.aclose()

    response, _ = run_timed(lambda: asyncio.run(go()), limit=LIMIT + 10)
    assert isinstance(response, ModelResponse)
    return response


def test_the_server_completes_the_in_process_prompt(in_process: LlamaCppBackend) -> None:
    for request in REQUESTS.values():
        assert in_process.render(request) == "<bos>" + completion_prompt(request)


def from_the_same_cache(model: LlamaCppBackend | str, request: ModelRequest) -> ModelResponse:
    """``request`` right after :data:`PRIMER`, so both sides evaluate its prompt in the
    same batches on the same cached ``<bos><start_of_turn>``, whatever ran before."""
    if isinstance(model, LlamaCppBackend):
        model.clear_cache()
    complete(model, PRIMER)
    return complete(model, request.model_copy(update={"conversation_id": PRIMER.conversation_id}))


@pytest.mark.parametrize("name", list(REQUESTS))
def test_the_server_gives_the_in_process_calls(
    server: str, in_process: LlamaCppBackend, name: str
) -> None:
    request = REQUESTS[name]
    local = from_the_same_cache(in_process, request)
    served = from_the_same_cache(server, request)
    assert parse_response(served).calls == parse_response(local).calls
    assert (served.raw_text, served.content, served.finish_reason) == (
        local.raw_text,
        local.content,
        local.finish_reason,
    )
    assert served.tool_calls == local.tool_calls == []
    # The server adds <bos> itself: the same prompt tokens, not one more.
    assert served.usage.prompt_tokens == local.usage.prompt_tokens
    if served.finish_reason == "stop":
        parsed = parse_response(served)
        assert parsed.paths == ["functiongemma"]
        (call,) = parsed.calls
        specs = {spec.name: spec for spec in request.allowed_specs()}
        jsonschema.validate(call.arguments, specs[call.name].parameters)
        assert served.raw_text.endswith("<end_function_call>")
