"""A throwaway HTTP server on 127.0.0.1 for tests of the OpenAI-compatible backend."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@contextmanager
def serve(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """``handler`` serving on a free port; yields ``http://127.0.0.1:PORT``."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@dataclass
class Script:
    """What a scripted OpenAI-compatible server answers, in order (the last answer
    repeats), and every request it got as ``(path, body)``."""

    answers: list[tuple[int, Any]]
    models: list[str] = field(default_factory=lambda: ["m"])
    delay: float = 0.0
    delays: list[float] = field(default_factory=list)
    """Per-request delays, used up in order before ``delay`` applies."""
    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def bodies(self, path: str | None = None) -> list[dict[str, Any]]:
        """The bodies POSTed (to ``path`` only, when given)."""
        return [body for where, body in self.requests if path is None or where == path]


@contextmanager
def scripted_server(script: Script) -> Iterator[str]:
    """A server answering ``GET /v1/models`` with ``script.models`` and every POST with
    the next of ``script.answers`` (JSON, or bytes as they are); yields its ``/v1`` URL."""

    class Handler(BaseHTTPRequestHandler):
        def _send(self, status: int, body: Any) -> None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            models = [{"id": name, "object": "model", "owned_by": "me"} for name in script.models]
            self._send(200, {"object": "list", "data": models})

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            script.requests.append((self.path, json.loads(self.rfile.read(length))))
            time.sleep(script.delays.pop(0) if script.delays else script.delay)
            answers = script.answers
            status, body = answers.pop(0) if len(answers) > 1 else answers[0]
            with contextlib.suppress(OSError):
                self._send(status, body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    with serve(Handler) as url:
        yield f"{url}/v1"
