"""External commands of an evaluation (pip, pytest, ruff, pydoclint, hypothesis), never raising.

A tool that fails, times out or is missing comes back as a :class:`CommandResult` for the
report to show: one broken baseline must not end the whole evaluation.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

_DRAIN_S = 5.0


@dataclass
class CommandResult:
    """One finished (or killed) command; ``returncode`` -1 when it could not start."""

    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    wall_s: float
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    def tail(self, lines: int = 3) -> str:
        """The last lines of stderr (else stdout), for a report cell or an error message."""
        if self.timed_out:
            return f"timed out after {self.wall_s:.0f}s"
        text = (self.stderr.strip() or self.stdout.strip()).splitlines()
        return " | ".join(text[-lines:]) if text else f"exit {self.returncode}"


def run_command(
    argv: Sequence[str],
    cwd: Path,
    timeout: float,
    env: Mapping[str, str] | None = None,
    stdin: str | None = None,
) -> CommandResult:
    """Run ``argv`` in its own process group; on timeout the whole group is killed."""
    started = time.perf_counter()
    try:
        process = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=dict(env) if env is not None else None,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            start_new_session=True,
        )
    except OSError as exc:
        return CommandResult(list(argv), -1, "", f"could not start: {exc}", 0.0)
    try:
        stdout, stderr = process.communicate(stdin, timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = _drain(process)
        timed_out = True
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        raise
    return CommandResult(
        list(argv), process.returncode, stdout, stderr, time.perf_counter() - started, timed_out
    )


def _drain(process: subprocess.Popen[str]) -> tuple[str, str]:
    """What a killed command printed, without waiting on a process that left its group
    (a daemon that called ``setsid`` keeps the pipes open): a few seconds, then the pipes
    are closed and what came so far is lost."""
    try:
        return process.communicate(timeout=_DRAIN_S)
    except subprocess.TimeoutExpired:
        for pipe in (process.stdout, process.stderr, process.stdin):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        process.wait()
        return "", "(output lost: a process it started kept the pipes open)"
