"""Reading a file that might not be one: a FIFO blocks ``open`` forever, ``/dev/zero`` never
ends, and a huge file fills memory. Everything Remora reads from a user's tree (the overlay's
project reads, discovery's ``.gitignore`` files) goes through :func:`read_regular_file`.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

_READ_CHUNK = 1024 * 1024


class NotRegularFileError(OSError):
    """A path that is a FIFO, device or socket: reading it could block or never end."""


class FileTooLargeError(OSError):
    """A file over the read limit: reading it would load all of it into memory."""


def read_regular_file(path: Path, limit: int, name: str | None = None) -> bytes:
    """The bytes of the regular file at ``path`` (symlinks followed), loading at most ``limit``.

    The type is checked before opening (opening a FIFO blocks, opening a device can act) and
    again on the open descriptor, so a file swapped in between cannot slip through. Errors
    name ``name`` (default: the path).
    """
    shown = name if name is not None else str(path)
    _check_regular(os.stat(path).st_mode, shown)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        info = os.fstat(fd)
        _check_regular(info.st_mode, shown)
        chunks: list[bytes] = []
        remaining = limit + 1
        if info.st_size <= limit:
            while remaining > 0:
                chunk = os.read(fd, min(remaining, _READ_CHUNK))
                if not chunk:
                    break
                chunks.append(chunk)
                remaining -= len(chunk)
    finally:
        os.close(fd)
    if info.st_size > limit or remaining <= 0:
        raise FileTooLargeError(errno.EFBIG, f"larger than {limit} bytes", shown)
    return b"".join(chunks)


def _check_regular(mode: int, shown: str) -> None:
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, "is a directory", shown)
    if not stat.S_ISREG(mode):
        raise NotRegularFileError(errno.EINVAL, f"not a regular file but {file_kind(mode)}", shown)


def file_kind(mode: int) -> str:
    """What a non-regular file is, in words (for error messages)."""
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"
