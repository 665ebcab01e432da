"""kill -9 in the middle of a real ``remora accept``: every file old or new, recovery agrees.

The accept runs in a subprocess with ``REMORA_TEST_APPLY_PAUSE`` (the journal's documented
test hook) so it is slow enough to be killed between two files.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from remora.orchestration import JobRecord, RunStore
from remora.runner.result import AgentResult
from remora.workspace import WorkspaceManager

REMORA = Path(sys.executable).with_name("remora")
FILES = 20


def old(i: int) -> bytes:
    return f"def f{i}():\n    return {i}\n".encode()


def new(i: int) -> bytes:
    return f'def f{i}():\n    """Return {i}."""\n    return {i}\n'.encode()


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, str, str]:
    root = tmp_path / "proj"
    (root / "pkg").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    for i in range(FILES):
        (root / "pkg" / f"m{i:02d}.py").write_bytes(old(i))
    manager = WorkspaceManager(root)
    store = RunStore(manager)
    run = store.start(["."], ["docstring"])
    with manager.create("docstring", "abcdef0123456789", run.run_id) as ws:
        for i in range(FILES):
            ws.write(f"pkg/m{i:02d}.py", new(i))
        changed = ws.changed_paths()
        workspace_id = ws.workspace_id
    result = AgentResult(
        status="success",
        operation="docstring",
        node_id="abcdef0123456789",
        workspace_id=workspace_id,
        changed_files=changed,
    )
    store.record_job(run.run_id, JobRecord.from_result(result))
    return root, run.run_id, workspace_id


def states(root: Path) -> list[str]:
    out = []
    for i in range(FILES):
        data = (root / "pkg" / f"m{i:02d}.py").read_bytes()
        assert data in (old(i), new(i)), f"m{i:02d}.py is neither old nor new: {data!r}"
        out.append("new" if data == new(i) else "old")
    return out


def journal_state(root: Path) -> str | None:
    for path in (root / ".remora" / "journal").glob("*.json"):
        try:
            return str(json.loads(path.read_text())["state"])
        except (OSError, ValueError):
            return None
    return None


def kill_when(proc: subprocess.Popen[bytes], ready: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 60
    while not ready():
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        assert time.monotonic() < deadline, "accept never reached the point to kill it"
        time.sleep(0.005)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()


def start_accept(root: Path, workspace_id: str) -> subprocess.Popen[bytes]:
    env = dict(os.environ, REMORA_TEST_APPLY_PAUSE="0.05")
    return subprocess.Popen(
        [str(REMORA), "accept", workspace_id, "--project", str(root)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def recover_with_review(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(REMORA), "review", "--project", str(root)],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )


def review_state(root: Path, run_id: str) -> str:
    manifest = RunStore(WorkspaceManager(root)).read(run_id)
    return manifest.jobs[0].review


def test_kill_during_the_renames_then_recovery_completes(setup: tuple[Path, str, str]) -> None:
    root, run_id, workspace_id = setup
    proc = start_accept(root, workspace_id)

    def some_renamed() -> bool:
        return journal_state(root) == "committed" and states(root).count("new") >= 3

    kill_when(proc, some_renamed)
    mid = states(root)
    assert 3 <= mid.count("new") < FILES, mid
    assert review_state(root, run_id) == "pending"

    result = recover_with_review(root)
    assert result.returncode != 0 and "WS_008" in result.stderr
    assert "recovered" in result.stderr
    assert states(root) == ["new"] * FILES
    assert review_state(root, run_id) == "accepted"
    assert WorkspaceManager(root).state(workspace_id) == "accepted"
    assert not list(root.rglob("*.remora-tmp"))
    assert not list((root / ".remora" / "journal").glob("*.json"))


def test_kill_while_writing_temp_files_then_recovery_rolls_back(
    setup: tuple[Path, str, str],
) -> None:
    root, run_id, workspace_id = setup
    proc = start_accept(root, workspace_id)

    def some_temps() -> bool:
        return journal_state(root) == "prepared" and len(list(root.rglob("*.remora-tmp"))) >= 3

    kill_when(proc, some_temps)
    assert states(root) == ["old"] * FILES

    result = recover_with_review(root)
    assert "WS_008" in result.stderr
    assert states(root) == ["old"] * FILES
    assert not list(root.rglob("*.remora-tmp"))
    assert review_state(root, run_id) == "pending"
    assert WorkspaceManager(root).state(workspace_id) == "pending"

    done = subprocess.run(
        [str(REMORA), "accept", workspace_id, "--project", str(root)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert states(root) == ["new"] * FILES
    assert review_state(root, run_id) == "accepted"
