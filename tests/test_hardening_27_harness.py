"""``remora harness -n`` is bounded like a count should be (issue 27): every episode is planned
up front, so ``-n 100000000000`` allocated until the OOM killer came."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

from remora.cli.harness import MAX_REQUESTS

MEMORY_CAP = 4 << 30
"""Address space the child may use: without the bound it fails with a MemoryError here
instead of taking the machine's memory."""


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def test_a_huge_request_count_is_a_usage_error_at_once(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "mod.py").write_text("def f():\n    return 1\n")
    env = {key: value for key, value in os.environ.items() if not key.startswith("REMORA_")}
    done = subprocess.run(
        [sys.executable, "-m", "remora", "harness", "-n", "100000000000", "."],
        cwd=tmp_path,
        env=env | {"COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        preexec_fn=_capped,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 2, output
    assert "Invalid value for '--requests' / '-n'" in output
    assert str(MAX_REQUESTS) in output
    assert "Traceback" not in output
