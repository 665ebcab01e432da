"""``remora eval`` through the real command: help, usage errors, and a run against an
OpenAI-compatible server (a fake one on 127.0.0.1 that answers like a careful model)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli_process import run_remora
from tests.support.eval_context import EVAL_PACKAGE
from tests.support.http import serve

DOCSTRING_STEPS = ("read_signature", "write_docstring", "check_docstring", "submit_result")


def next_call(payload: dict[str, Any]) -> dict[str, Any]:
    """The docstring agent's expert sequence: the first step this conversation has not done."""
    done = {
        call["function"]["name"]
        for message in payload["messages"]
        for call in message.get("tool_calls") or []
    }
    name = next(step for step in DOCSTRING_STEPS if step not in done)
    arguments: dict[str, Any] = {}
    if name == "write_docstring":
        arguments = {"summary": "Combine the values into a total."}
    if name == "submit_result":
        arguments = {"summary": "Wrote the docstring.", "status": "success"}
    return {"name": name, "arguments": json.dumps(arguments)}


@pytest.fixture
def server() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    received: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def _send(self, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._send({"object": "list", "data": [{"id": "big", "object": "model"}]})

        def do_POST(self) -> None:
            payload = json.loads(self.rfile.read(int(self.headers["content-length"])))
            received.append(payload)
            call = {
                "id": f"call_{len(received)}",
                "type": "function",
                "function": next_call(payload),
            }
            message = {"role": "assistant", "content": "", "tool_calls": [call]}
            self._send(
                {
                    "id": "c",
                    "object": "chat.completion",
                    "created": 1,
                    "model": payload["model"],
                    "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                }
            )

        def log_message(self, format: str, *args: Any) -> None:
            pass

    with serve(Handler) as url:
        yield f"{url}/v1", received


def test_help_teaches_the_command(tmp_path: Path) -> None:
    done = run_remora("eval", "--help", cwd=tmp_path)
    assert done.returncode == 0
    for text in ("SPEC", "--ops", "--limit", "--seed", "--format", "--out", "hypothesis write"):
        assert text in done.stdout


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["not a requirement !!"], "EVAL_001"),
        ([str(EVAL_PACKAGE), "--ops", "lint,nope"], "EVAL_004"),
        ([str(EVAL_PACKAGE), "--limit", "0"], "EVAL_005"),
    ],
)
def test_usage_errors_are_coded_and_exit_2(tmp_path: Path, args: list[str], code: str) -> None:
    done = run_remora("eval", *args, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1].startswith(f"{code}: ")
    assert "Traceback" not in done.stderr


def test_a_kept_directory_is_never_overwritten(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "report.md").write_text("an earlier run\n")
    done = run_remora("eval", str(EVAL_PACKAGE), "--out", str(out), cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.splitlines()[-1].startswith("EVAL_006: ")
    assert (out / "report.md").read_text() == "an earlier run\n"


def test_the_eval_runs_against_an_openai_compatible_server(
    tmp_path: Path, server: tuple[str, list[dict[str, Any]]]
) -> None:
    url, received = server
    out = tmp_path / "run"
    done = run_remora(
        "--set",
        f"model.base_url={url}",
        "--set",
        "model.model_id=big",
        "--set",
        "model.openai_mode=chat",
        "eval",
        str(EVAL_PACKAGE),
        "--ops",
        "docstring",
        "--limit",
        "2",
        "--backend",
        "openai",
        "--format",
        "markdown",
        "--out",
        str(out),
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert received and {payload["model"] for payload in received} == {"big"}
    assert f"openai-compatible server {url}, model big, openai (chat" in done.stdout
    assert "--set model.backend=openai eval" in done.stdout
    assert "### docstring" in done.stdout
    report = json.loads((out / "report.json").read_text())
    [docstring] = report["reports"]
    assert len(docstring["selection"]) == 2
    host_only, figures, _, sampled = docstring["remora"]
    assert host_only["jobs"] == 2 and host_only["mean_turns"] == 0.0
    assert figures["jobs"] == 2 and sum(figures["statuses"].values()) == 2
    assert figures["call_validity"] == 1.0 and figures["candidates"] == 0
    # A server answers one sample per request: the candidates row asks it four times.
    assert sampled["candidates"] == 4 * sampled["jobs"] == 8
    assert (out / "report.md").read_text() == done.stdout
    assert (out / "work" / "original").is_dir()


def test_a_row_no_operation_measured_is_an_error(tmp_path: Path) -> None:
    done = run_remora(
        "eval",
        str(EVAL_PACKAGE),
        "--ops",
        "test",
        "--limit",
        "1",
        "--no-baselines",
        "--rows",
        "remora (host only, untested),remora (hots only)",
        cwd=tmp_path,
    )
    assert done.returncode == 2, done.stderr[-2000:]
    last = done.stderr.splitlines()[-1]
    assert last.startswith("EVAL_007: no operation measured the row(s) 'remora (hots only)'")
    assert "remora (host only, untested)" in last  # measured, and listed
