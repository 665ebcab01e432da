"""``remora watch`` as a real process on a temp project, with the scripted model."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from remora.orchestration import RunStore
from remora.workspace import WorkspaceManager
from tests.stores import write_tree
from tests.test_analyze_cli import MARKER, SCRIPTED, remora

SOURCE = {
    "pyproject.toml": "[project]\nname = 'proj'\n",
    "pkg/__init__.py": "",
    "pkg/mod.py": "def first():\n    return 1\n\n\ndef second():\n    return 2\n",
}


class Lines:
    """stderr of a process, read in the background so waiting never blocks the test."""

    def __init__(self, stream: object) -> None:
        self.queue: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream: object) -> None:
        for line in stream:  # type: ignore[attr-defined]
            self.queue.put(line)

    def wait_for(self, text: str, timeout: float = 30.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.queue.get(timeout=0.1)
            except queue.Empty:
                continue
            self.seen.append(line)
            if text in line:
                return line
        raise AssertionError(f"no line with {text!r} within {timeout}s; saw: {self.seen}")

    def drain(self, seconds: float) -> list[str]:
        """Everything printed within ``seconds``."""
        got: list[str] = []
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                got.append(self.queue.get(timeout=0.05))
            except queue.Empty:
                continue
        self.seen.extend(got)
        return got


def start_watch(
    project: Path, target: str, debounce_ms: int = 100
) -> tuple[subprocess.Popen[str], Lines]:
    """``remora watch TARGET --ops marker`` on ``project`` with the scripted model, and its
    stderr read in the background."""
    process = subprocess.Popen(
        [
            sys.executable,
            str(SCRIPTED),
            *MARKER,
            "--set",
            f"watch.debounce_ms={debounce_ms}",
            "watch",
            target,
            "--ops",
            "marker",
        ],
        cwd=project,
        env={**os.environ, "COLUMNS": "200"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return process, Lines(process.stderr)


def test_watch_reruns_what_changed_and_nothing_else(tmp_path: Path) -> None:
    project = write_tree(tmp_path / "proj", SOURCE)
    module = project / "pkg" / "mod.py"
    process, lines = start_watch(project, ".")
    try:
        lines.wait_for("watching 4 nodes in 2 files")
        module.write_text("def first():\n    return 1\n\n\ndef second():\n    return 22\n")
        lines.wait_for("marker second")
        store = RunStore(WorkspaceManager(project))
        manifest = store.resolve(None)
        assert [job.qualname for job in manifest.jobs] == ["second"]
        assert not any("marker first" in line for line in lines.seen)

        (workspace,) = [job.workspace_id for job in manifest.pending_reviews()]
        accepted = remora("accept", str(workspace), cwd=project)
        assert accepted.returncode == 0, accepted.stderr
        assert module.read_text().endswith("# marked second\n")
        assert not any("marker" in line for line in lines.drain(1.5)), "an accept re-ran"
        assert len(store.run_ids()) == 1

        module.write_text("def first(:\n    return 1\n")
        lines.wait_for("DISC_101")
        module.write_text("def first():\n    return 111\n")
        lines.wait_for("marker first")
        assert len(store.run_ids()) == 2
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=30)
    assert process.returncode == 0
    lines.wait_for("stopped after 2 run(s)")


def test_watching_one_file_survives_saves_by_rename(tmp_path: Path) -> None:
    """``sed -i`` and many editors write a new file and rename it over the old one: the
    watcher must hear every such save, and says when a re-run starts."""
    project = write_tree(tmp_path / "proj", SOURCE)
    module = project / "pkg" / "mod.py"
    process, lines = start_watch(project, "pkg/mod.py")

    def save_by_rename(text: str) -> None:
        fresh = module.with_name("mod.py.tmp")
        fresh.write_text(text)
        os.replace(fresh, module)

    try:
        lines.wait_for("watching 3 nodes in 1 files")
        save_by_rename("def first():\n    return 1\n\n\ndef second():\n    return 22\n")
        lines.wait_for("re-running 1 job(s) on what changed in pkg/mod.py")
        lines.wait_for("marker second")
        save_by_rename("def first():\n    return 11\n\n\ndef second():\n    return 22\n")
        lines.wait_for("marker first")  # still listening after the first rename
        (project / "pkg" / "other.py").write_text("def third():\n    return 3\n")
        assert not any("marker third" in line for line in lines.drain(1.5)), "not a target"
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=30)
    assert process.returncode == 0
