"""``remora watch`` goes on when a file is deleted mid-batch (issue 27).

A ``.py`` file created and deleted in a loop reached discovery after its event but before
its reading: discovery's DISC_001 ("does not exist") or a ``FileNotFoundError`` from hashing
it ended the watch (3 of 3 loops). Now the file is reported and skipped, the rest of the
batch runs, and the watch keeps reacting to saves.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

import pytest

import remora.watch
from remora.discovery import DiscoveryProblem
from remora.operations import installed_operations
from remora.watch import WatchCallbacks, Watcher
from remora.workspace import WorkspaceManager
from tests.stores import write_tree
from tests.test_watch import SOURCE, start_watch


def test_a_file_deleted_before_its_reading_is_reported_and_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = write_tree(
        tmp_path / "proj",
        {
            "pyproject.toml": "",
            "gone.py": "def g():\n    pass\n",
            "kept.py": "def k():\n    pass\n",
        },
    )
    real_discover = remora.watch.discover

    def delete_then_discover(paths: list[Path], *args: Any, **kwargs: Any) -> Any:
        """The race: the file existed when the batch was filtered, not when it is read."""
        (project / "gone.py").unlink(missing_ok=True)
        return real_discover(paths, *args, **kwargs)

    monkeypatch.setattr(remora.watch, "discover", delete_then_discover)
    problems: list[DiscoveryProblem] = []
    watcher = Watcher(
        config=installed_operations().config(),
        root=project,
        targets=[project],
        agents={},
        model=None,  # type: ignore[arg-type]  # discovery never calls the model
        manager=WorkspaceManager(project),
        callbacks=WatchCallbacks(on_problem=problems.append),
    )
    nodes, broken = watcher.discover([project / "gone.py", project / "kept.py"])
    assert sorted(node.qualname for node in nodes) == ["k", "kept.py"]
    assert broken == set()
    [problem] = problems
    assert (problem.code, problem.path) == ("DISC_105", "gone.py")
    assert "deleted before it could be read" in problem.render()


def test_watch_survives_a_create_delete_loop(tmp_path: Path) -> None:
    project = write_tree(tmp_path / "proj", SOURCE)
    process, lines = start_watch(project, ".", debounce_ms=10)
    try:
        lines.wait_for("watching 4 nodes in 2 files")
        churn = project / "pkg" / "churn.py"
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and process.poll() is None:
            churn.write_text("x = 1\n")
            churn.unlink()
        time.sleep(0.5)
        assert process.poll() is None, "".join(lines.seen + lines.drain(0.5))
        (project / "pkg" / "mod.py").write_text(
            "def first():\n    return 1\n\n\ndef second():\n    return 22\n"
        )
        lines.wait_for("marker second")
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
        process.wait(timeout=30)
    assert process.returncode == 0, "".join(lines.seen + lines.drain(0.5))
    seen = "".join(lines.seen + lines.drain(0.5))
    assert "Traceback" not in seen and "DISC_001" not in seen
