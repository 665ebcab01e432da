"""The one subprocess runner: timeouts kill the whole group, output is capped, env is minimal."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from remora.errors import ToolError
from remora.tools.process import run_command, scrubbed_env


def _alive(pid: int) -> bool:
    """Running, not a zombie waiting for a parent that may never reap it."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def test_timeout_kills_grandchildren(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild.pid"
    script = (
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
        "print('started', flush=True)\n"
        "time.sleep(60)\n"
    )
    started = time.monotonic()
    with pytest.raises(ToolError) as info:
        run_command(
            [sys.executable, "-c", script],
            cwd=tmp_path,
            env=scrubbed_env(tmp_path),
            timeout=1.5,
            what="the sleeper",
        )
    assert info.value.code == "TOOL_201"
    assert "the sleeper" in info.value.message and "started" in info.value.message
    assert time.monotonic() - started < 10
    grandchild = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(grandchild)


def test_output_is_capped_to_its_tail(tmp_path: Path) -> None:
    result = run_command(
        [sys.executable, "-c", "print('x' * 50000 + 'END')"],
        cwd=tmp_path,
        env=scrubbed_env(tmp_path),
        timeout=30,
        what="printer",
        output_limit=1000,
    )
    assert result.returncode == 0
    assert result.stdout_truncated and len(result.stdout) == 1000
    assert result.stdout.endswith("END\n")


def test_stdin_env_and_exit_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REMORA_TEST_SECRET", "hunter2")
    code = "import os, sys; print(sys.stdin.read().upper(), sorted(os.environ)); sys.exit(4)"
    result = run_command(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=scrubbed_env(tmp_path / "home", [tmp_path], {"EXTRA": "1"}),
        timeout=30,
        what="echo",
        input_data=b"hello",
    )
    assert result.returncode == 4
    assert result.stdout.startswith("HELLO")
    assert "REMORA_TEST_SECRET" not in result.stdout
    assert "'EXTRA'" in result.stdout and "'PYTHONPATH'" in result.stdout


def test_missing_program_is_a_tool_error(tmp_path: Path) -> None:
    with pytest.raises(ToolError) as info:
        run_command(
            [str(tmp_path / "no-such-tool")],
            cwd=tmp_path,
            env=scrubbed_env(tmp_path),
            timeout=5,
            what="no-such-tool",
        )
    assert info.value.code == "TOOL_200"
