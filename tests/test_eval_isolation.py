"""``remora eval`` runs the evaluated package's code (imports, its suite, generated tests)
in the project sandbox: no secrets from the environment, a scratch HOME, no network, and
nothing it starts outlives the command. Commands that stay on the host (pip, ruff) cannot
hang on a daemon that keeps their pipes open.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from pathlib import Path

import pytest

from remora.evaluation.commands import run_command
from remora.evaluation.package import Project, resolve_package

SPY = """
import json, os, socket, pathlib
seen = {"env": dict(os.environ), "home": os.path.expanduser("~")}
try:
    socket.create_connection(("127.0.0.1", int(os.environ.get("SPY_PORT", "9")) ), timeout=2)
    seen["tcp"] = "connected"
except OSError as exc:
    seen["tcp"] = type(exc).__name__
try:
    seen["ssh"] = sorted(os.listdir(pathlib.Path.home().parent))
except OSError as exc:
    seen["ssh"] = type(exc).__name__
pathlib.Path(__file__).with_name("seen.json").write_text(json.dumps(seen))
"""


def _package(
    root: Path, init: str = "", test: str = "def test_ok():\n    assert True\n"
) -> Project:
    (root / "spy").mkdir(parents=True)
    (root / "spy" / "__init__.py").write_text(init, encoding="utf-8")
    (root / "tests").mkdir()
    (root / "tests" / "test_spy.py").write_text(test, encoding="utf-8")
    return resolve_package(str(root), root.parent / "work").copy_to(root.parent / "copy")


def test_import_time_code_sees_no_secret_no_home_and_no_network(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REMORA_OPENAI_API_KEY", "sk-secret-value")
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        project = _package(tmp_path / "pkg", init=SPY.replace('"9"', f'"{port}"'))
        ok, error = project.check_import("spy")
    assert ok, error
    seen = json.loads((project.root / "spy" / "seen.json").read_text())
    assert "sk-secret-value" not in json.dumps(seen["env"])
    assert not any(key.startswith("REMORA_") for key in seen["env"])
    assert seen["home"] != os.path.expanduser("~")
    assert seen["tcp"] != "connected"


def test_a_suite_that_leaves_a_daemon_returns_and_the_daemon_is_gone(tmp_path: Path) -> None:
    pidfile = "daemon.pid"
    test = f"""
import os, subprocess, sys, pathlib

def test_spawns_a_daemon():
    child = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(120)"],
        start_new_session=True,
    )
    pathlib.Path(__file__).with_name({pidfile!r}).write_text(str(child.pid))
"""
    project = _package(tmp_path / "pkg", test=test)
    started = time.monotonic()
    suite = project.run_tests(60)
    assert suite.status == "passed", suite.summary
    assert time.monotonic() - started < 60
    assert (project.root / "tests" / pidfile).is_file(), "the suite's writes come back"
    # The pid is the sandbox's own (its pid namespace or its supervisor); whichever it is,
    # no process of that command runs any more: no sleeper of ours is left on the host.
    # The kernel ends the killed sandbox's processes asynchronously: on a loaded machine
    # one can still be listed for a moment, so allow a few seconds (not the 120 it sleeps).
    deadline = time.monotonic() + 10
    while (leftovers := _sleepers()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not leftovers


def _sleepers() -> list[str]:
    """The processes running this test's daemon command."""
    return [
        pid
        for pid in os.listdir("/proc")
        if pid.isdigit() and _cmdline(pid) == [sys.executable, "-c", "import time; time.sleep(120)"]
    ]


def _cmdline(pid: str) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def test_a_host_command_whose_daemon_holds_the_pipes_still_times_out(tmp_path: Path) -> None:
    """Before: ``communicate()`` after the kill waited for the daemon (120 s here)."""
    daemon = (
        "import subprocess, sys, time\n"
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'],"
        " start_new_session=True)\n"
        "time.sleep(120)\n"
    )
    started = time.monotonic()
    result = run_command([sys.executable, "-c", daemon], tmp_path, timeout=2)
    elapsed = time.monotonic() - started
    assert result.timed_out
    assert elapsed < 20, elapsed
    for pid in os.listdir("/proc"):
        if pid.isdigit() and _cmdline(pid) == [
            sys.executable,
            "-c",
            "import time; time.sleep(120)",
        ]:
            os.kill(int(pid), 9)
