"""A server that answers 200 with something that is not a chat completion (or, for
``/models``, a model list) is the server's fault: MODEL_034, quickly, never a raw
JSONDecodeError or AttributeError."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from remora.errors import ModelError
from remora.model.base import Message, ModelRequest
from remora.model.openai_http import OpenAIBackend
from tests.support.http import serve

REPLIES = {
    "/bad-json/v1": ("application/json", b'{"id": "x", "choices": [ {'),
    "/html/v1": ("text/html", b"<html><body>502 Bad Gateway</body></html>"),
    "/no-choices/v1": ("application/json", b'{"id": "x", "object": "chat.completion"}'),
}


@pytest.fixture
def server() -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self._reply(self.path.rsplit("/models", 1)[0])

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length", "0")))
            self._reply(self.path.rsplit("/chat/completions", 1)[0])

        def _reply(self, prefix: str) -> None:
            kind, body = REPLIES[prefix]
            self.send_response(200)
            self.send_header("content-type", kind)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    with serve(Handler) as url:
        yield url


@pytest.mark.parametrize("check_model", [False, True], ids=["completion", "models-check"])
@pytest.mark.parametrize("prefix", sorted(REPLIES))
def test_a_reply_that_is_not_a_completion_is_model_034(
    server: str, prefix: str, check_model: bool
) -> None:
    async def go() -> None:
        backend = OpenAIBackend(
            base_url=server + prefix, model_id="m", check_model=check_model, max_retries=0
        )
        try:
            await backend.complete(ModelRequest(messages=[Message(role="user", content="hi")]))
        finally:
            await backend.aclose()

    started = time.perf_counter()
    with pytest.raises(ModelError) as caught:
        asyncio.run(go())
    assert caught.value.code == "MODEL_034"
    assert server + prefix in caught.value.message
    assert time.perf_counter() - started < 10
