"""Run a call that might hang in a thread, so a regression fails its test instead of
hanging the suite."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest


def run_timed(
    call: Callable[[], Any], limit: float = 5.0, release: Callable[[], None] | None = None
) -> tuple[Any, float]:
    """``call``'s result (its error re-raised here) and its duration; the test fails after
    ``limit`` seconds, once ``release`` (e.g. opening a FIFO's write end) has freed the thread."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # re-raised in the test thread
            box["error"] = exc

    started = time.monotonic()
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(limit)
    elapsed = time.monotonic() - started
    if thread.is_alive():
        if release is not None:
            release()
            thread.join(limit)
        pytest.fail(f"the call was still running after {limit} s")
    if "error" in box:
        raise box["error"]
    return box.get("value"), elapsed
