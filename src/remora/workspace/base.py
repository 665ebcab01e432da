"""The file-store interface tools work through, and the path rules every store enforces.

Capabilities never touch the project directly: they read and write a FileStore bound
to one job. The copy-on-write overlay implements it; so can a test double.

Version-control directories (``.git``, ``.hg``, ``.svn``, ``.bzr``, at any depth, and a
``.git`` file) are never changed by a workspace, whoever asks: git runs commands named in
``.git/config`` and hooks, so a write there is code execution on the host at the user's
next ``git status``. :func:`check_unprotected` refuses such paths with WS_019.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterable
from contextlib import AbstractContextManager
from pathlib import Path, PurePosixPath
from typing import Protocol, runtime_checkable

from remora.errors import WorkspaceError


def normalize_path(path: str) -> str:
    """A clean POSIX path relative to the workspace root, or WS_001.

    Rejects absolute paths, ``..`` segments that climb out of the root, NUL bytes and
    empty names; ``a/./b`` and ``a\\b`` are normalised to ``a/b``.
    """
    if not isinstance(path, str) or not path.strip() or "\x00" in path:
        raise WorkspaceError(
            "WS_001", f"invalid path {path!r}", "give a path relative to the project"
        )
    candidate = path.replace("\\", "/")
    if (
        candidate.startswith("/")
        or PurePosixPath(candidate).is_absolute()
        or (len(candidate) > 1 and candidate[1] == ":")
    ):
        raise WorkspaceError(
            "WS_001", f"absolute path {path!r} is outside the workspace", "use a relative path"
        )
    normal = posixpath.normpath(candidate)
    if normal == ".." or normal.startswith("../"):
        raise WorkspaceError(
            "WS_001", f"path {path!r} escapes the workspace root", "remove the '..' segments"
        )
    return "" if normal == "." else normal


def resolve_inside(root: Path, relative: str) -> Path:
    """``root / relative`` after checking that no symlink on the way leads outside ``root``.

    A symlink loop on the way is WS_001 too (``Path.resolve`` raises RuntimeError or OSError).
    """
    relative = normalize_path(relative) if relative else ""
    base = root.resolve()
    target = (base / relative) if relative else base
    try:
        resolved = target.resolve()
    except (RuntimeError, OSError) as exc:
        raise WorkspaceError(
            "WS_001",
            f"path {relative!r} cannot be resolved: {exc}",
            "a symbolic link on the way points back at itself; leave this path alone",
        ) from None
    if resolved != base and base not in resolved.parents:
        raise WorkspaceError(
            "WS_001",
            f"path {relative!r} resolves outside the workspace through a symbolic link",
            "symbolic links must stay inside the project",
        )
    return target


VCS_DIRS = frozenset({".git", ".hg", ".svn", ".bzr"})
"""Names no workspace may write or delete, nor anything below them."""


def protected_part(relative: str) -> str | None:
    """The version-control name on ``relative``'s way (case-folded, as git does), or None."""
    for part in relative.split("/"):
        if part.casefold() in VCS_DIRS:
            return part
    return None


def protected_in(root: Path, relative: str) -> str | None:
    """The version-control name on ``relative``'s way, or on the way of where it resolves
    to through symbolic links (a link to ``.git`` is no way round). ``root`` is resolved
    and ``relative`` normalized already (one ``realpath``, about 0.1 ms)."""
    found = protected_part(relative)
    if found is not None or not relative:
        return found
    base = str(root)
    try:
        real = os.path.realpath(os.path.join(base, relative))
    except (OSError, ValueError):
        return None
    if not real.startswith(base.rstrip(os.sep) + os.sep):
        return None
    return protected_part(real[len(base.rstrip(os.sep)) + 1 :].replace(os.sep, "/"))


def check_unprotected(root: Path, relative: str, *, doing: str = "write") -> None:
    """WS_019 when ``relative`` lies in a version-control directory (see :func:`protected_in`)."""
    found = protected_in(root, relative)
    if found is not None:
        raise WorkspaceError(
            "WS_019",
            f"cannot {doing} {relative!r}: {found} is version-control state, which no "
            "workspace may change (git runs commands named in its configuration and hooks)",
            f"change files outside {found}/ (edit it yourself if you mean to)",
        )


@runtime_checkable
class FileStore(Protocol):
    """A project as one job sees it: reads fall through, writes stay private."""

    @property
    def root(self) -> Path: ...

    @property
    def hidden(self) -> str | None:
        """A directory below the root that is never shown (Remora's state), or None."""
        ...

    def read(self, path: str) -> bytes:
        """Current content; FileNotFoundError when absent or deleted."""
        ...

    def write(self, path: str, data: bytes) -> None: ...

    def delete(self, path: str) -> None: ...

    def exists(self, path: str) -> bool: ...

    def list_dir(self, path: str = "") -> list[str]:
        """Sorted entry names of a directory in the merged view; sub-directories end in '/'."""
        ...

    def changed_paths(self) -> list[str]:
        """Paths this store has written or deleted relative to the project, sorted."""
        ...

    def materialize(
        self, writable: Iterable[str] = (), *, capture: bool = True
    ) -> AbstractContextManager[Path]:
        """A real directory that looks like the project after accepting this store's changes.

        For subprocess tools (ruff, pytest, calling a function). With ``capture``, files
        the subprocess writes there are captured back into the store when the context
        exits; without, they are discarded with the view. The project itself is never
        written. ``writable`` names paths (files or directories) the subprocess will
        write, which must be real copies rather than links.
        """
        ...
