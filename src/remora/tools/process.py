"""Run one helper command the way every capability must: timeout, scrubbed env, capped output.

The child starts in its own session so a timeout kills the whole process group (pytest
workers, shells a function spawned), not just the direct child. Output goes to temporary
files rather than pipes, so a chatty child can neither deadlock nor fill memory; only the
tail is kept.

Codes: TOOL_200 the command cannot be started, TOOL_201 the command timed out.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from remora.errors import ToolError

DEFAULT_OUTPUT_LIMIT = 16_000
_KILL_GRACE = 5.0


@dataclass(frozen=True)
class CommandResult:
    """What a finished command left behind; ``stdout``/``stderr`` are tails of at most the limit."""

    returncode: int
    stdout: str
    stderr: str
    duration: float
    stdout_truncated: bool
    stderr_truncated: bool


def scrubbed_env(
    home: Path, pythonpath: Sequence[Path] = (), extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """A minimal environment: nothing from the parent except PATH and LANG.

    Secrets, proxies, virtualenv activation and Python flags of the host process never
    reach tools or user code; HOME and TMPDIR point at a private temporary directory.
    """
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "LANG": os.environ.get("LANG", "C.UTF-8"),
        "HOME": str(home),
        "TMPDIR": str(home),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONIOENCODING": "utf-8",
        "NO_COLOR": "1",
    }
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(str(path) for path in pythonpath)
    env.update(extra or {})
    return env


def import_roots(view: Path) -> list[Path]:
    """Where the project's modules import from: the view, and its ``src/`` when present."""
    source = view / "src"
    return [view, source] if source.is_dir() else [view]


def python_command(*args: str) -> list[str]:
    """argv running the host interpreter, which is where ruff, pytest and remora are installed."""
    return [sys.executable, *args]


def run_command(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float,
    what: str,
    input_data: bytes = b"",
    output_limit: int = DEFAULT_OUTPUT_LIMIT,
    terminate_grace: float = 0.0,
) -> CommandResult:
    """Run ``argv`` to completion or kill its process group after ``timeout`` seconds.

    ``what`` names the command in error messages ("pytest", "ruff"); ``input_data`` is its
    standard input. A timeout raises TOOL_201 with the tail of what it printed so far.
    With ``terminate_grace`` the child first gets SIGTERM and that many seconds to clean
    up (the sandbox launcher kills descendants that left its process group).
    """
    with (
        tempfile.TemporaryFile() as stdin,
        tempfile.TemporaryFile() as out,
        tempfile.TemporaryFile() as err,
    ):
        stdin.write(input_data)
        stdin.seek(0)
        started = time.monotonic()
        try:
            process = subprocess.Popen(
                list(argv),
                cwd=cwd,
                env=dict(env),
                stdin=stdin,
                stdout=out,
                stderr=err,
                start_new_session=True,
            )
        except OSError as exc:
            raise ToolError(
                "TOOL_200",
                f"cannot start {what}: {exc.strerror or exc}",
                f"check that {what} is installed in Remora's environment",
            ) from None
        try:
            returncode = _wait(process, timeout)
        except subprocess.TimeoutExpired:
            if terminate_grace > 0:
                process.terminate()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(timeout=terminate_grace)
            _kill_group(process)
            tail = _tail(err, output_limit)[0] or _tail(out, output_limit)[0]
            last = tail.strip().splitlines()[-5:]
            shown = ("; last output: " + " | ".join(last)) if last else ""
            raise ToolError(
                "TOOL_201",
                f"{what} did not finish within {timeout:g} seconds and was stopped{shown}",
                "look for an infinite loop or blocking call, or narrow what you run",
            ) from None
        finally:
            _kill_group(process)
        duration = time.monotonic() - started
        stdout, stdout_cut = _tail(out, output_limit)
        stderr, stderr_cut = _tail(err, output_limit)
    return CommandResult(returncode, stdout, stderr, duration, stdout_cut, stderr_cut)


def _wait(process: subprocess.Popen[bytes], timeout: float) -> int:
    """``process.wait(timeout)`` without its polling: Popen sleeps up to 50 ms between
    checks, which a pidfd avoids (Linux 5.3 and later)."""
    try:
        pidfd = os.pidfd_open(process.pid)
    except (AttributeError, OSError):
        return process.wait(timeout=timeout)
    try:
        ready, _, _ = select.select([pidfd], [], [], timeout)
    finally:
        os.close(pidfd)
    if not ready:
        raise subprocess.TimeoutExpired(process.args, timeout)
    return process.wait()


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """Kill whatever is left of the child's session, including strays it left behind."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        if process.poll() is None:
            process.kill()
    try:
        process.wait(timeout=_KILL_GRACE)
    except subprocess.TimeoutExpired:
        process.kill()


def _tail(handle: IO[bytes], limit: int) -> tuple[str, bool]:
    size = handle.seek(0, os.SEEK_END)
    handle.seek(max(0, size - limit))
    data = handle.read()
    return data.decode("utf-8", errors="replace"), size > limit
