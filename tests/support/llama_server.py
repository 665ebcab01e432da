"""``python -m llama_cpp.server`` on 127.0.0.1 for the live server test and bench_serving."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

_PLAIN_BUFFERS_SERVER = """
import runpy
import llama_cpp.llama_cpp as bindings

defaults = bindings.llama_model_default_params

def plain_buffers():
    params = defaults()
    params.use_extra_bufts = False
    return params

bindings.llama_model_default_params = plain_buffers
runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
"""
"""llama-cpp-python's server has no switch for llama.cpp's extra buffer types: where the
load probe turned them off (a build that crashes with them), the server starts with its
model parameters' default changed the same way."""


def server_command(model: Path, threads: int) -> list[str]:
    """``python -m llama_cpp.server``, with the load profile the probe chose for ``model``."""
    from remora.model.load_probe import choose_profile

    profile, _ = choose_profile(model, "auto", threads=threads, batch_size=512)
    if profile.extra_buffers:
        return [sys.executable, "-m", "llama_cpp.server"]
    return [sys.executable, "-c", _PLAIN_BUFFERS_SERVER]


@contextlib.contextmanager
def llama_server(
    model: Path, alias: str, *, context: int, threads: int, ready_within: float
) -> Iterator[str]:
    """The server's ``/v1`` URL once ``/models`` answers; RuntimeError if it exits or is not
    ready within ``ready_within`` seconds.

    It runs in its own process group, so it and anything it starts are killed however the
    caller ends. Flash attention is on, as llama.cpp's default gives the in-process backend
    on a CPU (llama-cpp-python's server turns it off, which changes floats enough to flip
    ties). The weights load as the load probe decided for this machine.
    """
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    command = [
        *server_command(model, threads),
        "--model",
        str(model),
        "--model_alias",
        alias,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(context),
        "--n_threads",
        str(threads),
        "--flash_attn",
        "true",
        "--verbose",
        "false",
    ]
    url = f"http://127.0.0.1:{port}/v1"
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=log, start_new_session=True
        )
        try:
            deadline = time.monotonic() + ready_within
            while True:
                if process.poll() is not None:
                    log.seek(0)
                    raise RuntimeError(f"llama_cpp.server exited: {log.read().decode()[-2000:]}")
                with (
                    contextlib.suppress(OSError),
                    urllib.request.urlopen(url + "/models", timeout=1) as reply,
                ):
                    if reply.status == 200:
                        break
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"llama_cpp.server did not become ready within {ready_within:g} s"
                    )
                time.sleep(0.2)
            yield url
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()
