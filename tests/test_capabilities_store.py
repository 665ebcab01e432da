"""The FileStore test double keeps the overlay contract the capabilities rely on."""

from __future__ import annotations

from pathlib import Path

import pytest

from remora.errors import WorkspaceError
from remora.workspace.base import FileStore
from tests.stores import MemoryOverlayStore, write_tree


@pytest.fixture
def store(tmp_path: Path) -> MemoryOverlayStore:
    write_tree(tmp_path / "proj", {"a.py": "x = 1\n", "pkg/b.py": "y = 2\n", "pkg/c.txt": "c"})
    return MemoryOverlayStore(tmp_path / "proj")


def test_implements_protocol(store: MemoryOverlayStore) -> None:
    assert isinstance(store, FileStore)


def test_writes_stay_in_overlay(store: MemoryOverlayStore) -> None:
    store.write("a.py", b"x = 2\n")
    store.write("new/d.py", b"d = 4\n")
    store.delete("pkg/c.txt")
    assert store.read("a.py") == b"x = 2\n"
    assert (store.root / "a.py").read_text() == "x = 1\n"
    assert not store.exists("pkg/c.txt")
    assert (store.root / "pkg/c.txt").exists()
    assert store.list_dir() == ["a.py", "new/", "pkg/"]
    assert store.list_dir("pkg") == ["b.py"]
    assert store.list_dir("new") == ["d.py"]
    assert store.changed_paths() == ["a.py", "new/d.py", "pkg/c.txt"]
    with pytest.raises(FileNotFoundError):
        store.read("pkg/c.txt")
    with pytest.raises(FileNotFoundError):
        store.list_dir("missing")


def test_materialize_shows_overlay_and_captures_changes(store: MemoryOverlayStore) -> None:
    store.write("a.py", b"x = 3\n")
    store.delete("pkg/c.txt")
    with store.materialize() as view:
        assert (view / "a.py").read_text() == "x = 3\n"
        assert not (view / "pkg/c.txt").exists()
        (view / "made.txt").write_text("by a tool")
        (view / "pkg/b.py").unlink()
    assert not view.exists()
    assert store.read("made.txt") == b"by a tool"
    assert not store.exists("pkg/b.py")
    assert (store.root / "pkg/b.py").exists()
    assert not (store.root / "made.txt").exists()


def test_rejects_escaping_paths(store: MemoryOverlayStore) -> None:
    for bad in ("../x", "/etc/passwd", "a/../../x"):
        with pytest.raises(WorkspaceError):
            store.read(bad)
        with pytest.raises(WorkspaceError):
            store.write(bad, b"")
