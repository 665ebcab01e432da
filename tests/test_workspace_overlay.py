"""The copy-on-write overlay: read-through, writes, tombstones, merged listings, ids, storage."""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from remora.errors import WorkspaceError
from remora.workspace import (
    FileStore,
    OverlayWorkspace,
    WorkspaceManager,
    check_workspace_id,
    make_workspace_id,
)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "pkg" / "sub").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_bytes(b"")
    (root / "pkg" / "mod.py").write_bytes(b"def f():\n    return 1\n")
    (root / "pkg" / "sub" / "deep.py").write_bytes(b"X = 1\n")
    (root / "README.md").write_bytes(b"# readme\n")
    return root


@pytest.fixture
def manager(project: Path) -> WorkspaceManager:
    return WorkspaceManager(project)


@pytest.fixture
def ws(manager: WorkspaceManager) -> Iterator[OverlayWorkspace]:
    workspace = manager.create("lint", "0123456789abcdef", "run-1", file_path="pkg/mod.py")
    yield workspace
    workspace.close()


def snapshot(root: Path) -> dict[str, str]:
    """Every file under root (except Remora's state) with its hash."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(".remora") or not path.is_file():
            continue
        out[rel] = sha(path.read_bytes())
    return out


def test_implements_the_file_store_protocol(ws: OverlayWorkspace, project: Path) -> None:
    assert isinstance(ws, FileStore)
    assert ws.root == project.resolve()


def test_reads_fall_through_to_the_project(ws: OverlayWorkspace) -> None:
    assert ws.read("pkg/mod.py") == b"def f():\n    return 1\n"
    assert ws.read("./pkg\\sub/deep.py") == b"X = 1\n"
    with pytest.raises(FileNotFoundError):
        ws.read("missing.py")
    with pytest.raises(IsADirectoryError):
        ws.read("pkg")


def test_writes_stay_in_the_overlay(ws: OverlayWorkspace, project: Path) -> None:
    before = snapshot(project)
    ws.write("pkg/mod.py", b"def f():\n    return 2\n")
    ws.write("pkg/new.py", b"NEW = True\n")
    assert ws.read("pkg/mod.py") == b"def f():\n    return 2\n"
    assert ws.read("pkg/new.py") == b"NEW = True\n"
    assert snapshot(project) == before
    assert not (project / "pkg" / "new.py").exists()


def test_delete_leaves_a_tombstone_and_recreate_works(ws: OverlayWorkspace, project: Path) -> None:
    ws.delete("README.md")
    assert not ws.exists("README.md")
    with pytest.raises(FileNotFoundError):
        ws.read("README.md")
    with pytest.raises(FileNotFoundError):
        ws.delete("README.md")
    assert (project / "README.md").read_bytes() == b"# readme\n"
    assert ws.changes()[0].kind == "delete"
    ws.write("README.md", b"# again\n")
    assert ws.read("README.md") == b"# again\n"
    (change,) = ws.changes()
    assert change.kind == "write"
    assert change.base_sha256 == sha(b"# readme\n")


def test_deleting_a_new_file_removes_the_change(ws: OverlayWorkspace) -> None:
    ws.write("tmp.txt", b"x")
    ws.delete("tmp.txt")
    assert ws.changed_paths() == []
    assert not ws.exists("tmp.txt")


def test_writing_back_the_base_content_drops_the_change(ws: OverlayWorkspace) -> None:
    ws.write("pkg/mod.py", b"changed\n")
    ws.write("pkg/mod.py", b"def f():\n    return 1\n")
    assert ws.changed_paths() == []


def test_binary_content_round_trips(ws: OverlayWorkspace) -> None:
    blob = bytes(range(256)) * 64 + b"\x00\xff"
    ws.write("data/blob.bin", blob)
    assert ws.read("data/blob.bin") == blob
    assert ws.changes()[0].new_sha256 == sha(blob)
    assert "Binary files" in ws.diff()["data/blob.bin"]


def test_deep_paths_and_merged_listing(ws: OverlayWorkspace) -> None:
    deep = "a/b/c/d/e/f/g/h/i/j/k.py"
    ws.write(deep, b"deep\n")
    ws.delete("pkg/mod.py")
    ws.write("pkg/sub/extra.py", b"")
    assert ws.read(deep) == b"deep\n"
    assert ws.list_dir("") == ["README.md", "a/", "pkg/"]
    assert ws.list_dir("a/b/c") == ["d/"]
    assert ws.list_dir("a/b/c/d/e/f/g/h/i/j") == ["k.py"]
    assert ws.list_dir("pkg") == ["__init__.py", "sub/"]
    assert ws.list_dir("pkg/sub") == ["deep.py", "extra.py"]
    assert ws.exists("a/b/c") and ws.exists(deep) and not ws.exists("pkg/mod.py")
    with pytest.raises(FileNotFoundError):
        ws.list_dir("nope")
    with pytest.raises(NotADirectoryError):
        ws.list_dir(deep)


def test_changes_and_changed_paths_agree(ws: OverlayWorkspace) -> None:
    ws.write("pkg/mod.py", b"x\n")
    ws.write("z.py", b"z\n")
    ws.delete("README.md")
    changes = ws.changes()
    assert [c.path for c in changes] == ws.changed_paths() == ["README.md", "pkg/mod.py", "z.py"]
    by_path = {c.path: c for c in changes}
    assert by_path["README.md"].new_sha256 is None
    assert by_path["z.py"].base_sha256 is None
    assert by_path["pkg/mod.py"].base_sha256 == sha(b"def f():\n    return 1\n")
    assert by_path["pkg/mod.py"].new_sha256 == sha(b"x\n")


def test_base_is_what_the_workspace_last_read(ws: OverlayWorkspace, project: Path) -> None:
    seen = ws.read("pkg/mod.py")
    (project / "pkg" / "mod.py").write_bytes(b"user edit\n")
    ws.write("pkg/mod.py", seen + b"# agent\n")
    (entry,) = ws.entries()
    assert entry.base_data == seen
    assert entry.base_sha256 == sha(seen)


def test_diff_is_unified_per_file(ws: OverlayWorkspace) -> None:
    ws.write("pkg/mod.py", b"def f():\n    return 2\n")
    ws.write("new.py", b"n = 1")
    diffs = ws.diff()
    assert diffs["pkg/mod.py"].splitlines() == [
        "--- a/pkg/mod.py",
        "+++ b/pkg/mod.py",
        "@@ -1,2 +1,2 @@",
        " def f():",
        "-    return 1",
        "+    return 2",
    ]
    assert diffs["new.py"].startswith("--- /dev/null\n+++ b/new.py\n")
    assert "\\ No newline at end of file" in diffs["new.py"]


@pytest.mark.parametrize(
    ("path", "why"),
    [("pkg", "directory"), ("pkg/mod.py/inner.py", "is a file"), (".remora/x", "state")],
)
def test_path_clashes_are_refused(ws: OverlayWorkspace, path: str, why: str) -> None:
    with pytest.raises(WorkspaceError) as info:
        ws.write(path, b"x")
    assert info.value.code == "WS_006"
    assert why in info.value.message
    assert not ws.exists(".remora/workspaces")


def test_escaping_paths_are_refused(ws: OverlayWorkspace, project: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_bytes(b"s")
    (project / "link").symlink_to(outside)
    for bad in ("../x", "/etc/passwd", "link/secret"):
        with pytest.raises(WorkspaceError) as info:
            ws.read(bad)
        assert info.value.code == "WS_001"


def test_a_closed_workspace_says_so(manager: WorkspaceManager) -> None:
    workspace = manager.create("lint", "n")
    workspace.close()
    with pytest.raises(WorkspaceError) as info:
        workspace.write("a.py", b"")
    assert info.value.code == "WS_013"


def test_changes_persist_across_reopen(manager: WorkspaceManager) -> None:
    with manager.create("docstring", "n1", "r") as first:
        first.write("a.py", b"a\n")
        workspace_id = first.workspace_id
    with manager.open(workspace_id) as again:
        assert again.read("a.py") == b"a\n"
        info = again.info()
    assert (info.operation, info.node_id, info.run_id, info.changes) == ("docstring", "n1", "r", 1)


def test_workspace_ids_are_readable_stable_and_checked(manager: WorkspaceManager) -> None:
    assert make_workspace_id("lint", "abc") == "lint-abc"
    with_run = make_workspace_id("lint", "abc", "run-1")
    assert with_run.startswith("lint-abc-") and with_run == make_workspace_id(
        "lint", "abc", "run-1"
    )
    assert with_run != make_workspace_id("lint", "abc", "run-2")
    for bad in ("../x", "a/b", "", "-x"):
        with pytest.raises(WorkspaceError) as info:
            check_workspace_id(bad)
        assert info.value.code == "WS_002"
    manager.create("lint", "abc").close()
    with pytest.raises(WorkspaceError) as info:
        manager.create("lint", "abc")
    assert info.value.code == "WS_012"
    with pytest.raises(WorkspaceError) as info:
        manager.open("lint-nothing")
    assert info.value.code == "WS_002"


def test_manager_lists_and_removes(manager: WorkspaceManager) -> None:
    assert manager.list() == []
    for node in ("a", "b"):
        manager.create("lint", node).close()
    assert [info.workspace_id for info in manager.list()] == ["lint-a", "lint-b"]
    manager.remove("lint-a")
    assert manager.state("lint-a") == "discarded"
    assert manager.state("lint-b") == "pending"
    assert not list(manager.workspaces_dir.glob("lint-a*"))


def test_corrupt_storage_is_a_clear_error(manager: WorkspaceManager) -> None:
    manager.workspaces_dir.mkdir(parents=True)
    (manager.workspaces_dir / "lint-bad.sqlite").write_bytes(b"not a database at all" * 100)
    with pytest.raises(WorkspaceError) as info:
        manager.open("lint-bad")
    assert info.value.code == "WS_007"


def test_manager_creates_nothing_until_needed(project: Path) -> None:
    WorkspaceManager(project)
    assert not (project / ".remora").exists()


def test_threads_share_one_workspace_and_use_many(manager: WorkspaceManager) -> None:
    shared = manager.create("lint", "shared")
    others = [manager.create("lint", f"w{i}") for i in range(4)]
    errors: list[BaseException] = []

    def work(index: int) -> None:
        try:
            for j in range(25):
                shared.write(f"t{index}/f{j}.py", f"{index}-{j}".encode())
                others[index].write("same.py", f"{index}-{j}".encode())
                assert shared.read(f"t{index}/f{j}.py") == f"{index}-{j}".encode()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(shared.changed_paths()) == 100
    assert [w.read("same.py") for w in others] == [f"{i}-24".encode() for i in range(4)]
    for workspace in [shared, *others]:
        workspace.close()


def _write_from_process(root: str, workspace_id: str, index: int) -> None:
    with WorkspaceManager(Path(root)).open(workspace_id) as workspace:
        for j in range(20):
            workspace.write(f"p{index}/f{j}.py", b"x" * (index + 1))


def test_processes_write_one_workspace_concurrently(manager: WorkspaceManager) -> None:
    manager.create("lint", "multi").close()
    context = multiprocessing.get_context("spawn")
    procs = [
        context.Process(
            target=_write_from_process, args=(str(manager.project_root), "lint-multi", i)
        )
        for i in range(3)
    ]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(60)
    assert [proc.exitcode for proc in procs] == [0, 0, 0]
    with manager.open("lint-multi") as workspace:
        assert len(workspace.changed_paths()) == 60
        assert workspace.read("p2/f7.py") == b"xxx"


_names = st.sampled_from(["a.py", "b.bin", "d/c.py", "d/e/f.py", "README.md"])
_ops = st.lists(
    st.tuples(st.sampled_from(["write", "delete"]), _names, st.binary(max_size=12)), max_size=25
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=_ops)
def test_overlay_behaves_like_a_dict_of_files(
    tmp_path: Path, ops: list[tuple[str, str, bytes]]
) -> None:
    """Any sequence of writes and deletes reads back like a plain model, project untouched."""
    root = tmp_path / f"p{os.urandom(4).hex()}"
    (root / "d").mkdir(parents=True)
    base = {"a.py": b"a", "d/c.py": b"c", "README.md": b"r"}
    for rel, data in base.items():
        (root / rel).write_bytes(data)
    model = dict(base)
    with WorkspaceManager(root).create("lint", "prop") as workspace:
        for kind, rel, data in ops:
            if kind == "write":
                workspace.write(rel, data)
                model[rel] = data
            elif rel in model:
                workspace.delete(rel)
                del model[rel]
            else:
                with pytest.raises(FileNotFoundError):
                    workspace.delete(rel)
        for rel in ["a.py", "b.bin", "d/c.py", "d/e/f.py", "README.md"]:
            assert workspace.exists(rel) == (rel in model)
            if rel in model:
                assert workspace.read(rel) == model[rel]
        expected = sorted(rel for rel in set(model) | set(base) if model.get(rel) != base.get(rel))
        assert workspace.changed_paths() == expected
        assert [c.path for c in workspace.changes()] == expected
    assert {rel: (root / rel).read_bytes() for rel in base} == base
