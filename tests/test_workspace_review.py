"""Accept, reject, retry, undo and recovery at the workspace layer."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
from pathlib import Path

import pytest

from remora.errors import WorkspaceError
from remora.workspace import WorkspaceManager, WorkspaceReview
from remora.workspace.journal import FileOp, apply_journaled

MOD = b"def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "mod.py").write_bytes(MOD)
    (root / "pkg" / "old.py").write_bytes(b"OLD = 1\n")
    (root / "tool.sh").write_bytes(b"#!/bin/sh\n")
    (root / "tool.sh").chmod(0o755)
    return root


@pytest.fixture
def manager(project: Path) -> WorkspaceManager:
    return WorkspaceManager(project)


@pytest.fixture
def review(manager: WorkspaceManager) -> WorkspaceReview:
    return WorkspaceReview(manager)


def make(manager: WorkspaceManager, node: str, files: dict[str, bytes | None]) -> str:
    with manager.create("lint", node) as ws:
        for path, data in files.items():
            if data is None:
                ws.delete(path)
            else:
                ws.write(path, data)
        return ws.workspace_id


def test_accept_with_unchanged_base(
    manager: WorkspaceManager, review: WorkspaceReview, project: Path
) -> None:
    new_mod = MOD.replace(b"a + b", b"b + a")
    workspace_id = make(
        manager,
        "n",
        {"pkg/mod.py": new_mod, "pkg/old.py": None, "new/deep/file.py": b"N\n", "tool.sh": b"#!"},
    )
    report = review.accept(workspace_id)
    actions = {item.path: item.action for item in report.files}
    assert actions == {
        "new/deep/file.py": "created",
        "pkg/mod.py": "written",
        "pkg/old.py": "deleted",
        "tool.sh": "written",
    }
    assert (project / "pkg" / "mod.py").read_bytes() == new_mod
    assert not (project / "pkg" / "old.py").exists()
    assert (project / "new" / "deep" / "file.py").read_bytes() == b"N\n"
    assert os.stat(project / "tool.sh").st_mode & 0o777 == 0o755
    assert manager.state(workspace_id) == "accepted"
    assert not list(project.rglob("*.remora-tmp"))
    assert not list(manager.journal_dir.iterdir())


def test_accept_merges_a_cleanly_mergeable_user_edit(
    manager: WorkspaceManager, review: WorkspaceReview, project: Path
) -> None:
    workspace_id = make(manager, "n", {"pkg/mod.py": MOD.replace(b"a - b", b"a - b  # ws")})
    (project / "pkg" / "mod.py").write_bytes(MOD.replace(b"a + b", b"a + b  # user"))
    report = review.accept(workspace_id)
    assert report.merged == ["pkg/mod.py"]
    assert (project / "pkg" / "mod.py").read_bytes() == MOD.replace(
        b"a + b", b"a + b  # user"
    ).replace(b"a - b", b"a - b  # ws")


def test_accept_with_a_conflict_changes_nothing(
    manager: WorkspaceManager, review: WorkspaceReview, project: Path
) -> None:
    workspace_id = make(
        manager,
        "n",
        {"pkg/mod.py": MOD.replace(b"a + b", b"a + b  # ws"), "other.py": b"new\n"},
    )
    user = MOD.replace(b"a + b", b"a + b  # user")
    (project / "pkg" / "mod.py").write_bytes(user)
    with pytest.raises(WorkspaceError) as info:
        review.accept(workspace_id)
    assert info.value.code == "WS_004"
    assert "pkg/mod.py line 2" in info.value.message
    assert "nothing was written" in info.value.message
    assert (project / "pkg" / "mod.py").read_bytes() == user
    assert not (project / "other.py").exists()
    assert manager.state(workspace_id) == "pending"


@pytest.mark.parametrize(
    ("change", "meanwhile", "phrase"),
    [
        (None, b"user\n", "changed in the project but deleted here"),
        (b"ws\n", None, "deleted from the project but changed here"),
    ],
)
def test_delete_versus_edit_conflicts(
    manager: WorkspaceManager,
    review: WorkspaceReview,
    project: Path,
    change: bytes | None,
    meanwhile: bytes | None,
    phrase: str,
) -> None:
    workspace_id = make(manager, "n", {"pkg/old.py": change})
    if meanwhile is None:
        (project / "pkg" / "old.py").unlink()
    else:
        (project / "pkg" / "old.py").write_bytes(meanwhile)
    with pytest.raises(WorkspaceError, match=phrase):
        review.accept(workspace_id)


def test_file_created_on_both_sides_conflicts(
    manager: WorkspaceManager, review: WorkspaceReview, project: Path
) -> None:
    workspace_id = make(manager, "n", {"fresh.py": b"ours\n"})
    (project / "fresh.py").write_bytes(b"theirs\n")
    with pytest.raises(WorkspaceError, match="created both"):
        review.accept(workspace_id)


def test_test_modules_both_sides_created_for_one_purpose_merge_as_a_union(
    manager: WorkspaceManager, review: WorkspaceReview, project: Path
) -> None:
    """Two jobs of one run each wrote a module's tests into the same new test module: the
    second accept adds its import and test to the first's; modules with different
    docstrings (two purposes) still conflict."""
    header = b'"""Tests for pkg.mod."""\n\nfrom pkg.mod import '
    add = make(
        manager,
        "add",
        {"tests/test_mod.py": header + b"add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"},
    )
    sub = make(
        manager,
        "sub",
        {"tests/test_mod.py": header + b"sub\n\n\ndef test_sub():\n    assert sub(3, 2) == 1\n"},
    )
    other = make(
        manager, "other", {"tests/test_mod.py": b'"""Mine."""\n\n\ndef test_mine():\n    pass\n'}
    )
    review.accept(add)
    report = review.accept(sub)
    assert [(o.path, o.action) for o in report.files] == [("tests/test_mod.py", "merged")]
    merged = (project / "tests/test_mod.py").read_bytes()
    assert merged == header + (
        b"add, sub\n\n\ndef test_add():\n    assert add(1, 2) == 3\n\n\n"
        b"def test_sub():\n    assert sub(3, 2) == 1\n"
    )
    with pytest.raises(WorkspaceError, match="created both"):
        review.accept(other)
    review.undo(sub)
    assert (project / "tests/test_mod.py").read_bytes().endswith(b"assert add(1, 2) == 3\n")


def test_concurrent_workspaces_on_one_file_accept_one_after_another(
    manager: WorkspaceManager, review: WorkspaceReview, project: Path
) -> None:
    lint = make(manager, "lint-node", {"pkg/mod.py": MOD.replace(b"a + b", b"a+b")})
    with manager.create("docstring", "doc-node") as ws:
        ws.write(
            "pkg/mod.py",
            MOD.replace(b"def sub(a, b):\n", b'def sub(a, b):\n    """Subtract."""\n'),
        )
        docstring = ws.workspace_id
    review.accept(lint)
    report = review.accept(docstring)
    assert report.merged == ["pkg/mod.py"]
    assert (project / "pkg" / "mod.py").read_bytes() == (
        b'def add(a, b):\n    return a+b\n\n\ndef sub(a, b):\n    """Subtract."""\n'
        b"    return a - b\n"
    )


def test_undo_restores_and_returns_to_review(
    manager: WorkspaceManager, review: WorkspaceReview, project: Path
) -> None:
    workspace_id = make(
        manager, "n", {"pkg/mod.py": b"changed\n", "pkg/old.py": None, "added.py": b"a\n"}
    )
    review.accept(workspace_id)
    report = review.undo(workspace_id)
    assert {item.path for item in report.restored} == {"pkg/mod.py", "pkg/old.py", "added.py"}
    assert (project / "pkg" / "mod.py").read_bytes() == MOD
    assert (project / "pkg" / "old.py").read_bytes() == b"OLD = 1\n"
    assert not (project / "added.py").exists()
    assert manager.state(workspace_id) == "pending"
    review.accept(workspace_id)
    assert (project / "pkg" / "mod.py").read_bytes() == b"changed\n"


def test_undo_after_a_merge_restores_the_users_version(
    manager: WorkspaceManager, review: WorkspaceReview, project: Path
) -> None:
    workspace_id = make(manager, "n", {"pkg/mod.py": MOD.replace(b"a - b", b"a-b")})
    user = MOD.replace(b"a + b", b"a+b")
    (project / "pkg" / "mod.py").write_bytes(user)
    review.accept(workspace_id)
    review.undo(workspace_id)
    assert (project / "pkg" / "mod.py").read_bytes() == user


def test_undo_refuses_when_the_file_changed_since(
    manager: WorkspaceManager, review: WorkspaceReview, project: Path
) -> None:
    workspace_id = make(manager, "n", {"pkg/mod.py": b"accepted\n", "added.py": b"a\n"})
    review.accept(workspace_id)
    (project / "pkg" / "mod.py").write_bytes(b"edited after accept\n")
    with pytest.raises(WorkspaceError) as info:
        review.undo(workspace_id)
    assert info.value.code == "WS_005"
    assert (project / "pkg" / "mod.py").read_bytes() == b"edited after accept\n"
    assert (project / "added.py").exists()
    assert manager.state(workspace_id) == "accepted"


def test_state_rules(manager: WorkspaceManager, review: WorkspaceReview) -> None:
    workspace_id = make(manager, "n", {"x.py": b"x\n"})
    with pytest.raises(WorkspaceError) as info:
        review.undo(workspace_id)
    assert info.value.code == "WS_003"
    review.accept(workspace_id)
    for action in (review.accept, review.reject):
        with pytest.raises(WorkspaceError) as info:
            action(workspace_id)
        assert info.value.code == "WS_003"


def test_reject_discards_and_retry_says_what_to_rerun(
    manager: WorkspaceManager, review: WorkspaceReview, project: Path
) -> None:
    first = make(manager, "a", {"pkg/mod.py": b"x\n"})
    review.reject(first)
    assert manager.state(first) == "discarded"
    assert (project / "pkg" / "mod.py").read_bytes() == MOD
    with pytest.raises(WorkspaceError) as info:
        review.reject(first)
    assert info.value.code == "WS_002"
    with manager.create("docstring", "node9", "run-7", file_path="pkg/mod.py") as ws:
        ws.write("pkg/mod.py", b"y\n")
        second = ws.workspace_id
    request = review.retry(second)
    assert (request.operation, request.node_id, request.run_id, request.file_path) == (
        "docstring",
        "node9",
        "run-7",
        "pkg/mod.py",
    )
    assert manager.state(second) == "discarded"


def test_accept_of_an_empty_or_already_applied_workspace(
    manager: WorkspaceManager, review: WorkspaceReview, project: Path
) -> None:
    workspace_id = make(manager, "n", {"pkg/mod.py": b"same\n"})
    (project / "pkg" / "mod.py").write_bytes(b"same\n")
    report = review.accept(workspace_id)
    assert [item.action for item in report.files] == ["unchanged"]
    assert manager.state(workspace_id) == "accepted"


def test_recovery_rolls_back_a_prepared_journal(
    manager: WorkspaceManager, review: WorkspaceReview, project: Path
) -> None:
    workspace_id = make(manager, "n", {"pkg/mod.py": b"new\n", "fresh/dir/x.py": b"x\n"})
    temp = project / "pkg" / ".mod.py.abcd.remora-tmp"
    temp.write_bytes(b"new\n")
    (project / "fresh" / "dir").mkdir(parents=True)
    journal = {
        "journal_id": f"accept-{workspace_id}-abcd",
        "kind": "accept",
        "workspace_id": workspace_id,
        "state": "prepared",
        "created_dirs": ["fresh", "fresh/dir"],
        "entries": [
            {
                "path": "pkg/mod.py",
                "temp": "pkg/.mod.py.abcd.remora-tmp",
                "old_sha256": None,
                "new_sha256": None,
            },
        ],
    }
    manager.journal_dir.mkdir(parents=True)
    (manager.journal_dir / f"accept-{workspace_id}-abcd.json").write_text(json.dumps(journal))
    report = review.recover()
    assert report.rolled_back == [workspace_id]
    assert not temp.exists() and not (project / "fresh").exists()
    assert (project / "pkg" / "mod.py").read_bytes() == MOD
    assert manager.state(workspace_id) == "pending"


def test_a_failing_finalizer_leaves_a_journal_that_recovery_completes(
    manager: WorkspaceManager, project: Path
) -> None:
    workspace_id = make(manager, "n", {"pkg/mod.py": b"new\n"})
    calls: list[str] = []

    def flaky(kind: str, info: object) -> None:
        calls.append(kind)
        if len(calls) == 1:
            raise OSError("manifest disk full")

    review = WorkspaceReview(manager, after_apply=flaky)
    with pytest.raises(WorkspaceError) as info:
        review.accept(workspace_id)
    assert info.value.code == "WS_014" and "were applied" in info.value.message
    assert (project / "pkg" / "mod.py").read_bytes() == b"new\n"
    assert list(manager.journal_dir.glob("*.json"))
    report = review.recover()
    assert report.completed == [workspace_id]
    assert calls == ["accept", "accept"]
    assert not list(manager.journal_dir.glob("*.json"))


def test_a_file_edited_between_crash_and_recovery_is_left_alone(
    manager: WorkspaceManager, project: Path
) -> None:
    target = project / "pkg" / "mod.py"

    def crash(_journal: object, _skipped: object) -> None:
        raise KeyboardInterrupt

    ops = [FileOp(path="pkg/mod.py", data=b"new\n", old_sha256=hashlib.sha256(MOD).hexdigest())]
    with pytest.raises(KeyboardInterrupt):
        apply_journaled(project, manager.journal_dir, "accept", "lint-n", ops, crash)
    target.write_bytes(b"user typed this after the crash\n")
    journal_file = next(manager.journal_dir.glob("*.json"))
    data = json.loads(journal_file.read_text())
    data["entries"][0]["temp"] = "pkg/.mod.py.zz.remora-tmp"
    (project / "pkg" / ".mod.py.zz.remora-tmp").write_bytes(b"new\n")
    journal_file.write_text(json.dumps(data))
    report = WorkspaceReview(manager).recover()
    assert report.skipped_files == ["pkg/mod.py"]
    assert target.read_bytes() == b"user typed this after the crash\n"
    assert not list(project.rglob("*.remora-tmp"))


def _accept_in_process(root: str, workspace_id: str) -> None:
    WorkspaceReview(WorkspaceManager(Path(root))).accept(workspace_id)


def test_accepts_from_two_processes_serialise_and_merge(
    manager: WorkspaceManager, project: Path
) -> None:
    first = make(manager, "first", {"pkg/mod.py": MOD.replace(b"a + b", b"a+b")})
    with manager.create("docstring", "second") as ws:
        ws.write("pkg/mod.py", MOD.replace(b"a - b", b"a-b"))
        second = ws.workspace_id
    context = multiprocessing.get_context("spawn")
    procs = [
        context.Process(target=_accept_in_process, args=(str(project), workspace_id))
        for workspace_id in (first, second)
    ]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(60)
    assert [proc.exitcode for proc in procs] == [0, 0]
    assert (project / "pkg" / "mod.py").read_bytes() == MOD.replace(b"a + b", b"a+b").replace(
        b"a - b", b"a-b"
    )
    assert manager.state(first) == manager.state(second) == "accepted"
