"""Durable file primitives: content hashes, fsync'd writes, atomic replacement, the review lock.

Everything that must survive ``kill -9`` or a power cut goes through here, so the
ordering rules (write, fsync the file, rename, fsync the directory) live in one place,
and so does the mapping of OS failures to coded errors (:func:`os_failure`): no space is
WS_015, a file or directory that cannot be written is WS_017.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import secrets
import stat
import threading
import time
from pathlib import Path
from types import TracebackType

from remora.errors import WorkspaceError
from remora.regular_files import NotRegularFileError, file_kind, read_regular_file

NO_SPACE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
"""errno values that mean the disk (or the user's disk quota) is full."""
_HASH_CHUNK = 1024 * 1024


def os_failure(exc: OSError, doing: str) -> WorkspaceError:
    """The coded error for an OS call that failed while ``doing`` (``"accept lint-x"``).

    No space (ENOSPC, EDQUOT) is WS_015 whatever was being written; anything else
    (permission denied, read-only or immutable file system, an I/O error) is WS_017,
    naming the path the OS named.
    """
    where = f"{exc.filename}: " if exc.filename else ""
    reason = exc.strerror or str(exc) or type(exc).__name__
    if exc.errno in NO_SPACE_ERRNOS:
        return no_space_error(doing, f"{where}{reason}")
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        hint = (
            "make it writable (chmod u+w; chattr -i for an immutable file or directory; "
            "a read-only file system must be remounted), then try again"
        )
    else:
        hint = "check the file system (the system log may say more), then try again"
    return WorkspaceError("WS_017", f"cannot {doing}: {where}{reason}", hint)


def no_space_error(doing: str, detail: str) -> WorkspaceError:
    """WS_015: the disk or the disk quota is full (never reported as corrupt storage)."""
    return WorkspaceError(
        "WS_015",
        f"no space left on the device to {doing}: {detail}",
        "free some disk space (or raise your disk quota), then run the command again",
    )


def sha256_bytes(data: bytes) -> str:
    """Hex sha256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def read_optional(path: Path, limit: int) -> bytes | None:
    """A regular file's content, or None when nothing is there.

    Bounded like every read of a user's file: a directory raises IsADirectoryError, a FIFO
    or device NotRegularFileError (never opened, so it cannot block), a file over ``limit``
    bytes FileTooLargeError.
    """
    try:
        return read_regular_file(path, limit)
    except FileNotFoundError:
        return None


def file_sha256(path: Path) -> str | None:
    """Hex sha256 of a regular file's content (streamed, any size), None when nothing is there.

    A directory raises IsADirectoryError; a FIFO or device NotRegularFileError, checked
    before opening and again on the descriptor, so hashing never blocks.
    """
    try:
        _check_regular(os.stat(path).st_mode, path)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    try:
        _check_regular(os.fstat(fd).st_mode, path)
        digest = hashlib.sha256()
        while chunk := os.read(fd, _HASH_CHUNK):
            digest.update(chunk)
    finally:
        os.close(fd)
    return digest.hexdigest()


def _check_regular(mode: int, path: Path) -> None:
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, "is a directory", str(path))
    if not stat.S_ISREG(mode):
        raise NotRegularFileError(
            errno.EINVAL, f"not a regular file but {file_kind(mode)}", str(path)
        )


def file_mode(path: Path) -> int | None:
    """Permission bits of ``path`` (following symlinks), or None when it cannot be stat'ed."""
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        return None


def fsync_dir(path: Path) -> None:
    """Make a rename or unlink inside ``path`` durable."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP):
            raise
    finally:
        os.close(fd)


def write_durable(path: Path, data: bytes, mode: int | None = None) -> None:
    """Create ``path`` exclusively, write ``data`` and fsync it; ``mode`` sets permission bits.

    An OSError names ``path`` (``os.write`` and ``os.fsync`` errors name no file).
    """
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        if mode is not None:
            os.fchmod(fd, mode)
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    except OSError as exc:
        if exc.filename is None:
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        raise
    finally:
        os.close(fd)


def temp_name(target: Path, token: str) -> Path:
    """A hidden sibling of ``target`` to write before renaming over it (same filesystem)."""
    return target.with_name(f".{target.name[:80]}.{token}.remora-tmp")


def atomic_write(path: Path, data: bytes, mode: int | None = None) -> None:
    """Replace ``path`` with ``data`` so readers see the old or the new file, never a mix."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = temp_name(path, secrets.token_hex(4))
    try:
        write_durable(temp, data, mode)
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


class _Held:
    """Per-path process state of a FileLock: the thread lock, the open fd and the depth."""

    def __init__(self) -> None:
        self.thread_lock = threading.RLock()
        self.fd: int | None = None
        self.depth = 0


_HELD: dict[str, _Held] = {}
_HELD_GUARD = threading.Lock()


class FileLock:
    """An exclusive lock across threads and processes, re-entrant within one thread.

    ``flock`` on a lock file serialises processes; a per-path RLock serialises threads
    and lets the holder re-enter (accept calls recovery, which takes the same lock).
    Waiting longer than ``timeout`` raises WS_011.
    """

    def __init__(self, path: Path, timeout: float = 30.0) -> None:
        self.path = path
        self.timeout = timeout
        with _HELD_GUARD:
            self._held = _HELD.setdefault(str(path.absolute()), _Held())

    def __enter__(self) -> FileLock:
        deadline = time.monotonic() + self.timeout
        if not self._held.thread_lock.acquire(timeout=self.timeout):
            raise self._timeout_error()
        try:
            if self._held.depth == 0:
                self._held.fd = self._acquire_file(deadline)
            self._held.depth += 1
        except BaseException:
            self._held.thread_lock.release()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._held.depth -= 1
        if self._held.depth == 0 and self._held.fd is not None:
            fcntl.flock(self._held.fd, fcntl.LOCK_UN)
            os.close(self._held.fd)
            self._held.fd = None
        self._held.thread_lock.release()

    def _acquire_file(self, deadline: float) -> int:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise os_failure(exc, f"take the review lock {self.path}") from None
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return fd
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise self._timeout_error() from None
                time.sleep(0.02)

    def _timeout_error(self) -> WorkspaceError:
        return WorkspaceError(
            "WS_011",
            f"another Remora process has held {self.path} for over {self.timeout:.0f}s",
            "wait for the other accept/undo/review to finish, then try again",
        )
