"""The copy-on-write overlay: one SQLite database per (operation, node) workspace.

Reads fall through to the project; writes and deletes (tombstones) stay in the database,
each with the content and sha256 of the base it was made against. The base is what the
workspace last read of that path, or the project file at the first write, so accept can
tell "the user edited this since" from "the agent changed this" and merge the two.

One database per workspace keeps concurrent workspaces independent; WAL mode with a
busy timeout lets several processes open the same workspace, and a lock per instance
lets threads share one. Transactions are short (one file write, or an accept's backups),
so a writer waits at most ``BUSY_TIMEOUT`` seconds for another process: longer means that
process is holding the database (a hung or paused remora), reported as WS_016.

Every SQLite failure leaves as a coded error (:func:`storage_error`): a full disk is
WS_015, a lock held too long WS_016, storage that cannot be opened or written WS_017, and
only a database that is not one of ours (garbage, another schema) WS_007 "unreadable".

Limits: project files are read with :func:`remora.regular_files.read_regular_file` (a FIFO
would block the read forever, ``/dev/zero`` would never end), so anything but a regular
file is refused, and no read loads more than ``max_read_bytes`` (``workspace.max_read_mb``).
A workspace holds at most ``max_bytes`` (``workspace.max_mb``) for its changed files: their
new content plus the base content kept for merging; a write past it is refused (WS_018)
and everything written before stays.
"""

from __future__ import annotations

import contextlib
import difflib
import errno
import functools
import os
import posixpath
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Concatenate, ParamSpec, TypeVar

from remora.config import WorkspaceConfig
from remora.errors import WorkspaceError
from remora.regular_files import FileTooLargeError, NotRegularFileError, read_regular_file
from remora.workspace.base import check_unprotected, normalize_path, resolve_inside
from remora.workspace.durable import no_space_error, sha256_bytes
from remora.workspace.materialize import entry_is_dir, materialize_view
from remora.workspace.models import Change, ChangeKind, WorkspaceInfo, WorkspaceStatus

SCHEMA_VERSION = 1
_SEEN_LIMIT = 256
MB = 1024 * 1024
DEFAULT_MAX_READ_BYTES = WorkspaceConfig().max_read_mb * MB
"""``workspace.max_read_mb``'s default: a bigger project file is refused, never loaded in part."""
DEFAULT_MAX_BYTES = WorkspaceConfig().max_mb * MB
"""``workspace.max_mb``'s default: the most one workspace holds for its changed files."""
BUSY_TIMEOUT = 5.0
"""Seconds a write waits for another process's transaction on the same workspace. Ours last
milliseconds (the largest, an accept's backups, well under a second), so 5 s is ample for
real contention and short enough that a database held by a stuck process is reported soon."""

_P = ParamSpec("_P")
_R = TypeVar("_R")
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
    conn: sqlite3.Connection | None = None
    try:
        conn = sqlite3.connect(
            str(path), timeout=BUSY_TIMEOUT, isolation_level=None, check_same_thread=False
        )
        conn.execute(f"PRAGMA synchronous={synchronous}")
        conn.execute("PRAGMA journal_mode=WAL")
    except sqlite3.Error as exc:
        if conn is not None:
            conn.close()
        raise storage_error(path, exc) from None
    return conn


def storage_error(path: Path, exc: Exception) -> WorkspaceError:
    """The coded error for a failure of workspace storage at ``path``.

    Classified by SQLite's result code (its message where the code is missing): only a
    database that is not a workspace of ours is WS_007, "unreadable, reject it".
    """
    text = str(exc)
    code = getattr(exc, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else None
    io_error = primary == sqlite3.SQLITE_IOERR or "disk I/O error" in text
    if primary == sqlite3.SQLITE_FULL or "disk is full" in text or (io_error and _disk_full(path)):
        return no_space_error(f"write workspace storage {path}", text)
    if primary in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED) or "is locked" in text:
        return WorkspaceError(
            "WS_016",
            f"workspace storage {path} is locked by another process (waited {BUSY_TIMEOUT:.0f} s)",
            "another Remora process (an analyze, watch or review still running, or a stuck "
            "one) holds it; let it finish or stop it, then try again",
        )
    if primary in (
        sqlite3.SQLITE_READONLY,
        sqlite3.SQLITE_PERM,
        sqlite3.SQLITE_CANTOPEN,
        sqlite3.SQLITE_IOERR,
        sqlite3.SQLITE_AUTH,
    ) or any(word in text for word in ("readonly", "unable to open", "disk I/O error")):
        return WorkspaceError(
            "WS_017",
            f"cannot read or write workspace storage {path}: {text}",
            "check that Remora's state directory (.remora) and its files are writable and "
            "that the file system is healthy, then try again",
        )
    return WorkspaceError(
        "WS_007",
        f"workspace storage {path} is unreadable: {text}",
        "the file may be corrupt or from another Remora version; reject the workspace",
    )


def _disk_full(path: Path) -> bool:
    """Whether the file system holding ``path`` has no block left (SQLite sometimes reports a
    full disk as a generic I/O error, e.g. when its shared-memory file cannot grow)."""
    try:
        info = os.statvfs(path.parent)
    except OSError:
        return False
    return info.f_bavail == 0


def _coded(
    method: Callable[Concatenate[OverlayWorkspace, _P], _R],
) -> Callable[Concatenate[OverlayWorkspace, _P], _R]:
    """Turn any SQLite error escaping ``method`` into the coded storage error."""

    @functools.wraps(method)
    def wrapper(self: OverlayWorkspace, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return method(self, *args, **kwargs)
        except sqlite3.Error as exc:
            raise storage_error(self.db_path, exc) from None

    return wrapper


def _unreadable(rel: str, exc: OSError) -> WorkspaceError:
    return WorkspaceError(
        "WS_017",
        f"cannot read {rel!r} in the project: {exc.strerror or exc}",
        "this user may not read it; make it readable (chmod u+r) or leave it alone",
    )


def _size(count: int) -> str:
    return f"{count / MB:.1f} MB" if count >= MB else f"{count} bytes"


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
    Paths are project-relative; ``hidden`` (Remora's state directory) is out of reach, and
    version-control directories are read-only (WS_019).
    """

    def __init__(
        self,
        db_path: Path,
        project_root: Path,
        *,
        views_dir: Path,
        hidden: str | None = None,
        keep_views: bool = False,
        max_read_bytes: int = DEFAULT_MAX_READ_BYTES,
        max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        self.db_path = db_path
        self._root = project_root.resolve()
        self._views_dir = views_dir
        self._hidden = hidden
        self._keep_views = keep_views
        self._max_read_bytes = max_read_bytes
        self._max_bytes = max_bytes
        self._lock = threading.RLock()
        self._seen: OrderedDict[str, bytes] = OrderedDict()
        self._conn: sqlite3.Connection | None = _connect(db_path)
        try:
            row = self._conn.execute("SELECT workspace_id FROM workspace WHERE id = 1").fetchone()
            version = self._conn.execute("PRAGMA user_version").fetchone()[0]
        except sqlite3.Error as exc:
            self._conn.close()
            raise storage_error(db_path, exc) from None
        if row is None or version != SCHEMA_VERSION:
            self._conn.close()
            raise storage_error(db_path, ValueError(f"schema version {version}"))
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
        max_read_bytes: int = DEFAULT_MAX_READ_BYTES,
        max_bytes: int = DEFAULT_MAX_BYTES,
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
        except sqlite3.Error as exc:
            raise storage_error(db_path, exc) from None
        finally:
            conn.close()
        return cls(
            db_path,
            project_root,
            views_dir=views_dir,
            hidden=hidden,
            keep_views=keep_views,
            max_read_bytes=max_read_bytes,
            max_bytes=max_bytes,
        )

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

    @_coded
    def read(self, path: str) -> bytes:
        """Current content in the merged view; FileNotFoundError when absent or deleted.

        A project file over the read limit raises FileTooLargeError naming the setting.
        """
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
            data = self._read_project(rel)
            self._seen[rel] = data
            self._seen.move_to_end(rel)
            while len(self._seen) > _SEEN_LIMIT:
                self._seen.popitem(last=False)
            return data

    @_coded
    def write(self, path: str, data: bytes) -> None:
        """Store ``data`` for ``path``; writing back the base content drops the change.

        WS_018 when the workspace would then hold more than its quota (nothing is stored);
        WS_019 under a version-control directory (see :func:`check_unprotected`).
        """
        rel = self._rel(path)
        if not rel:
            raise self._shape_error(rel, "the project root is a directory")
        check_unprotected(self._root, rel, doing="write")
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
            self._check_quota(conn, rel, len(content) + len(base_data or b""))
            conn.execute(
                "INSERT OR REPLACE INTO entries"
                " (path, kind, data, new_sha256, base_sha256, base_data, updated_at)"
                " VALUES (?, 'write', ?, ?, ?, ?, ?)",
                (rel, content, sha256_bytes(content), base_sha, base_data, time.time()),
            )

    @_coded
    def delete(self, path: str) -> None:
        """Delete a file in the merged view (a tombstone); FileNotFoundError when absent,
        WS_019 under a version-control directory."""
        rel = self._rel(path)
        if not rel:
            raise self._shape_error(rel, "the project root cannot be deleted")
        check_unprotected(self._root, rel, doing="delete")
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
            self._check_quota(conn, rel, len(base_data))
            conn.execute(
                "INSERT INTO entries"
                " (path, kind, data, new_sha256, base_sha256, base_data, updated_at)"
                " VALUES (?, 'delete', NULL, NULL, ?, ?, ?)",
                (rel, sha256_bytes(base_data), base_data, time.time()),
            )

    @_coded
    def record(self, path: str, data: bytes | None, base: bytes | None) -> None:
        """Store a change made in another copy of the project (a Ray worker's): ``data``
        (None: deleted) made against ``base`` (None: that copy had no such file), so accept
        merges against what the change was made on, not against this project's file now.
        WS_018 and WS_019 as for :meth:`write`."""
        rel = self._rel(path)
        if not rel:
            raise self._shape_error(rel, "the project root is a directory")
        check_unprotected(self._root, rel, doing="write" if data is not None else "delete")
        if data == base:
            return
        kind = "write" if data is not None else "delete"
        with self._lock, self._tx() as conn:
            self._check_shape(conn, rel)
            self._check_quota(conn, rel, len(data or b"") + len(base or b""))
            conn.execute(
                "INSERT OR REPLACE INTO entries"
                " (path, kind, data, new_sha256, base_sha256, base_data, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    rel,
                    kind,
                    data,
                    None if data is None else sha256_bytes(data),
                    None if base is None else sha256_bytes(base),
                    base,
                    time.time(),
                ),
            )

    @_coded
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
        except (WorkspaceError, OSError):
            return False

    @_coded
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
            try:
                with os.scandir(directory) as entries:
                    for entry in entries:
                        child = posixpath.join(rel, entry.name) if rel else entry.name
                        if child != self._hidden:
                            names[entry.name] = entry_is_dir(entry)
            except PermissionError as exc:
                raise _unreadable(rel or ".", exc) from None
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

    @_coded
    def changed_paths(self) -> list[str]:
        with self._lock:
            rows = self._db().execute("SELECT path FROM entries ORDER BY path").fetchall()
        return [row[0] for row in rows]

    def materialize(
        self, writable: Iterable[str] = (), *, capture: bool = True
    ) -> AbstractContextManager[Path]:
        """A real directory showing the project with this workspace's changes applied.

        ``writable`` names paths a subprocess will write (``ruff --fix`` on a file); they
        are real copies there, so the write cannot follow a symlink into the project. Run
        subprocesses without bytecode writing (``PYTHONDONTWRITEBYTECODE=1``). Without
        ``capture`` what the subprocess wrote is discarded with the view.
        """
        return materialize_view(
            self,
            self._views_dir,
            writable=writable,
            keep=self._keep_views,
            hidden=self._hidden,
            capture=capture,
        )

    # -- review ----------------------------------------------------------------------

    @_coded
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

    @_coded
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

    @_coded
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

    @_coded
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

    @_coded
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

    @_coded
    def mark_accepted(self, never_written: Sequence[str] = ()) -> None:
        """Status accepted; ``never_written`` (left alone by a crash recovery) leave the backups,
        so undo never waits for files this accept did not write."""
        with self._lock, self._tx() as conn:
            conn.executemany("DELETE FROM backups WHERE path = ?", [(p,) for p in never_written])
            conn.execute(
                "UPDATE workspace SET status = 'accepted', accepted_at = ? WHERE id = 1",
                (time.time(),),
            )

    @_coded
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
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
            raise

    def _read_project(self, rel: str) -> bytes:
        """A project file, bounded by the read limit (whose error names the setting)."""
        try:
            return read_regular_file(
                resolve_inside(self._root, rel), self._max_read_bytes, name=rel
            )
        except FileTooLargeError:
            raise FileTooLargeError(
                errno.EFBIG,
                f"larger than {_size(self._max_read_bytes)}, the workspace.max_read_mb limit",
                rel,
            ) from None
        except PermissionError as exc:
            raise _unreadable(rel, exc) from None

    def _check_quota(self, conn: sqlite3.Connection, rel: str, size: int) -> None:
        """WS_018 when storing ``size`` bytes for ``rel`` grows the workspace past its quota."""
        total, own = conn.execute(
            "SELECT COALESCE(SUM(COALESCE(length(data), 0) + COALESCE(length(base_data), 0)), 0),"
            " COALESCE(SUM(CASE WHEN path = ? THEN COALESCE(length(data), 0)"
            " + COALESCE(length(base_data), 0) ELSE 0 END), 0) FROM entries",
            (rel,),
        ).fetchone()
        after = total - own + size
        if size <= own or after <= self._max_bytes:
            return
        raise WorkspaceError(
            "WS_018",
            f"cannot store {rel!r} in workspace {self._workspace_id}: it would hold "
            f"{_size(after)} for its changed files (new content and the originals kept for "
            f"merging), over workspace.max_mb ({_size(self._max_bytes)}); the earlier changes "
            "are kept",
            "change fewer or smaller files, or raise workspace.max_mb in remora.yaml "
            "(or with --set workspace.max_mb=N)",
        )

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
            return self._read_project(rel)
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
