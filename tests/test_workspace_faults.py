"""Workspace faults: every one a coded error, quickly, with the project old or fully new.

Accept onto read-only or immutable files and directories, a disk that fills up, a workspace
database another process holds locked, a corrupt workspace to reject, a user editing a file
while an accept runs, the workspace quota and read cap, and the state directory broken in
ways the OS reports as raw errors. Real faults wherever the machine allows them (chmod for a
normal user, ``chattr +i`` for root, a small tmpfs when root may mount one); where it does
not, the same error is injected at the OS call, and those tests always run.
"""

from __future__ import annotations

import errno
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from remora import regular_files
from remora.config import WorkspaceConfig
from remora.errors import WorkspaceError
from remora.regular_files import FileTooLargeError
from remora.workspace import WorkspaceManager, WorkspaceReview, durable, journal, overlay
from remora.workspace.overlay import BUSY_TIMEOUT, MB, OverlayWorkspace
from tests.support.cli_process import run_remora
from tests.support.timed import run_timed

FILES = 20
QUICK = 10.0
"""Seconds any of these calls may take; none waits for anything."""
LOCKED = BUSY_TIMEOUT + 10.0
"""A call that meets a locked database waits the busy timeout, then reports it."""


def old(i: int) -> bytes:
    return f"def f{i}():\n    return {i}\n".encode()


def new(i: int) -> bytes:
    return f'def f{i}():\n    """Return {i}."""\n    return {i}\n'.encode()


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file of the project but Remora's state, hidden ones too (so a temp or kept file
    left behind shows up as a difference)."""
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and ".remora" not in path.relative_to(root).parts
    }


def expected_new(before: dict[str, bytes]) -> dict[str, bytes]:
    after = dict(before)
    for i in range(FILES):
        rel = f"pkg/m{i:02d}.py"
        after[rel] = new(i) + before[rel][len(old(i)) :]
    after["lib/a.py"] = b"A = 2\n"
    after["lib/b.py"] = b"B = 1\n"
    del after["lib/gone.py"]
    return after


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    return build_project(root)


def build_project(root: Path, pad: int = 0) -> Path:
    """A project of 20 modules (each ``pad`` bytes longer) and a lib/ directory."""
    (root / "pkg").mkdir(parents=True)
    (root / "lib").mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    for i in range(FILES):
        (root / "pkg" / f"m{i:02d}.py").write_bytes(old(i) + b"#" * pad + b"\n" * bool(pad))
    (root / "lib" / "a.py").write_bytes(b"A = 1\n")
    (root / "lib" / "gone.py").write_bytes(b"GONE = 1\n")
    return root


def make_workspace(manager: WorkspaceManager, node: str = "abcdef0123456789") -> str:
    """Changes every module, one lib file, creates one and deletes one."""
    with manager.create("docstring", node) as ws:
        for i in range(FILES):
            rel = f"pkg/m{i:02d}.py"
            ws.write(rel, new(i) + ws.read(rel)[len(old(i)) :])
        ws.write("lib/a.py", b"A = 2\n")
        ws.write("lib/b.py", b"B = 1\n")
        ws.delete("lib/gone.py")
        return ws.workspace_id


def assert_clean_state(manager: WorkspaceManager, workspace_id: str, state: str) -> None:
    """No journal left, the workspace readable and in ``state``."""
    assert not list(manager.journal_dir.glob("*.json"))
    assert manager.state(workspace_id) == state


def coded(call: Callable[[], Any], code: str, limit: float = QUICK) -> WorkspaceError:
    """The WorkspaceError ``call`` raises, checked to be ``code`` and to come within ``limit``."""
    started = time.monotonic()
    with pytest.raises(WorkspaceError) as info:
        run_timed(call, limit)
    assert time.monotonic() - started < limit
    assert info.value.code == code, info.value.render()
    return info.value


def chattr(flag: str, path: Path) -> bool:
    if shutil.which("chattr") is None:
        return False
    done = subprocess.run(["chattr", flag, str(path)], capture_output=True, check=False)
    return done.returncode == 0


@contextmanager
def unwritable(path: Path) -> Iterator[None]:
    """Make ``path`` really unwritable: chmod for a normal user; root ignores modes, so
    ``chattr +i`` for root (skipped where the file system has no immutable flag: the
    injected-fault tests cover that case)."""
    if os.geteuid() != 0:
        mode = path.stat().st_mode & 0o7777
        path.chmod(0o555 if path.is_dir() else 0o444)
        try:
            yield
        finally:
            path.chmod(mode)
        return
    if not chattr("+i", path):
        pytest.skip("running as root where chattr +i does not work")
    try:
        yield
    finally:
        chattr("-i", path)


def cli(root: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    done = run_remora(*args, "--project", str(root), cwd=root, timeout=timeout)
    assert "Traceback" not in done.stderr, done.stderr
    return done


# -- 1. accept onto read-only or immutable files and directories -------------------------


def test_accept_onto_an_unwritable_file_refuses_up_front_and_stays_usable(project: Path) -> None:
    manager = WorkspaceManager(project)
    review = WorkspaceReview(manager)
    workspace_id = make_workspace(manager)
    before = snapshot(project)
    with unwritable(project / "pkg" / "m10.py"):
        error = coded(lambda: review.accept(workspace_id), "WS_017")
        assert "pkg/m10.py" in error.message and "nothing was written" in error.message
        assert snapshot(project) == before
        assert_clean_state(manager, workspace_id, "pending")
        run_timed(review.recover, QUICK)
        assert [info.workspace_id for info in manager.list()] == [workspace_id]
    review.accept(workspace_id)
    assert snapshot(project) == expected_new(before)
    assert_clean_state(manager, workspace_id, "accepted")


def test_accept_into_an_unwritable_directory_refuses_up_front(project: Path) -> None:
    manager = WorkspaceManager(project)
    review = WorkspaceReview(manager)
    workspace_id = make_workspace(manager)
    before = snapshot(project)
    with unwritable(project / "lib"):
        error = coded(lambda: review.accept(workspace_id), "WS_017")
        assert "lib/" in error.message
        assert snapshot(project) == before
        assert_clean_state(manager, workspace_id, "pending")
    review.accept(workspace_id)
    assert snapshot(project) == expected_new(before)


def test_undo_onto_an_unwritable_file_refuses_up_front(project: Path) -> None:
    manager = WorkspaceManager(project)
    review = WorkspaceReview(manager)
    workspace_id = make_workspace(manager)
    before = snapshot(project)
    review.accept(workspace_id)
    accepted = snapshot(project)
    with unwritable(project / "pkg" / "m03.py"):
        error = coded(lambda: review.undo(workspace_id), "WS_017")
        assert "pkg/m03.py" in error.message and "nothing was restored" in error.message
        assert snapshot(project) == accepted
        assert_clean_state(manager, workspace_id, "accepted")
    review.undo(workspace_id)
    assert snapshot(project) == before


def test_a_rename_failing_midway_rolls_every_file_back(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The defence behind the up-front check: a permission error on the 12th rename (as an
    immutable flag set during the accept gives) puts the 11 files already replaced back."""
    manager = WorkspaceManager(project)
    review = WorkspaceReview(manager)
    workspace_id = make_workspace(manager)
    before = snapshot(project)
    real_replace = os.replace

    def replace(src: Any, dst: Any, **kwargs: Any) -> None:
        if str(dst).endswith("m09.py"):
            raise PermissionError(errno.EPERM, "Operation not permitted", str(dst))
        real_replace(src, dst, **kwargs)

    monkeypatch.setattr(os, "replace", replace)
    error = coded(lambda: review.accept(workspace_id), "WS_017")
    monkeypatch.setattr(os, "replace", real_replace)
    assert "pkg/m09.py" in error.message and "nothing was written" in error.message
    assert snapshot(project) == before
    assert_clean_state(manager, workspace_id, "pending")
    review.accept(workspace_id)
    assert snapshot(project) == expected_new(before)


def test_cli_accept_onto_an_immutable_file_then_other_commands_work(project: Path) -> None:
    manager = WorkspaceManager(project)
    workspace_id = make_workspace(manager)
    before = snapshot(project)
    with unwritable(project / "pkg" / "m10.py"):
        started = time.monotonic()
        done = cli(project, "accept", workspace_id)
        assert time.monotonic() - started < 60
        assert done.returncode != 0
        assert "WS_017" in done.stderr and "pkg/m10.py" in done.stderr
        assert snapshot(project) == before
        assert cli(project, "runs").returncode == 0
        assert cli(project, "diff", workspace_id).returncode == 0
    done = cli(project, "accept", workspace_id)
    assert done.returncode == 0, done.stderr
    assert snapshot(project) == expected_new(before)


def test_a_file_made_immutable_during_the_renames_rolls_the_accept_back(project: Path) -> None:
    """A real fault mid-way: ``chattr +i`` on the last file while a slowed accept renames."""
    if os.geteuid() != 0 or not chattr("+i", project / "pyproject.toml"):
        pytest.skip("needs root and a file system with the immutable flag")
    chattr("-i", project / "pyproject.toml")
    manager = WorkspaceManager(project)
    workspace_id = make_workspace(manager)
    before = snapshot(project)
    target = project / "pkg" / "m19.py"
    env = {k: v for k, v in os.environ.items() if not k.startswith("REMORA_")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "remora", "accept", workspace_id, "--project", str(project)],
        env=env | {journal.PAUSE_ENV: "0.05"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while (project / "pkg" / "m05.py").read_bytes() != new(5):
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.005)
        assert chattr("+i", target)
        _out, err = proc.communicate(timeout=60)
    finally:
        chattr("-i", target)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode != 0
    assert "WS_017" in err and "pkg/m19.py" in err and "Traceback" not in err, err
    assert snapshot(project) == before
    assert_clean_state(manager, workspace_id, "pending")
    assert cli(project, "accept", workspace_id).returncode == 0
    assert snapshot(project) == expected_new(before)


# -- 2. disk full ------------------------------------------------------------------------


def test_no_space_while_writing_temp_files_is_its_own_code(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    manager = WorkspaceManager(project)
    review = WorkspaceReview(manager)
    workspace_id = make_workspace(manager)
    before = snapshot(project)
    real_write = durable.write_durable
    calls: list[Path] = []

    def write_durable(path: Path, data: bytes, mode: int | None = None) -> None:
        calls.append(path)
        if len(calls) == 6:
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        real_write(path, data, mode)

    monkeypatch.setattr(journal, "write_durable", write_durable)
    error = coded(lambda: review.accept(workspace_id), "WS_015")
    monkeypatch.setattr(journal, "write_durable", real_write)
    assert "no space left" in error.message and "nothing was written" in error.message
    assert error.hint and "free" in error.hint
    assert snapshot(project) == before
    assert_clean_state(manager, workspace_id, "pending")
    review.accept(workspace_id)
    assert snapshot(project) == expected_new(before)


def test_a_full_database_is_no_space_not_corrupt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite's own "database or disk is full", made real by capping the page count (the
    backups of these larger files need new pages)."""
    project = build_project(tmp_path / "proj", pad=5000)
    manager = WorkspaceManager(project)
    review = WorkspaceReview(manager)
    workspace_id = make_workspace(manager)
    before = snapshot(project)
    real_connect = overlay._connect

    def capped(path: Path, synchronous: str = "NORMAL") -> sqlite3.Connection:
        conn = real_connect(path, synchronous)
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages}")
        return conn

    monkeypatch.setattr(overlay, "_connect", capped)
    error = coded(lambda: review.accept(workspace_id), "WS_015")
    assert "full" in error.message
    assert snapshot(project) == before
    monkeypatch.setattr(overlay, "_connect", real_connect)
    assert_clean_state(manager, workspace_id, "pending")
    review.accept(workspace_id)
    assert snapshot(project) == expected_new(before)


def test_no_space_to_record_an_accept_leaves_it_fully_applied_and_recoverable(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    manager = WorkspaceManager(project)
    review = WorkspaceReview(manager)
    workspace_id = make_workspace(manager)
    before = snapshot(project)

    def full(self: OverlayWorkspace, never_written: object = ()) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(OverlayWorkspace, "mark_accepted", overlay._coded(full))
    error = coded(lambda: review.accept(workspace_id), "WS_015")
    assert "were applied" in error.message
    assert snapshot(project) == expected_new(before)
    monkeypatch.undo()
    report = run_timed(review.recover, QUICK)[0]
    assert report.completed == [workspace_id]
    assert snapshot(project) == expected_new(before)
    assert_clean_state(manager, workspace_id, "accepted")


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A 16 MB tmpfs, where root may mount one."""
    point = tmp_path / "fs"
    point.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root; the injected ENOSPC tests cover this")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(point)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield point
    finally:
        subprocess.run(["umount", "-l", str(point)], check=False)


def fill(directory: Path, leave: int = 0) -> Path:
    """Fill the file system of ``directory`` up to ``leave`` bytes; returns the filler."""
    filler = directory / "filler.bin"
    with open(filler, "wb") as handle:
        try:
            while True:
                free = os.statvfs(directory).f_bavail * os.statvfs(directory).f_frsize
                if free <= leave:
                    break
                handle.write(b"\0" * min(256 * 1024, max(free - leave, 4096)))
                handle.flush()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    return filler


@pytest.mark.parametrize("leave", [0, 1100 * 1024], ids=["full", "room-for-the-backups"])
def test_cli_accept_on_a_full_tmpfs(small_fs: Path, leave: int) -> None:
    """A real full disk: with no room at all the backups fail (SQLite), with room for them
    the temp files do (ENOSPC). Either way WS_015, never WS_007, and nothing written."""
    root = build_project(small_fs / "proj", pad=50_000)
    manager = WorkspaceManager(root)
    workspace_id = make_workspace(manager)
    before = snapshot(root)
    filler = fill(small_fs, leave)
    started = time.monotonic()
    done = cli(root, "accept", workspace_id)
    assert time.monotonic() - started < 60
    assert done.returncode != 0
    assert "WS_015" in done.stderr and "WS_007" not in done.stderr, done.stderr
    assert snapshot(root) == before
    filler.unlink()
    done = cli(root, "accept", workspace_id)
    assert done.returncode == 0, done.stderr
    assert snapshot(root) == expected_new(before)
    assert_clean_state(manager, workspace_id, "accepted")


# -- 3. a workspace database locked by another process -----------------------------------


@contextmanager
def held(db: Path, readers_too: bool = False) -> Iterator[None]:
    """Another process holding ``db``'s write lock (``readers_too``: an exclusive lock that
    blocks reading as well) until the block ends."""
    code = (
        "import sqlite3, sys, time\n"
        "conn = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        + ("conn.execute('PRAGMA locking_mode=EXCLUSIVE')\n" if readers_too else "")
        + "conn.execute('BEGIN EXCLUSIVE')\n"
        "conn.execute('UPDATE workspace SET node_id = node_id WHERE id = 1')\n"
        "print('locked', flush=True)\n"
        "time.sleep(300)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(db)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
        yield
    finally:
        proc.kill()
        proc.wait()


def test_accept_of_a_locked_workspace_says_so_within_the_busy_timeout(project: Path) -> None:
    manager = WorkspaceManager(project)
    review = WorkspaceReview(manager)
    workspace_id = make_workspace(manager)
    before = snapshot(project)
    with held(manager.workspaces_dir / f"{workspace_id}.sqlite"):
        error = coded(lambda: review.accept(workspace_id), "WS_016", LOCKED)
        assert "locked by another process" in error.message
        assert error.hint and "another Remora process" in error.hint
        assert snapshot(project) == before
    assert_clean_state(manager, workspace_id, "pending")
    review.accept(workspace_id)
    assert snapshot(project) == expected_new(before)


def test_reads_of_an_exclusively_locked_workspace_say_so(project: Path) -> None:
    manager = WorkspaceManager(project)
    review = WorkspaceReview(manager)
    workspace_id = make_workspace(manager)
    before = snapshot(project)
    with held(manager.workspaces_dir / f"{workspace_id}.sqlite", readers_too=True):
        coded(lambda: manager.info(workspace_id), "WS_016", LOCKED)
        coded(lambda: review.reject(workspace_id), "WS_016", LOCKED)
        assert snapshot(project) == before
    assert manager.state(workspace_id) == "pending"


def test_cli_accept_of_a_locked_workspace(project: Path) -> None:
    manager = WorkspaceManager(project)
    workspace_id = make_workspace(manager)
    before = snapshot(project)
    with held(manager.workspaces_dir / f"{workspace_id}.sqlite"):
        started = time.monotonic()
        done = cli(project, "accept", workspace_id)
        assert time.monotonic() - started < LOCKED + 30
        assert done.returncode != 0 and "WS_016" in done.stderr, done.stderr
        assert snapshot(project) == before
    assert cli(project, "accept", workspace_id).returncode == 0
    assert snapshot(project) == expected_new(before)


# -- 4. reject a corrupt workspace ---------------------------------------------------------


@pytest.mark.parametrize(
    "garbage", [b"not a database at all" * 100, b"", b"SQLite format 3\0" + b"\xff" * 5000]
)
def test_reject_removes_a_workspace_that_cannot_be_read(project: Path, garbage: bytes) -> None:
    manager = WorkspaceManager(project)
    review = WorkspaceReview(manager)
    good = make_workspace(manager, "0123456789abcdef")
    manager.workspaces_dir.mkdir(parents=True, exist_ok=True)
    bad = "lint-fedcba9876543210-abc123"
    (manager.workspaces_dir / f"{bad}.sqlite").write_bytes(garbage)
    before = snapshot(project)
    coded(lambda: manager.open(bad).close(), "WS_007")
    assert [info.workspace_id for info in manager.list()] == [good]
    info = run_timed(lambda: review.reject(bad), QUICK)[0]
    assert (info.operation, info.node_id, info.run_id) == ("lint", "fedcba9876543210", None)
    assert not list(manager.workspaces_dir.glob(f"{bad}*"))
    assert manager.state(bad) == "discarded" and manager.state(good) == "pending"
    assert snapshot(project) == before


def test_cli_reject_of_a_corrupt_workspace(project: Path) -> None:
    manager = WorkspaceManager(project)
    manager.workspaces_dir.mkdir(parents=True)
    (manager.workspaces_dir / "lint-bad.sqlite").write_bytes(b"garbage" * 500)
    before = snapshot(project)
    shown = cli(project, "diff", "lint-bad")
    assert shown.returncode != 0 and "WS_007" in shown.stderr and "reject" in shown.stderr
    done = cli(project, "reject", "lint-bad")
    assert done.returncode == 0, done.stderr
    assert not (manager.workspaces_dir / "lint-bad.sqlite").exists()
    assert snapshot(project) == before


# -- 5. a user editing a file while an accept runs, and undo afterwards ---------------------


def edit_at_rename(
    monkeypatch: pytest.MonkeyPatch, renames: int, action: Callable[[], None]
) -> None:
    """Run ``action`` (a user's edit) right after the accept's ``renames``-th rename: the
    journal's pause hook runs after each of the temp writes, then after each rename."""
    calls = [0]
    temps = FILES + 2

    def pause() -> None:
        calls[0] += 1
        if calls[0] == temps + renames:
            action()

    monkeypatch.setattr(journal, "_pause", pause)


def test_a_file_edited_during_accept_refuses_it_whole_and_keeps_the_edit(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    manager = WorkspaceManager(project)
    review = WorkspaceReview(manager)
    workspace_id = make_workspace(manager)
    before = snapshot(project)
    target = project / "pkg" / "m15.py"
    edited = old(15) + b"# typed by the user\n"

    def user_saves() -> None:
        target.write_bytes(edited)

    edit_at_rename(monkeypatch, 10, user_saves)
    error = coded(lambda: review.accept(workspace_id), "WS_004")
    monkeypatch.undo()
    assert "pkg/m15.py" in error.message and "nothing was written" in error.message
    assert snapshot(project) == before | {"pkg/m15.py": edited}
    assert_clean_state(manager, workspace_id, "pending")
    review.accept(workspace_id)
    merged = expected_new(before) | {"pkg/m15.py": new(15) + b"# typed by the user\n"}
    assert snapshot(project) == merged
    review.undo(workspace_id)
    assert snapshot(project) == before | {"pkg/m15.py": edited}


def test_undo_after_an_edit_refuses_whole_or_keeps_the_edited_file(project: Path) -> None:
    manager = WorkspaceManager(project)
    review = WorkspaceReview(manager)
    workspace_id = make_workspace(manager)
    before = snapshot(project)
    review.accept(workspace_id)
    edited = new(3) + b"# later edit\n"
    (project / "pkg" / "m03.py").write_bytes(edited)
    accepted = snapshot(project)
    error = coded(lambda: review.undo(workspace_id), "WS_005")
    assert "pkg/m03.py" in error.message and "nothing was restored" in error.message
    assert error.hint and "--keep-changed" in error.hint
    assert snapshot(project) == accepted
    report = run_timed(lambda: review.undo(workspace_id, keep_changed=True), QUICK)[0]
    assert report.kept == ["pkg/m03.py"]
    assert len(report.restored) == FILES + 2
    assert snapshot(project) == before | {"pkg/m03.py": edited}
    assert_clean_state(manager, workspace_id, "pending")


def test_a_file_left_alone_by_recovery_does_not_block_undo(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An accept stopped mid-way (as by kill -9), a file edited before recovery: recovery
    leaves it and reports it, and undo restores the rest instead of refusing for good."""
    manager = WorkspaceManager(project)
    review = WorkspaceReview(manager)
    workspace_id = make_workspace(manager)
    before = snapshot(project)

    def crash() -> None:
        raise KeyboardInterrupt

    edit_at_rename(monkeypatch, 8, crash)
    with pytest.raises(KeyboardInterrupt):
        review.accept(workspace_id)
    monkeypatch.undo()
    edited = old(19) + b"# user\n"
    (project / "pkg" / "m19.py").write_bytes(edited)
    report = run_timed(review.recover, QUICK)[0]
    assert report.completed == [workspace_id] and report.skipped_files == ["pkg/m19.py"]
    assert snapshot(project) == expected_new(before) | {"pkg/m19.py": edited}
    undone = run_timed(lambda: review.undo(workspace_id), QUICK)[0]
    assert undone.kept == [] and "pkg/m19.py" not in [f.path for f in undone.restored]
    assert snapshot(project) == before | {"pkg/m19.py": edited}


# -- 6. quota and read cap -------------------------------------------------------------------


def test_the_workspace_quota_refuses_writes_past_it(project: Path) -> None:
    manager = WorkspaceManager.from_config(project, WorkspaceConfig(max_mb=1))
    before = snapshot(project)
    chunk = b"x" * (400 * 1024)
    with manager.create("lint", "quota") as ws:
        ws.write("big/one.py", chunk)
        ws.write("big/two.py", chunk)
        error = coded(lambda: ws.write("big/three.py", chunk), "WS_018")
        assert "workspace.max_mb" in error.message + (error.hint or "")
        assert "big/three.py" in error.message
        assert ws.changed_paths() == ["big/one.py", "big/two.py"]
        assert ws.read("big/one.py") == chunk and ws.read("big/two.py") == chunk
        ws.write("big/one.py", b"smaller\n")
        ws.write("big/three.py", chunk)
        coded(lambda: ws.write("big/four.py", chunk), "WS_018")
    assert snapshot(project) == before


def test_the_quota_counts_the_originals_kept_for_merging(project: Path) -> None:
    (project / "huge.txt").write_bytes(b"h" * (700 * 1024))
    manager = WorkspaceManager.from_config(project, WorkspaceConfig(max_mb=1))
    before = snapshot(project)
    with manager.create("lint", "quota") as ws:
        coded(lambda: ws.write("huge.txt", b"h" * (400 * 1024)), "WS_018")
        ws.delete("huge.txt")
        coded(lambda: ws.write("other.py", b"o" * (400 * 1024)), "WS_018")
        assert ws.changed_paths() == ["huge.txt"]
    assert snapshot(project) == before


def test_the_read_cap_comes_from_config(project: Path) -> None:
    (project / "big.txt").write_bytes(b"b" * (MB + 1))
    (project / "fits.txt").write_bytes(b"f" * (MB - 1))
    manager = WorkspaceManager.from_config(project, WorkspaceConfig(max_read_mb=1))
    before = snapshot(project)
    with manager.create("lint", "cap") as ws:
        with pytest.raises(FileTooLargeError) as info:
            run_timed(lambda: ws.read("big.txt"), QUICK)
        assert "workspace.max_read_mb" in str(info.value.strerror)
        assert len(ws.read("fits.txt")) == MB - 1
        error = coded(lambda: ws.write("big.txt", b"small"), "WS_006")
        assert "workspace.max_read_mb" in error.message
    assert WorkspaceManager.from_config(project, WorkspaceConfig()).max_read_bytes == 64 * MB
    assert snapshot(project) == before


# -- the state directory broken in ways the OS reports -------------------------------------


def test_state_paths_the_os_refuses_are_coded(project: Path) -> None:
    manager = WorkspaceManager(project)
    review = WorkspaceReview(manager)
    workspace_id = make_workspace(manager)
    before = snapshot(project)
    manager.journal_dir.parent.mkdir(parents=True, exist_ok=True)
    manager.journal_dir.write_bytes(b"a file where the journal directory belongs")
    error = coded(lambda: review.accept(workspace_id), "WS_017")
    assert "nothing was written" in error.message
    assert snapshot(project) == before
    manager.journal_dir.unlink()
    manager.views_dir.write_bytes(b"a file where the views directory belongs")
    with manager.open(workspace_id) as ws:
        coded(lambda: ws.materialize().__enter__(), "WS_017")
    manager.views_dir.unlink()
    (manager.state_path / "review.lock").unlink(missing_ok=True)
    (manager.state_path / "review.lock").mkdir()
    coded(lambda: review.accept(workspace_id), "WS_017")
    (manager.state_path / "review.lock").rmdir()
    assert snapshot(project) == before
    review.accept(workspace_id)
    assert snapshot(project) == expected_new(before)


def test_a_fifo_in_place_of_a_target_is_a_conflict_not_a_hang(project: Path) -> None:
    manager = WorkspaceManager(project)
    review = WorkspaceReview(manager)
    workspace_id = make_workspace(manager)
    target = project / "pkg" / "m07.py"
    target.unlink()
    os.mkfifo(target)
    before = snapshot(project)
    error = coded(lambda: review.accept(workspace_id), "WS_004")
    assert "pkg/m07.py" in error.message and "FIFO" in error.message
    assert snapshot(project) == before
    assert_clean_state(manager, workspace_id, "pending")


def test_a_symlink_loop_or_an_unreadable_file_in_the_project_is_coded(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / "loop_a").symlink_to("loop_b")
    (project / "loop_b").symlink_to("loop_a")
    secret = project / "secret.py"
    secret.write_bytes(b"S = 1\n")
    before = snapshot(project)
    manager = WorkspaceManager(project)
    with manager.create("lint", "paths") as ws:
        for call in (lambda: ws.read("loop_a"), lambda: ws.write("loop_a", b"x")):
            coded(call, "WS_001")
        assert not ws.exists("loop_a")
        assert "loop_a" in ws.list_dir("")
        if os.geteuid() == 0:
            real_read = regular_files.read_regular_file

            def denied(path: Path, limit: int, name: str | None = None) -> bytes:
                if path.name == "secret.py":
                    raise PermissionError(errno.EACCES, "Permission denied", str(path))
                return real_read(path, limit, name)

            monkeypatch.setattr(overlay, "read_regular_file", denied)
            error = coded(lambda: ws.read("secret.py"), "WS_017")
        else:
            secret.chmod(0)
            try:
                error = coded(lambda: ws.read("secret.py"), "WS_017")
            finally:
                secret.chmod(0o644)
        assert "secret.py" in error.message
        with ws.materialize() as view:
            assert (view / "pkg" / "m00.py").read_bytes() == old(0)
            assert (view / "loop_a").is_symlink()
    assert snapshot(project) == before
