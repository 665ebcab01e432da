"""Materialized views: a real directory where the project looks as if a workspace were accepted.

Subprocess tools need real paths: ruff, and project code where no kernel overlay is to be
had (the Landlock and unisolated levels of ``remora.tools.isolation``, which confine the
view's links into the project read-only; bubblewrap mounts an overlay instead, see
:mod:`remora.workspace.layers`). Copying the project
would cost time proportional to its size, so a view is built only along the changed
paths: every directory on the way to a changed path is a real directory, changed files
are real files with the workspace's content, and every other entry is a symlink to the
project. Cost grows with the number of changed paths and the size of the directories
on their way, never with the project.

Writing through a symlink would write the project, so views are designed against it:

* files the workspace changed are real files, never links;
* callers name the paths a tool will write (``ruff --fix`` on a file, a ``tests/``
  directory) as ``writable``: those become real copies inside real directories;
* cache directories (``__pycache__``, ``.pytest_cache``, ...) are left out, so tools
  create fresh ones inside the view instead of following a link into the project;
* subprocesses run with bytecode writing and tool caches disabled (the capabilities'
  scrubbed environment and their ``--no-cache`` / ``-p no:cacheprovider`` flags);
* tools that write atomically (temp file + rename) replace the link itself, which is safe.

Failing to build or capture a view (no space, an unwritable state directory, a file the
tool left unreadable) is a coded error (WS_015 / WS_017), never a raw OSError.

When the view's context exits normally (and the caller asked for capture), real files
that are new or changed are written back to the workspace, and files or links the tool
removed become deletes; symlinks a tool creates are not captured, nor anything in a
version-control directory (``.git/``, ...), which no workspace may change. Views live
under ``<state_dir>/views/<pid>-<id>-<token>`` and are removed on exit; views whose process
is gone (a crash, a kill -9) are swept by :func:`sweep_stale_views` on the next run,
unless ``workspace.keep_views`` is set.
"""

from __future__ import annotations

import os
import posixpath
import secrets
import shutil
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from remora.workspace.base import normalize_path, protected_part
from remora.workspace.durable import file_mode, os_failure, sha256_bytes
from remora.workspace.models import Change

CACHE_NAMES = frozenset(
    {"__pycache__", ".pytest_cache", ".ruff_cache", ".mypy_cache", ".hypothesis"}
)
_IGNORED_SUFFIXES = (".pyc", ".pyo")


class ViewSource(Protocol):
    """What a view needs from a workspace: its changes, merged reads, and writes for capture."""

    @property
    def root(self) -> Path: ...

    @property
    def workspace_id(self) -> str: ...

    def read(self, path: str) -> bytes: ...

    def write(self, path: str, data: bytes) -> None: ...

    def delete(self, path: str) -> None: ...

    def exists(self, path: str) -> bool: ...

    def list_dir(self, path: str = "") -> list[str]: ...

    def changes(self) -> list[Change]: ...


def entry_is_dir(entry: os.DirEntry[str]) -> bool:
    """Whether a directory entry is (or links to) a directory; a symlink loop or an entry
    that cannot be examined is not one (``DirEntry.is_dir`` raises for those)."""
    try:
        return entry.is_dir()
    except OSError:
        return False


def is_scratch_name(name: str) -> bool:
    """Caches and bytecode: what running tools leaves behind, never a change to review."""
    return name in CACHE_NAMES or name.endswith(_IGNORED_SUFFIXES)


def _ancestors(rel: str) -> Iterator[str]:
    parent = posixpath.dirname(rel)
    while parent:
        yield parent
        parent = posixpath.dirname(parent)
    yield ""


@dataclass
class _ViewState:
    """What the view was built with, so capture can tell the tool's writes apart."""

    path: Path
    files: dict[str, str] = field(default_factory=dict)
    links: dict[str, bool] = field(default_factory=dict)


@dataclass
class _Plan:
    files: dict[str, bytes | None] = field(default_factory=dict)
    dirs: set[str] = field(default_factory=lambda: {""})
    children: dict[str, set[str]] = field(default_factory=dict)

    def add_file(self, rel: str, data: bytes | None) -> None:
        self.files[rel] = data
        self._link_up(rel)

    def add_dir(self, rel: str) -> None:
        if rel and rel not in self.dirs:
            self.dirs.add(rel)
            self._link_up(rel)

    def _link_up(self, rel: str) -> None:
        child = rel
        for parent in _ancestors(rel):
            self.children.setdefault(parent, set()).add(posixpath.basename(child))
            if parent in self.dirs:
                return
            self.dirs.add(parent)
            child = parent


def _walk_files(source: ViewSource, rel: str) -> Iterator[str]:
    for name in source.list_dir(rel):
        bare = name.rstrip("/")
        if is_scratch_name(bare):
            continue
        child = posixpath.join(rel, bare)
        if name.endswith("/"):
            yield from _walk_files(source, child)
        else:
            yield child


def _plan(source: ViewSource, writable: Iterable[str]) -> _Plan:
    plan = _Plan()
    for change in source.changes():
        plan.add_file(change.path, source.read(change.path) if change.kind == "write" else None)
    for raw in writable:
        rel = normalize_path(raw)
        if not rel:
            continue
        if rel in plan.files:
            continue
        if not source.exists(rel):
            plan.add_dir(posixpath.dirname(rel))
            continue
        try:
            plan.add_file(rel, source.read(rel))
        except IsADirectoryError:
            plan.add_dir(rel)
            for child in _walk_files(source, rel):
                if child not in plan.files:
                    plan.add_file(child, source.read(child))
    return plan


def _build(source: ViewSource, plan: _Plan, state: _ViewState, hidden: str | None) -> None:
    root = str(source.root)
    view = str(state.path)
    for rel in sorted(plan.dirs, key=lambda item: item.count("/") if item else -1):
        target = os.path.join(view, rel) if rel else view
        os.makedirs(target, exist_ok=True)
        names: set[str] = set(plan.children.get(rel, ()))
        try:
            with os.scandir(os.path.join(root, rel) if rel else root) as entries:
                listing = [(entry.name, entry.path, entry_is_dir(entry)) for entry in entries]
        except (FileNotFoundError, NotADirectoryError):
            listing = []
        for name, project_path, is_dir in listing:
            child = f"{rel}/{name}" if rel else name
            if name in names or child == hidden or is_scratch_name(name):
                continue
            os.symlink(project_path, os.path.join(target, name), target_is_directory=is_dir)
            state.links[child] = is_dir
        for name in names:
            child = f"{rel}/{name}" if rel else name
            data = plan.files.get(child)
            if data is None or child in plan.dirs:
                continue
            path = os.path.join(target, name)
            with open(path, "wb") as handle:
                handle.write(data)
            mode = file_mode(Path(root, child))
            if mode is not None and mode & 0o7111:
                os.chmod(path, mode)
            state.files[child] = sha256_bytes(data)


def _capture(source: ViewSource, state: _ViewState, hidden: str | None) -> None:
    seen_files: set[str] = set()
    seen_links: set[str] = set()
    stack = [""]
    while stack:
        rel_dir = stack.pop()
        with os.scandir(state.path / rel_dir if rel_dir else state.path) as entries:
            for entry in entries:
                if is_scratch_name(entry.name):
                    continue
                rel = posixpath.join(rel_dir, entry.name) if rel_dir else entry.name
                if rel == hidden or protected_part(rel) is not None:
                    continue
                if entry.is_symlink():
                    if rel in state.links:
                        seen_links.add(rel)
                    continue
                if entry.is_dir(follow_symlinks=False):
                    stack.append(rel)
                elif entry.is_file(follow_symlinks=False):
                    seen_files.add(rel)
                    _capture_file(source, state, rel, Path(entry.path))
    for rel in state.files:
        if rel not in seen_files and protected_part(rel) is None and source.exists(rel):
            source.delete(rel)
    for rel, is_dir in state.links.items():
        if rel in seen_links or rel in seen_files or protected_part(rel) is not None:
            continue
        if not is_dir:
            if source.exists(rel):
                source.delete(rel)
            continue
        for child in list(_walk_files(source, rel)):
            if child not in seen_files and protected_part(child) is None:
                source.delete(child)


def _capture_file(source: ViewSource, state: _ViewState, rel: str, path: Path) -> None:
    data = path.read_bytes()
    digest = sha256_bytes(data)
    if state.files.get(rel) == digest:
        return
    if rel not in state.files and source.exists(rel):
        try:
            if sha256_bytes(source.read(rel)) == digest:
                return
        except IsADirectoryError:
            pass
    source.write(rel, data)


def process_alive(pid: int) -> bool:
    """Whether a process with id ``pid`` is running on this machine (another user's
    counts as alive: not ours to judge)."""
    if not 0 < pid <= 2**31 - 1:
        return False  # no process has that id (a forged name; os.kill would overflow)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale_views(views_dir: Path) -> int:
    """Remove views whose owning process is gone (a crash, a kill -9); returns how many.

    Housekeeping only: a views directory that cannot be listed is left for later rather
    than failing the command that swept it.
    """
    try:
        names = os.listdir(views_dir)
    except OSError:
        return 0
    removed = 0
    for name in names:
        owner, _, _rest = name.partition("-")
        if not (owner.isascii() and owner.isdigit()):
            continue  # not a view's name
        if int(owner) == os.getpid() or process_alive(int(owner)):
            continue
        shutil.rmtree(views_dir / name, ignore_errors=True)
        removed += 1
    return removed


@contextmanager
def materialize_view(
    source: ViewSource,
    views_dir: Path,
    *,
    writable: Iterable[str] = (),
    keep: bool = False,
    hidden: str | None = None,
    capture: bool = True,
) -> Iterator[Path]:
    """Build a view of ``source`` under ``views_dir``; capture the tool's writes on normal
    exit when ``capture`` (without, they go with the view: an observation's writes).

    ``writable`` names files or directories a tool will write; they become real copies
    (a directory recursively; the project root itself is ignored, as that would be a copy).
    ``hidden`` is a project-relative path left out of the view (Remora's state directory).
    ``keep`` leaves the view on disk for inspection (and sweeps no stale views).
    """
    workspace_id = source.workspace_id
    try:
        views_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise os_failure(exc, f"create a view of workspace {workspace_id}") from None
    if not keep:
        sweep_stale_views(views_dir)
    plan = _plan(source, writable)
    state = _ViewState(path=views_dir / f"{os.getpid()}-{workspace_id}-{secrets.token_hex(4)}")
    try:
        try:
            _build(source, plan, state, hidden)
        except OSError as exc:
            raise os_failure(exc, f"build a view of workspace {workspace_id}") from None
        yield state.path
        if not capture:
            return
        try:
            _capture(source, state, hidden)
        except OSError as exc:
            raise os_failure(
                exc, f"capture what a tool wrote in workspace {workspace_id}"
            ) from None
    finally:
        if not keep:
            shutil.rmtree(state.path, ignore_errors=True)
