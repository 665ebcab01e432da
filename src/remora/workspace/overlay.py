"""The copy-on-write overlay: one SQLite database per (operation, node) workspace.

Reads fall through to the project; writes and deletes (tombstones) stay in the database,
each with the content and sha256 of the base it was made against. The base is what the
workspace last read of that path, or the project file at the first write, so accept can
tell "the user edited this since" from "the agent changed this" and merge the two.

One database per workspace keeps concurrent workspaces independent; WAL mode with a
busy timeout lets several processes open the same workspace, and a lock per instance
lets threads share one.

Project files are read with :func:`remora.regular_files.read_regular_file`: a FIFO would
block the read forever and ``/dev/zero`` would never end, so anything but a regular file is
refused, and no read loads more than ``MAX_READ_BYTES``.
"""

from __future__ import annotations

import difflib
import os
import posixpath
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from remora.errors import WorkspaceError
from remora.regular_files import FileTooLargeError, NotRegularFileError, read_regular_file
from remora.workspace.base import normalize_path, resolve_inside
from remora.workspace.durable import sha256_bytes
from remora.workspace.materialize import materialize_view
from remora.workspace.models import Change, ChangeKind, WorkspaceInfo, WorkspaceStatus

SCHEMA_VERSION = 1
_SEEN_LIMIT = 256
MAX_READ_BYTES = 64 * 1024 * 1024
"""Most bytes one read of a project file loads: the default of ``tools.max_file_mb``, the
largest file project code may write. A bigger file is refused, never loaded in part."""
_SCHEMA = """
CREATE TABLE workspace (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    workspace_id TEXT NOT NULL,
    operation TEXT NOT NULL,
    node_id TEXT NOT NULL,
    run_id TEXT,
    file_path TEXT,
    created_at REAL NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending',
    accepted_at REAL
);
CREATE TABLE entries (
    path TEXT PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('write', 'delete')),
    data BLOB,
    new_sha256 TEXT,
    base_sha256 TEXT,
    base_data BLOB,
    updated_at REAL NOT NULL
);
CREATE TABLE backups (
    path TEXT PRIMARY KEY,
    data BLOB,
    applied_sha256 TEXT
);
"""


@dataclass(frozen=True)
class OverlayEntry:
    """A change with its content: ``data`` is None for a delete, ``base_data`` for a new file."""

    path: str
    kind: ChangeKind
    data: bytes | None
    new_sha256: str | None
    base_sha256: str | None
    base_data: bytes | None


@dataclass(frozen=True)
class Backup:
    """What accept overwrote (``data`` None: the file did not exist) and what it left there."""

    path: str
    data: bytes | None
    applied_sha256: str | None


def _connect(path: Path, synchronous: str = "NORMAL") -> sqlite3.Connection:
    try:
        conn = sqlite3.connect(
            str(path), timeout=30.0, isolation_level=None, check_same_thread=False
        )
        conn.execute(f"PRAGMA synchronous={synchronous}")
        conn.execute("PRAGMA journal_mode=WAL")
    except sqlite3.DatabaseError as exc:
        raise _storage_error(path, exc) from None
    return conn


def _storage_error(path: Path, exc: Exception) -> WorkspaceError:
    return WorkspaceError(
        "WS_007",
        f"workspace storage {path} is unreadable: {exc}",
        "the file may be corrupt or from another Remora version; reject the workspace",
    )


def _prefix_bounds(rel: str) -> tuple[str, str]:
    """Key range holding every path strictly below directory ``rel`` ('/' sorts before '0')."""
    return (rel + "/", rel + "0") if rel else ("", "\U0010ffff")


def unified_diff(path: str, old: bytes | None, new: bytes | None, context: int = 3) -> str:
    """A git-style unified diff of one file; binary content is reported, not shown."""
    before, after = f"a/{path}", f"b/{path}"
    if old is None:
        before = "/dev/null"
    if new is None:
        after = "/dev/null"
    if b"\x00" in (old or b"") or b"\x00" in (new or b""):
        return f"Binary files {before} and {after} differ\n"
    old_lines = (old or b"").decode("utf-8", errors="replace").splitlines(keepends=True)
    new_lines = (new or b"").decode("utf-8", errors="replace").splitlines(keepends=True)
    out: list[str] = []
    for line in difflib.unified_diff(old_lines, new_lines, before, after, n=context):
        if line.endswith("\r\n"):
            line = line[:-2] + "\n"
        if line.endswith("\n"):
            out.append(line)
        else:
            out.append(line + "\n\\ No newline at end of file\n")
    return "".join(out)


class OverlayWorkspace:
    """A FileStore whose writes stay in SQLite until a human accepts them.

    Create and open workspaces through :class:`remora.workspace.manager.WorkspaceManager`.
    Paths are project-relative; ``hidden`` (Remora's state directory) is out of reach.
    """

    def __init__(
        self,
        db_path: Path,
        project_root: Path,
        *,
        views_dir: Path,
        hidden: str | None = None,
        keep_views: bool = False,
    ) -> None:
        self.db_path = db_path
        self._root = project_root.resolve()
        self._views_dir = views_dir
        self._hidden = hidden
        self._keep_views = keep_views
        self._lock = threading.RLock()
        self._seen: OrderedDict[str, bytes] = OrderedDict()
        self._conn: sqlite3.Connection | None = _connect(db_path)
        try:
            row = self._conn.execute("SELECT workspace_id FROM workspace WHERE id = 1").fetchone()
            version = self._conn.execute("PRAGMA user_version").fetchone()[0]
        except sqlite3.DatabaseError as exc:
            self._conn.close()
            raise _storage_error(db_path, exc) from None
        if row is None or version != SCHEMA_VERSION:
            self._conn.close()
            raise _storage_error(db_path, ValueError(f"schema version {version}"))
        self._workspace_id: str = row[0]

    @classmethod
    def create(
        cls,
        db_path: Path,
        project_root: Path,
        *,
        workspace_id: str,
        operation: str,
        node_id: str,
        run_id: str | None = None,
        file_path: str | None = None,
        views_dir: Path,
        hidden: str | None = None,
        keep_views: bool = False,
    ) -> OverlayWorkspace:
        """Initialise an empty database at ``db_path`` and open it.

        Creation skips fsync (synchronous=OFF): the database holds nothing yet, and the
        first checkpoint makes it durable. A later OS crash can at worst leave an empty
        workspace unreadable (WS_007); a process crash cannot.
        """
        conn = _connect(db_path, synchronous="OFF")
        try:
            conn.execute("BEGIN IMMEDIATE")
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute(
                "INSERT INTO workspace (id, workspace_id, operation, node_id, run_id, file_path,"
                " created_at) VALUES (1, ?, ?, ?, ?, ?, ?)",
                (workspace_id, operation, node_id, run_id, file_path, time.time()),
            )
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            conn.execute("COMMIT")
        finally:
            conn.close()
        return cls(db_path, project_root, views_dir=views_dir, hidden=hidden, keep_views=keep_views)

    # -- FileStore -------------------------------------------------------------------

    @property
    def root(self) -> Path:
        return self._root

    @property
    def hidden(self) -> str | None:
        return self._hidden

    @property
    def workspace_id(self) -> str:
        return self._workspace_id

    def read(self, path: str) -> bytes:
        """Current content in the merged view; FileNotFoundError when absent or deleted."""
        rel = self._rel(path)
        if not rel:
            raise IsADirectoryError(21, "the project root is a directory", path)
        with self._lock:
            row = self._db().execute("SELECT kind, data FROM entries WHERE path = ?", (rel,))
            found = row.fetchone()
            if found is not None:
                if found[0] == "delete":
                    raise FileNotFoundError(2, "deleted in this workspace", rel)
                return bytes(found[1])
            if self._has_children(rel):
                raise IsADirectoryError(21, "is a directory", rel)
            data = read_regular_file(resolve_inside(self._root, rel), MAX_READ_BYTES, name=rel)
            self._seen[rel] = data
            self._seen.move_to_end(rel)
            while len(self._seen) > _SEEN_LIMIT:
                self._seen.popitem(last=False)
            return data

    def write(self, path: str, data: bytes) -> None:
        """Store ``data`` for ``path``; writing back the base content drops the change."""
        rel = self._rel(path)
        if not rel:
            raise self._shape_error(rel, "the project root is a directory")
        if not isinstance(data, bytes | bytearray | memoryview):
            raise TypeError(f"write() needs bytes, got {type(data).__name__}")
        content = bytes(data)
        with self._lock, self._tx() as conn:
            found = conn.execute(
                "SELECT base_sha256, base_data FROM entries WHERE path = ?", (rel,)
            ).fetchone()
            if found is not None:
                base_sha: str | None = found[0]
                base_data = None if found[1] is None else bytes(found[1])
            else:
                self._check_shape(conn, rel)
                base_data = self._base_of(rel)
                base_sha = None if base_data is None else sha256_bytes(base_data)
            if base_data is not None and content == base_data:
                conn.execute("DELETE FROM entries WHERE path = ?", (rel,))
                return
            conn.execute(
                "INSERT OR REPLACE INTO entries"
                " (path, kind, data, new_sha256, base_sha256, base_data, updated_at)"
                " VALUES (?, 'write', ?, ?, ?, ?, ?)",
                (rel, content, sha256_bytes(content), base_sha, base_data, time.time()),
            )

    def delete(self, path: str) -> None:
        """Delete a file in the merged view (a tombstone); FileNotFoundError when absent."""
        rel = self._rel(path)
        if not rel:
            raise self._shape_error(rel, "the project root cannot be deleted")
        with self._lock, self._tx() as conn:
            found = conn.execute(
                "SELECT kind, base_sha256 FROM entries WHERE path = ?", (rel,)
            ).fetchone()
            if found is not None:
                if found[0] == "delete":
                    raise FileNotFoundError(2, "already deleted in this workspace", rel)
                if found[1] is None:
                    conn.execute("DELETE FROM entries WHERE path = ?", (rel,))
                else:
                    conn.execute(
                        "UPDATE entries SET kind = 'delete', data = NULL, new_sha256 = NULL,"
                        " updated_at = ? WHERE path = ?",
                        (time.time(), rel),
                    )
                return
            if self._has_children(rel) or resolve_inside(self._root, rel).is_dir():
                raise IsADirectoryError(21, "only files can be deleted", rel)
            base_data = self._base_of(rel)
            if base_data is None:
                raise FileNotFoundError(2, "no such file", rel)
            conn.execute(
                "INSERT INTO entries"
                " (path, kind, data, new_sha256, base_sha256, base_data, updated_at)"
                " VALUES (?, 'delete', NULL, NULL, ?, ?, ?)",
                (rel, sha256_bytes(base_data), base_data, time.time()),
            )

    def exists(self, path: str) -> bool:
        """Whether ``path`` is a file or directory in the merged view (never the state dir)."""
        try:
            rel = self._rel(path)
        except WorkspaceError as exc:
            if exc.code == "WS_006":
                return False
            raise
        if not rel:
            return True
        with self._lock:
            found = self._db().execute("SELECT kind FROM entries WHERE path = ?", (rel,)).fetchone()
            if found is not None:
                return bool(found[0] == "write")
            if self._has_children(rel):
                return True
        try:
            return resolve_inside(self._root, rel).exists()
        except WorkspaceError:
            return False

    def list_dir(self, path: str = "") -> list[str]:
        """Sorted entry names of a directory in the merged view; sub-directories end in '/'."""
        rel = self._rel(path)
        with self._lock:
            conn = self._db()
            if rel:
                found = conn.execute("SELECT kind FROM entries WHERE path = ?", (rel,)).fetchone()
                if found is not None and found[0] == "write":
                    raise NotADirectoryError(20, "is a file", rel)
                if found is not None:
                    raise FileNotFoundError(2, "deleted in this workspace", rel)
            low, high = _prefix_bounds(rel)
            rows = conn.execute(
                "SELECT path, kind FROM entries WHERE path > ? AND path < ?", (low, high)
            ).fetchall()
        names: dict[str, bool] = {}
        directory = resolve_inside(self._root, rel)
        found_dir = directory.is_dir()
        if found_dir:
            with os.scandir(directory) as entries:
                for entry in entries:
                    child = posixpath.join(rel, entry.name) if rel else entry.name
                    if child != self._hidden:
                        names[entry.name] = entry.is_dir()
        elif directory.exists() and not rows:
            raise NotADirectoryError(20, "is a file", rel)
        has_children = False
        for child_path, kind in rows:
            first, sep, _rest = child_path[len(low) :].partition("/")
            if sep:
                if kind == "write":
                    names[first] = True
                    has_children = True
            elif kind == "write":
                names[first] = False
                has_children = True
            elif not names.get(first, False):
                names.pop(first, None)
        if not found_dir and not has_children:
            raise FileNotFoundError(2, "no such directory", rel)
        return sorted(name + "/" if is_dir else name for name, is_dir in names.items())

    def changed_paths(self) -> list[str]:
        with self._lock:
            rows = self._db().execute("SELECT path FROM entries ORDER BY path").fetchall()
        return [row[0] for row in rows]

    def materialize(self, writable: Iterable[str] = ()) -> AbstractContextManager[Path]:
        """A real directory showing the project with this workspace's changes applied.

        ``writable`` names paths a subprocess will write (``ruff --fix`` on a file); they
        are real copies there, so the write cannot follow a symlink into the project. Run
        subprocesses without bytecode writing (``PYTHONDONTWRITEBYTECODE=1``).
        """
        return materialize_view(
            self,
            self._views_dir,
            writable=writable,
            keep=self._keep_views,
            hidden=self._hidden,
        )

    # -- review ----------------------------------------------------------------------

    def changes(self) -> list[Change]:
        """Every changed path with its kind and hashes; agrees with ``changed_paths()``."""
        with self._lock:
            rows = (
                self._db()
                .execute(
                    "SELECT path, kind, base_sha256, new_sha256, COALESCE(length(data), 0)"
                    " FROM entries ORDER BY path"
                )
                .fetchall()
            )
        return [
            Change(path=row[0], kind=row[1], base_sha256=row[2], new_sha256=row[3], size=row[4])
            for row in rows
        ]

    def entries(self) -> list[OverlayEntry]:
        """Changes with their content and base content, for accept and diff."""
        with self._lock:
            rows = (
                self._db()
                .execute(
                    "SELECT path, kind, data, new_sha256, base_sha256, base_data"
                    " FROM entries ORDER BY path"
                )
                .fetchall()
            )
        return [
            OverlayEntry(
                path=row[0],
                kind=row[1],
                data=None if row[2] is None else bytes(row[2]),
                new_sha256=row[3],
                base_sha256=row[4],
                base_data=None if row[5] is None else bytes(row[5]),
            )
            for row in rows
        ]

    def diff(self, context: int = 3) -> dict[str, str]:
        """A unified diff per changed file, from the base it was made against to this workspace."""
        return {
            entry.path: unified_diff(entry.path, entry.base_data, entry.data, context)
            for entry in self.entries()
        }

    def info(self) -> WorkspaceInfo:
        with self._lock:
            conn = self._db()
            row = conn.execute(
                "SELECT workspace_id, operation, node_id, run_id, file_path, created_at, status,"
                " accepted_at FROM workspace WHERE id = 1"
            ).fetchone()
            count = conn.execute("SELECT COUNT(*) FROM entries").fetchone()[0]
        return WorkspaceInfo(
            workspace_id=row[0],
            operation=row[1],
            node_id=row[2],
            run_id=row[3],
            file_path=row[4],
            created_at=row[5],
            status=row[6],
            accepted_at=row[7],
            changes=count,
        )

    @property
    def status(self) -> WorkspaceStatus:
        return self.info().status

    def record_backups(self, backups: list[Backup]) -> None:
        """Durably keep what an accept is about to overwrite, before any project file changes."""
        with self._lock:
            conn = self._db()
            conn.execute("PRAGMA synchronous=FULL")
            try:
                with self._tx():
                    conn.execute("DELETE FROM backups")
                    conn.executemany(
                        "INSERT INTO backups (path, data, applied_sha256) VALUES (?, ?, ?)",
                        [(item.path, item.data, item.applied_sha256) for item in backups],
                    )
            finally:
                conn.execute("PRAGMA synchronous=NORMAL")

    def backups(self) -> list[Backup]:
        with self._lock:
            rows = (
                self._db()
                .execute("SELECT path, data, applied_sha256 FROM backups ORDER BY path")
                .fetchall()
            )
        return [
            Backup(
                path=row[0], data=None if row[1] is None else bytes(row[1]), applied_sha256=row[2]
            )
            for row in rows
        ]

    def mark_accepted(self) -> None:
        with self._lock, self._tx() as conn:
            conn.execute(
                "UPDATE workspace SET status = 'accepted', accepted_at = ? WHERE id = 1",
                (time.time(),),
            )

    def mark_pending(self) -> None:
        """Back to review after an undo: status pending, backups dropped."""
        with self._lock, self._tx() as conn:
            conn.execute("DELETE FROM backups")
            conn.execute("UPDATE workspace SET status = 'pending', accepted_at = NULL WHERE id = 1")

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> OverlayWorkspace:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"OverlayWorkspace({self._workspace_id!r}, root={str(self._root)!r})"

    # -- internals -------------------------------------------------------------------

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            raise WorkspaceError(
                "WS_013",
                f"workspace {self._workspace_id} is closed",
                "open it again with WorkspaceManager.open()",
            )
        return self._conn

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        conn = self._db()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def _rel(self, path: str) -> str:
        rel = normalize_path(path) if path not in ("", ".") else ""
        hidden = self._hidden
        if hidden and (rel == hidden or rel.startswith(hidden + "/")):
            raise self._shape_error(rel, f"{hidden}/ holds Remora's own state")
        return rel

    def _has_children(self, rel: str) -> bool:
        low, high = _prefix_bounds(rel)
        row = (
            self._db()
            .execute(
                "SELECT 1 FROM entries WHERE path > ? AND path < ? AND kind = 'write' LIMIT 1",
                (low, high),
            )
            .fetchone()
        )
        return row is not None

    def _base_of(self, rel: str) -> bytes | None:
        if rel in self._seen:
            return self._seen.pop(rel)
        try:
            return read_regular_file(resolve_inside(self._root, rel), MAX_READ_BYTES, name=rel)
        except FileNotFoundError:
            return None
        except (IsADirectoryError, NotADirectoryError):
            raise self._shape_error(rel, "a directory is in the way") from None
        except (NotRegularFileError, FileTooLargeError) as exc:
            raise self._shape_error(rel, f"the project file there is {exc.strerror}") from None

    def _check_shape(self, conn: sqlite3.Connection, rel: str) -> None:
        if self._has_children(rel) or (self._root / rel).is_dir():
            raise self._shape_error(rel, "it is a directory")
        parent = posixpath.dirname(rel)
        while parent:
            found = conn.execute("SELECT kind FROM entries WHERE path = ?", (parent,)).fetchone()
            on_disk = self._root / parent
            if (found is not None and found[0] == "write") or (
                os.path.lexists(on_disk) and not on_disk.is_dir()
            ):
                raise self._shape_error(rel, f"{parent} is a file")
            parent = posixpath.dirname(parent)

    def _shape_error(self, rel: str, why: str) -> WorkspaceError:
        return WorkspaceError(
            "WS_006",
            f"cannot write {rel or '.'!r} in workspace {self._workspace_id}: {why}",
            "write files at paths where the project has no directory or file in the way",
        )
