"""WorkspaceManager: creates, opens, lists and removes the workspaces of one project.

State lives under ``<project>/<state_dir>`` (``.remora`` by default)::

    workspaces/<workspace_id>.sqlite   one overlay per (operation, node)
    views/<pid>-<workspace_id>-<tok>/  materialized views, swept when <pid> is gone
    journal/<journal_id>.json          in-flight accept/undo, replayed by recovery
    review.lock                        serialises accept, undo and manifest updates

Workspace ids are ``<operation>-<node_id>`` plus, when the workspace belongs to a run,
``-<6 hex of sha256(run_id)>``: readable in a terminal, stable for a given run, and
distinct across runs that coexist until they are reviewed.

Limits come from ``workspace.max_read_mb`` (the largest project file a read loads) and
``workspace.max_mb`` (the most one workspace may hold for its changed files, WS_018).
OS failures on the state directory are coded (WS_015 no space, WS_017 not writable).
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from contextlib import AbstractContextManager
from pathlib import Path

from remora.config import WorkspaceConfig
from remora.contracts import JobKey
from remora.errors import WorkspaceError
from remora.workspace.durable import FileLock, os_failure
from remora.workspace.materialize import sweep_stale_views
from remora.workspace.models import WorkspaceInfo, WorkspaceState
from remora.workspace.overlay import DEFAULT_MAX_BYTES, DEFAULT_MAX_READ_BYTES, MB, OverlayWorkspace

_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,199}")
_RUN_SUFFIX = re.compile(r"-[0-9a-f]{6}$")
_SUFFIX = ".sqlite"


def make_workspace_id(operation: str, node_id: str, run_id: str | None = None) -> str:
    """``<operation>-<node_id>[-<run suffix>]``, validated so it is safe as a file name."""
    return check_workspace_id(JobKey(operation, node_id, run_id).workspace_id)


def check_workspace_id(workspace_id: str) -> str:
    """``workspace_id`` itself, or WS_002 when it could not name a workspace."""
    if not _ID_PATTERN.fullmatch(workspace_id) or ".." in workspace_id:
        raise WorkspaceError(
            "WS_002",
            f"{workspace_id!r} is not a valid workspace id",
            "ids look like docstring-3f2a9c0d1e2b4a5c-ab12cd; 'remora runs' lists them",
        )
    return workspace_id


STATE_GITIGNORE = "# Remora's state: runs, workspaces, events. Written by Remora.\n*\n"


class WorkspaceManager:
    """The workspaces of one project root. Creating it touches nothing on disk."""

    def __init__(
        self,
        project_root: Path,
        state_dir: str | Path = ".remora",
        *,
        keep_views: bool = False,
        lock_timeout: float = 30.0,
        max_read_bytes: int = DEFAULT_MAX_READ_BYTES,
        max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        self.project_root = Path(project_root).resolve()
        self.state_path = (self.project_root / state_dir).resolve()
        self.keep_views = keep_views
        self.lock_timeout = lock_timeout
        self.max_read_bytes = max_read_bytes
        self.max_bytes = max_bytes
        try:
            self.hidden: str | None = self.state_path.relative_to(self.project_root).as_posix()
        except ValueError:
            self.hidden = None
        if self.hidden == ".":
            raise WorkspaceError(
                "WS_006",
                "the workspace state directory cannot be the project root",
                "set workspace.state_dir to a sub-directory such as .remora",
            )

    @classmethod
    def from_config(cls, project_root: Path, config: WorkspaceConfig) -> WorkspaceManager:
        return cls(
            project_root,
            config.state_dir,
            keep_views=config.keep_views,
            max_read_bytes=config.max_read_mb * MB,
            max_bytes=config.max_mb * MB,
        )

    @property
    def workspaces_dir(self) -> Path:
        return self.state_path / "workspaces"

    @property
    def views_dir(self) -> Path:
        return self.state_path / "views"

    @property
    def journal_dir(self) -> Path:
        return self.state_path / "journal"

    def prepare_state(self) -> None:
        """Create the state directory, with a ``.gitignore`` that ignores all of it, so
        runs and workspaces never show up in ``git status`` (an existing one is kept)."""
        self.state_path.mkdir(parents=True, exist_ok=True)
        ignore = self.state_path / ".gitignore"
        if not ignore.exists():
            with contextlib.suppress(OSError):  # only a convenience: the state still works
                ignore.write_text(STATE_GITIGNORE, encoding="utf-8")

    def lock(self) -> AbstractContextManager[object]:
        """The project's review lock (re-entrant in one thread, exclusive across processes).

        Without a state directory there is nothing to protect, and a read-only command must
        not leave one behind: the lock is then a no-op (whatever first writes state creates
        the directory, and later calls lock for real).
        """
        if not self.state_path.is_dir():
            return contextlib.nullcontext()
        return FileLock(self.state_path / "review.lock", timeout=self.lock_timeout)

    def create(
        self,
        operation: str,
        node_id: str,
        run_id: str | None = None,
        *,
        file_path: str | None = None,
        workspace_id: str | None = None,
    ) -> OverlayWorkspace:
        """A new empty workspace; WS_012 when one with the same id already exists."""
        workspace_id = check_workspace_id(
            workspace_id or make_workspace_id(operation, node_id, run_id)
        )
        path = self._db_path(workspace_id)
        try:
            self.prepare_state()
            self.workspaces_dir.mkdir(parents=True, exist_ok=True)
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
        except FileExistsError:
            raise WorkspaceError(
                "WS_012",
                f"workspace {workspace_id} already exists",
                f"accept or reject it first ('remora reject {workspace_id}')",
            ) from None
        except OSError as exc:
            raise os_failure(exc, f"create workspace {workspace_id}") from None
        try:
            return OverlayWorkspace.create(
                path,
                self.project_root,
                workspace_id=workspace_id,
                operation=operation,
                node_id=node_id,
                run_id=run_id,
                file_path=file_path,
                views_dir=self.views_dir,
                hidden=self.hidden,
                keep_views=self.keep_views,
                max_read_bytes=self.max_read_bytes,
                max_bytes=self.max_bytes,
            )
        except BaseException:
            with contextlib.suppress(OSError):
                self._unlink(workspace_id)
            raise

    def open(self, workspace_id: str) -> OverlayWorkspace:
        """An existing workspace; WS_002 when there is none with this id."""
        path = self._db_path(check_workspace_id(workspace_id))
        if not path.is_file():
            raise WorkspaceError(
                "WS_002",
                f"no workspace {workspace_id} in {self.workspaces_dir}",
                "it may have been rejected already; 'remora runs' and 'remora review' list them",
            )
        return OverlayWorkspace(
            path,
            self.project_root,
            views_dir=self.views_dir,
            hidden=self.hidden,
            keep_views=self.keep_views,
            max_read_bytes=self.max_read_bytes,
            max_bytes=self.max_bytes,
        )

    def exists(self, workspace_id: str) -> bool:
        return self._db_path(check_workspace_id(workspace_id)).is_file()

    def info(self, workspace_id: str) -> WorkspaceInfo:
        with self.open(workspace_id) as workspace:
            return workspace.info()

    def state(self, workspace_id: str) -> WorkspaceState:
        """pending, accepted, or discarded (rejected, retried, or never created)."""
        if not self.exists(workspace_id):
            return "discarded"
        return self.info(workspace_id).status

    def info_from_id(self, workspace_id: str) -> WorkspaceInfo:
        """What the id alone says of a workspace whose storage cannot be read.

        Operation and node come from ``<operation>-<node_id>[-<run suffix>]``; the run id
        cannot be recovered from its hash, so it is None.
        """
        operation, _, node_id = check_workspace_id(workspace_id).partition("-")
        try:
            created = self._db_path(workspace_id).stat().st_mtime
        except OSError:
            created = time.time()
        return WorkspaceInfo(
            workspace_id=workspace_id,
            operation=operation,
            node_id=_RUN_SUFFIX.sub("", node_id),
            created_at=created,
        )

    def list(self) -> list[WorkspaceInfo]:
        """Every readable workspace on disk, oldest first.

        One whose storage is unreadable (WS_007) is left out rather than hiding all the
        others; ``reject`` removes it.
        """
        try:
            names = sorted(os.listdir(self.workspaces_dir))
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise os_failure(exc, "list the workspaces") from None
        infos = []
        for name in names:
            if name.endswith(_SUFFIX):
                try:
                    infos.append(self.info(name[: -len(_SUFFIX)]))
                except WorkspaceError as exc:
                    if exc.code not in ("WS_002", "WS_007"):
                        raise
        return sorted(infos, key=lambda info: (info.created_at, info.workspace_id))

    def remove(self, workspace_id: str) -> None:
        """Delete a workspace's storage; WS_002 when it does not exist."""
        if not self.exists(workspace_id):
            raise WorkspaceError(
                "WS_002",
                f"no workspace {workspace_id} in {self.workspaces_dir}",
                "it may have been rejected already",
            )
        try:
            self._unlink(workspace_id)
        except OSError as exc:
            raise os_failure(exc, f"remove workspace {workspace_id}") from None

    def sweep_views(self) -> int:
        """Remove views left by processes that no longer exist (unless views are kept)."""
        return 0 if self.keep_views else sweep_stale_views(self.views_dir)

    def _db_path(self, workspace_id: str) -> Path:
        return self.workspaces_dir / f"{workspace_id}{_SUFFIX}"

    def _unlink(self, workspace_id: str) -> None:
        base = self._db_path(workspace_id)
        for suffix in ("-wal", "-shm", ""):
            Path(f"{base}{suffix}").unlink(missing_ok=True)
