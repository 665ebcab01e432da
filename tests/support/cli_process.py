"""The real ``remora`` command in a child process, as a user's shell would run it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def run_remora(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``python -m remora ARGS`` in ``cwd``, without the caller's ``REMORA_*`` settings and
    with a wide terminal so tables do not wrap."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("REMORA_")}
    return subprocess.run(
        [sys.executable, "-m", "remora", *args],
        cwd=cwd,
        env=env | {"COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
