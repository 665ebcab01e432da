"""``model.request_timeout`` is a wall-clock deadline for a whole attempt, not per read: a
server that trickles its reply or never answers is MODEL_035 (a timeout, naming the
setting) after at most two attempts, within 2 x timeout + backoff whatever
``model.max_retries`` says, never "cannot reach" and never the job timeout."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from remora.errors import ModelError
from remora.model.base import Message, ModelRequest
from remora.model.openai_http import OpenAIBackend
from tests.support.http import serve
from tests.support.timed import run_timed

TIMEOUT = 0.8
BACKOFF = 0.05


def complete(base_url: str, *, check_model: bool, max_retries: int) -> None:
    async def go() -> None:
        backend = OpenAIBackend(
            base_url=base_url,
            model_id="m",
            timeout=TIMEOUT,
            max_retries=max_retries,
            backoff=BACKOFF,
            check_model=check_model,
        )
        try:
            await backend.complete(ModelRequest(messages=[Message(role="user", content="hi")]))
        finally:
            await backend.aclose()

    asyncio.run(go())


def bound(max_retries: int) -> float:
    """The documented worst case of a server that never finishes (a timed-out request is
    retried at most once) plus slack for a loaded test machine."""
    retries = min(max_retries, 1)
    return float((retries + 1) * TIMEOUT + 1.5 * BACKOFF * (2**retries - 1) + 2.0)


@pytest.fixture
def trickling() -> Iterator[str]:
    """Headers at once, then one body byte every 0.2 s: each read is quick, the whole is not."""
    stop = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def _trickle(self) -> None:
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", "1000")
            self.end_headers()
            with contextlib.suppress(OSError):
                while not stop.wait(0.2):
                    self.wfile.write(b" ")
                    self.wfile.flush()

        def do_GET(self) -> None:
            self._trickle()

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length", "0")))
            self._trickle()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    with serve(Handler) as url:
        try:
            yield url + "/v1"
        finally:
            stop.set()


@pytest.fixture
def hung() -> Iterator[str]:
    """A socket that completes TCP handshakes (the kernel's backlog) and never answers."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1"


@pytest.mark.parametrize("check_model", [False, True], ids=["completion", "models-check"])
def test_a_trickling_server_hits_the_deadline(trickling: str, check_model: bool) -> None:
    started = time.monotonic()
    with pytest.raises(ModelError) as caught:
        run_timed(lambda: complete(trickling, check_model=check_model, max_retries=1), limit=30)
    assert time.monotonic() - started < bound(1)
    error = caught.value
    assert error.code == "MODEL_035"
    assert "model.request_timeout" in (error.hint or "")
    assert f"{TIMEOUT:g} s (2 attempts)" in error.message


@pytest.mark.parametrize("check_model", [False, True], ids=["completion", "models-check"])
def test_a_hung_server_is_a_timeout_not_unreachable(hung: str, check_model: bool) -> None:
    started = time.monotonic()
    with pytest.raises(ModelError) as caught:
        run_timed(lambda: complete(hung, check_model=check_model, max_retries=3), limit=30)
    elapsed = time.monotonic() - started
    assert caught.value.code == "MODEL_035"
    assert "cannot reach" not in caught.value.message
    assert "(2 attempts)" in caught.value.message
    assert elapsed < bound(3)
    assert elapsed >= 2 * TIMEOUT


def test_the_trickle_is_bounded_by_the_documented_worst_case(trickling: str) -> None:
    """The defaults' max_retries (3) would have taken 4 x timeout; a timeout is retried once."""
    started = time.monotonic()
    with pytest.raises(ModelError) as caught:
        run_timed(lambda: complete(trickling, check_model=False, max_retries=3), limit=30)
    elapsed = time.monotonic() - started
    assert 2 * TIMEOUT <= elapsed < bound(3)
    assert "(2 attempts)" in caught.value.message


def test_a_refused_connection_stays_unreachable() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    started = time.monotonic()
    with pytest.raises(ModelError) as caught:
        run_timed(
            lambda: complete(f"http://127.0.0.1:{port}/v1", check_model=False, max_retries=1),
            limit=30,
        )
    assert caught.value.code == "MODEL_030"
    assert time.monotonic() - started < bound(1)
