"""A workspace as kernel overlay layers, and the harvest of what a sandboxed process wrote.

Project code runs on an overlayfs view whose lower layers are the project itself and a
*changes layer* holding the files this workspace wrote, and whose upper layer is a scratch
directory. Building the changes layer costs one file per changed path, never a walk of the
project. Files the workspace deleted cannot be expressed as a lower layer without creating
device nodes, so they are returned to the caller, which removes them inside the sandbox
before the project code starts (overlayfs records that as whiteouts in the upper layer).

After the process ends, :func:`harvest_upper` turns the upper layer back into workspace
changes, so review shows what project code wrote:

* a regular file becomes a write, unless its content equals what the workspace already
  has (overlayfs copies a file up on ``chmod`` or ``touch`` too);
* a whiteout (a 0/0 character device) becomes a delete of the file, or of every file
  below a deleted directory; an opaque directory (deleted, then re-created) deletes what
  the lower layers had below it and the upper layer no longer has;
* caches (``__pycache__``, ``.pytest_cache``, ``*.pyc``, ...) are discarded by policy:
  they are artefacts of running, never changes anyone reviews;
* symbolic links, FIFOs and sockets are not captured, as in materialized views;
* a file that reached the size limit is reported as skipped: the writer was stopped at
  the limit, so what is there is a truncated fragment;
* a path the workspace refuses (Remora's state directory, a file where a directory is,
  a write past the workspace quota), or a file or directory the process left unreadable,
  is reported as skipped, and the rest is still harvested;
* a version-control directory (``.git/``, ...) is never harvested: what the process
  wrote or deleted there is reported as one skip for the directory.

Only callers whose command's writes are the point harvest at all (``project_sandbox``'s
``harvest``); observing code (calling a function, running tests) discards the upper layer.

Writing the changes layer fails with a coded error (WS_015 no space, WS_017 otherwise).
"""

from __future__ import annotations

import os
import posixpath
import stat
from dataclasses import dataclass, field
from pathlib import Path

from remora.errors import WorkspaceError
from remora.workspace.base import FileStore, protected_part
from remora.workspace.durable import file_mode, os_failure
from remora.workspace.materialize import is_scratch_name

_OPAQUE_XATTRS = ("user.overlay.opaque", "trusted.overlay.opaque")
_PROTECTED = "version-control state, which no workspace may change"


@dataclass
class Harvest:
    """What a harvest changed in the workspace, and what it left out."""

    max_bytes: int
    written: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)

    @property
    def changed(self) -> list[str]:
        return sorted({*self.written, *self.deleted})


def write_changes_layer(store: FileStore, directory: Path) -> list[str]:
    """Write the store's changed files under ``directory``; return the paths it deleted.

    Files keep the project file's permission bits, so an executable stays executable.
    """
    deleted: list[str] = []
    for rel in store.changed_paths():
        try:
            data = store.read(rel)
        except FileNotFoundError:
            deleted.append(rel)
            continue
        except IsADirectoryError:
            continue
        target = directory / rel
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            mode = file_mode(store.root / rel)
            if mode is not None:
                os.chmod(target, mode & 0o777)
        except OSError as exc:
            raise os_failure(exc, f"write {rel} into the changes layer {directory}") from None
    return deleted


def harvest_upper(
    store: FileStore, upper: Path, *, removed: frozenset[str], max_bytes: int
) -> Harvest:
    """Record what the upper layer holds as changes in ``store``.

    ``removed`` are the paths the workspace had already deleted (and the launcher removed
    before the process started): their whiteouts are not new changes. Files of
    ``max_bytes`` or more hit the writer's size limit and are skipped.
    """
    harvest = Harvest(max_bytes=max_bytes)
    _harvest_dir(store, upper, "", removed, harvest)
    return harvest


def _harvest_dir(
    store: FileStore, directory: Path, rel_dir: str, removed: frozenset[str], harvest: Harvest
) -> None:
    try:
        with os.scandir(directory) as scan:
            entries = sorted(scan, key=lambda entry: entry.name)
    except OSError as exc:
        harvest.skipped[rel_dir or "."] = f"cannot be read: {exc.strerror or exc}"
        return
    names = {entry.name for entry in entries}
    if rel_dir and _is_opaque(directory):
        for name in _store_entries(store, rel_dir):
            if name.rstrip("/") not in names:
                _delete(store, posixpath.join(rel_dir, name.rstrip("/")), harvest)
    for entry in entries:
        rel = posixpath.join(rel_dir, entry.name) if rel_dir else entry.name
        if is_scratch_name(entry.name):
            continue
        if protected_part(entry.name) is not None:
            harvest.skipped[rel] = _PROTECTED
            continue
        info = entry.stat(follow_symlinks=False)
        if stat.S_ISCHR(info.st_mode) and info.st_rdev == 0:
            if rel not in removed:
                _delete(store, rel, harvest)
        elif stat.S_ISDIR(info.st_mode):
            _harvest_dir(store, Path(entry.path), rel, removed, harvest)
        elif stat.S_ISREG(info.st_mode) and info.st_size >= harvest.max_bytes:
            harvest.skipped[rel] = f"reached the {harvest.max_bytes}-byte file size limit"
        elif stat.S_ISREG(info.st_mode):
            _write(store, rel, Path(entry.path), harvest)


def _is_opaque(directory: Path) -> bool:
    for name in _OPAQUE_XATTRS:
        try:
            if os.getxattr(directory, name) == b"y":
                return True
        except OSError:
            continue
    return False


def _store_entries(store: FileStore, rel: str) -> list[str]:
    try:
        return store.list_dir(rel)
    except (FileNotFoundError, NotADirectoryError, WorkspaceError):
        return []


def _write(store: FileStore, rel: str, path: Path, harvest: Harvest) -> None:
    try:
        data = path.read_bytes()
    except OSError as exc:
        harvest.skipped[rel] = f"cannot be read: {exc.strerror or exc}"
        return
    try:
        if store.exists(rel) and store.read(rel) == data:
            return
        store.write(rel, data)
    except IsADirectoryError:
        harvest.skipped[rel] = "a directory of that name exists in the workspace"
    except WorkspaceError as exc:
        harvest.skipped[rel] = exc.message
    else:
        harvest.written.append(rel)


def _delete(store: FileStore, rel: str, harvest: Harvest) -> None:
    """Delete ``rel`` from the store: the file, or every file below the directory."""
    if protected_part(rel) is not None:
        harvest.skipped[rel] = _PROTECTED
        return
    entries = _store_entries(store, rel)
    if entries:
        for name in entries:
            _delete(store, posixpath.join(rel, name.rstrip("/")), harvest)
        return
    try:
        store.delete(rel)
    except (FileNotFoundError, IsADirectoryError):
        return
    except WorkspaceError as exc:
        harvest.skipped[rel] = exc.message
    else:
        harvest.deleted.append(rel)
