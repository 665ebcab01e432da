"""Stores for tests: the real overlay workspace, and a FileStore test double.

Capability tests use :func:`capability_context`, a real :class:`OverlayWorkspace`, so they
see what users get. The double below exists for tests about the store protocol itself:

It implements the ``remora.workspace.base.FileStore`` protocol the same way the SQLite
overlay does from the outside (reads fall through, writes and deletes stay private), with a
naive ``materialize``: copy the project plus the overlay into a temporary directory and,
on exit, capture every file the subprocess added, changed or removed back into the overlay.
"""

from __future__ import annotations

import itertools
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from remora.config import ToolsConfig
from remora.errors import WorkspaceError
from remora.operations import installed_operations
from remora.tools.capabilities import CapabilityContext
from remora.workspace.base import normalize_path, resolve_inside
from remora.workspace.manager import WorkspaceManager
from remora.workspace.overlay import OverlayWorkspace

_WORKSPACE_NUMBERS = itertools.count(1)


class MemoryOverlayStore:
    """Project files on disk, this job's writes (``None`` = deleted) in a dict."""

    def __init__(self, root: Path) -> None:
        self._root = root.resolve()
        self._overlay: dict[str, bytes | None] = {}

    @property
    def root(self) -> Path:
        return self._root

    @property
    def hidden(self) -> str | None:
        return None

    def _disk(self, path: str) -> Path:
        return resolve_inside(self._root, path)

    def read(self, path: str) -> bytes:
        relative = normalize_path(path)
        if relative in self._overlay:
            data = self._overlay[relative]
            if data is None:
                raise FileNotFoundError(relative)
            return data
        if any(self._overlay.get(parent, b"") is None for parent in _parents(relative)):
            raise FileNotFoundError(relative)
        target = self._disk(relative)
        if target.is_dir():
            raise IsADirectoryError(relative)
        return target.read_bytes()

    def write(self, path: str, data: bytes) -> None:
        relative = normalize_path(path)
        self._disk(relative)
        self._overlay[relative] = bytes(data)

    def delete(self, path: str) -> None:
        relative = normalize_path(path)
        if not self.exists(relative):
            raise FileNotFoundError(relative)
        self._overlay[relative] = None

    def exists(self, path: str) -> bool:
        """Whether a file is there; symlinks out of the root count as absent, as in the overlay."""
        relative = normalize_path(path)
        try:
            self.read(relative)
        except (FileNotFoundError, IsADirectoryError, WorkspaceError):
            return False
        return True

    def list_dir(self, path: str = "") -> list[str]:
        relative = normalize_path(path) if path else ""
        entries: set[str] = set()
        disk = self._disk(relative)
        if disk.is_dir():
            for child in disk.iterdir():
                name = child.name + ("/" if child.is_dir() else "")
                if child.is_dir() or self.exists(_join(relative, child.name)):
                    entries.add(name)
        elif disk.exists():
            raise NotADirectoryError(relative)
        prefix = relative + "/" if relative else ""
        for key, data in self._overlay.items():
            if data is None or not key.startswith(prefix):
                continue
            head, sep, _ = key[len(prefix) :].partition("/")
            entries.add(head + "/" if sep else head)
        if not entries and not disk.is_dir() and relative:
            raise FileNotFoundError(relative)
        return sorted(entries)

    def changed_paths(self) -> list[str]:
        return sorted(self._overlay)

    @contextmanager
    def materialize(self, writable: Iterable[str] = ()) -> Iterator[Path]:
        """A full copy, so every path is writable and ``writable`` needs no handling."""
        del writable
        with tempfile.TemporaryDirectory(prefix="remora-view-") as tmp:
            view = Path(tmp) / "view"
            shutil.copytree(self._root, view, symlinks=True)
            for key, data in self._overlay.items():
                target = view / key
                if data is None:
                    target.unlink(missing_ok=True)
                else:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(data)
            before = _snapshot(view)
            yield view
            after = _snapshot(view)
            for key, data in after.items():
                if before.get(key) != data:
                    self._overlay[key] = data
            for key in before.keys() - after.keys():
                self._overlay[key] = None


def _snapshot(view: Path) -> dict[str, bytes]:
    return {
        path.relative_to(view).as_posix(): path.read_bytes()
        for path in view.rglob("*")
        if path.is_file() and not path.is_symlink()
    }


def _parents(relative: str) -> list[str]:
    parts = relative.split("/")
    return ["/".join(parts[:index]) for index in range(1, len(parts))]


def _join(directory: str, name: str) -> str:
    return f"{directory}/{name}" if directory else name


def write_tree(root: Path, files: dict[str, str | bytes]) -> Path:
    """Create ``files`` (relative path -> content) under ``root`` and return ``root``."""
    for relative, content in files.items():
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8")
    return root


def overlay_store(root: Path) -> OverlayWorkspace:
    """A fresh real SQLite overlay workspace over ``root`` (state in ``root/.remora``)."""
    manager = WorkspaceManager(root)
    return manager.create("test", f"node{next(_WORKSPACE_NUMBERS)}")


def capability_context(
    root: Path, system: dict[str, Any] | None = None, **limits: Any
) -> CapabilityContext:
    """A context over a fresh real overlay workspace of ``root``, as users get it, offering
    every installed capability; ``limits`` override ToolsConfig fields."""
    return CapabilityContext(
        store=overlay_store(root),
        config=ToolsConfig(**limits),
        system=dict(system or {}),
        capabilities=installed_operations().capabilities,
    )
