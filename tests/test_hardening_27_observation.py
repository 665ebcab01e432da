"""Issue 27, breach 2: observing project code writes nothing back, and no workspace may ever
change a version-control directory.

The attacks run through the real capabilities (``call_function``, ``observe_cases``,
``pytest_run``) on a real overlay workspace with the real
sandbox, over a project that is a real git repository; accept goes through the real review.
On the old code an observed ``save('.git/config', ...)`` became a workspace change, accept
wrote it, and the next ``git status`` ran the ``core.fsmonitor`` command it named.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from remora.errors import WorkspaceError
from remora.operations.characterize.inputs import draft, observe_cases
from remora.tools.capabilities import CapabilityContext
from remora.tools.capabilities.call import call_function
from remora.tools.capabilities.pytest_runner import pytest_run
from remora.tools.isolation import project_sandbox
from remora.workspace.manager import WorkspaceManager
from remora.workspace.overlay import OverlayWorkspace
from remora.workspace.review import WorkspaceReview
from tests.stores import capability_context, write_tree

HERE = "os.path.dirname(os.path.dirname(os.path.abspath(__file__)))"

MODULE = f"""import os
import shutil

ROOT = {HERE}


def save(path, text):
    with open(os.path.join(ROOT, path), "w") as handle:
        handle.write(text)
    return "saved"


def purge(path):
    top = os.path.join(ROOT, path)
    for name in os.listdir(top):
        target = os.path.join(top, name)
        if os.path.isdir(target) and not os.path.islink(target):
            shutil.rmtree(target, ignore_errors=True)
        else:
            os.remove(target)
    return "purged"


def double(n):
    with open(os.path.join(ROOT, ".git", "config"), "a") as handle:
        handle.write("[core]\\n\\tfsmonitor = touch observed-marker\\n")
    if os.path.exists(os.path.join(ROOT, "keep.txt")):
        os.remove(os.path.join(ROOT, "keep.txt"))
    return n * 2
"""

PROJECT_TEST = f"""import os

ROOT = {HERE}


def test_tampers():
    with open(os.path.join(ROOT, ".git", "config"), "a") as handle:
        handle.write("[core]\\n\\tfsmonitor = touch test-marker\\n")
    os.remove(os.path.join(ROOT, "keep.txt"))
"""

HOSTILE_CONFIG = "[core]\n\tfsmonitor = touch {marker}\n"


def git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(root.parent)}
    return subprocess.run(
        ["git", *args], cwd=root, env=env, capture_output=True, text=True, timeout=60, check=True
    )


def tree_hash(root: Path) -> str:
    """sha256 over every path and content of the project, ``.git`` included, ``.remora`` not."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root).as_posix()
        if relative == ".remora" or relative.startswith(".remora/"):
            continue
        digest.update(relative.encode())
        if path.is_file() and not path.is_symlink():
            digest.update(path.read_bytes())
    return digest.hexdigest()


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A git repository with a package, a project test and a file to lose."""
    project = write_tree(
        tmp_path / "proj",
        {
            "pkg/__init__.py": "",
            "pkg/mod.py": MODULE,
            "tests/test_tamper.py": PROJECT_TEST,
            "keep.txt": "keep\n",
            ".gitignore": ".remora/\n",
        },
    )
    git(project, "init", "-q")
    git(project, "add", "-A")
    git(project, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    return project


def accept(ctx: CapabilityContext) -> None:
    """Accept the context's workspace as ``remora accept`` does."""
    assert isinstance(ctx.store, OverlayWorkspace)
    WorkspaceReview(WorkspaceManager(ctx.store.root)).accept(ctx.store.workspace_id)


def test_an_observed_write_to_git_config_never_reaches_git(root: Path) -> None:
    """The fsmonitor payload is written inside the sandbox (the write lands in the scratch
    layer) and goes with it: no change, accept writes nothing, and ``git status`` after
    accept runs nothing."""
    ctx = capability_context(root, isolation="bwrap", timeout=20.0)
    before = tree_hash(root)
    marker = root.parent / "fsmonitor-ran"
    payload = HOSTILE_CONFIG.format(marker=marker)
    outcome = call_function(ctx, "pkg/mod.py", "save", json.dumps([".git/config", payload]))
    assert outcome["returned"]["json"] == "saved"
    assert ctx.store.changed_paths() == []
    accept(ctx)
    git(root, "status", "--porcelain")
    assert not marker.exists()
    assert "fsmonitor" not in (root / ".git" / "config").read_text()
    assert tree_hash(root) == before


@pytest.mark.parametrize("isolation", ["bwrap", "landlock"])
def test_an_observed_purge_deletes_nothing(root: Path, isolation: str) -> None:
    """A function that empties the project (``.git`` included) runs to the end in the
    sandbox (under Landlock it removes the view's links), and neither the workspace nor
    accept deletes a single file."""
    ctx = capability_context(root, isolation=isolation, timeout=20.0)
    before = tree_hash(root)
    outcome = call_function(ctx, "pkg/mod.py", "purge", json.dumps(["."]))
    assert outcome["returned"]["json"] == "purged"
    assert ctx.store.changed_paths() == []
    accept(ctx)
    assert tree_hash(root) == before
    assert git(root, "status", "--porcelain").stdout == ""


def test_observing_inputs_writes_nothing_back_and_keeps_no_such_case(root: Path) -> None:
    """Input probing calls ``double`` many times (each call appends to ``.git/config`` and
    deletes keep.txt): nothing comes back to the workspace, and no case is kept, since its
    test would do the same to the project at the user's next ``pytest`` (issue 47)."""
    ctx = capability_context(root, {"workspace_id": str(root)}, isolation="bwrap")
    observed = observe_cases(ctx, "pkg/mod.py", "double", model_inputs=False)
    assert observed["verdicts"].get("kept", 0) == 0
    reasons = [o.reason for o in draft(ctx, "pkg/mod.py", "double").observations]
    assert reasons and all("outside its own directory" in reason for reason in reasons)
    assert ctx.store.changed_paths() == []
    assert ctx.store.read("keep.txt") == b"keep\n"


def test_a_project_test_run_writes_nothing_back(root: Path) -> None:
    """pytest_run of a test that tampers with ``.git/config`` and deletes a file: the test
    passes in the sandbox, and the workspace is unchanged."""
    ctx = capability_context(root, isolation="bwrap", timeout=30.0)
    report = pytest_run(ctx, ["tests/test_tamper.py"])
    assert report["totals"]["passed"] == 1, report
    assert ctx.store.changed_paths() == []


@pytest.mark.parametrize(
    "path",
    [
        ".git/config",
        ".git",
        ".git/hooks/pre-commit",
        "vendor/lib/.git/config",
        ".GIT/config",
        ".hg/hgrc",
        ".svn/entries",
        ".bzr/branch/branch.conf",
        "gitlink/config",
    ],
)
def test_the_workspace_refuses_writes_in_version_control(root: Path, path: str) -> None:
    """Whoever asks, a workspace write there is WS_019, shown as ``CODE: message (hint)``;
    a link to ``.git`` is no way round."""
    (root / "gitlink").symlink_to(".git")
    ctx = capability_context(root)
    with pytest.raises(WorkspaceError) as info:
        ctx.store.write(path, b"[core]\n\tfsmonitor = touch x\n")
    assert info.value.code == "WS_019"
    assert str(info.value).startswith("WS_019: cannot write") and "(change files outside" in str(
        info.value
    )
    assert ctx.store.changed_paths() == []


def test_the_workspace_refuses_deletes_in_version_control(root: Path) -> None:
    ctx = capability_context(root)
    for path in (".git/config", ".git/HEAD", "gitlink/HEAD"):
        (root / "gitlink").unlink(missing_ok=True)
        (root / "gitlink").symlink_to(".git")
        with pytest.raises(WorkspaceError) as info:
            ctx.store.delete(path)
        assert info.value.code == "WS_019" and "cannot delete" in info.value.message
    ctx.store.write("keep.txt", b"edited\n")
    assert ctx.store.changed_paths() == ["keep.txt"]


def test_a_harvesting_sandbox_skips_version_control(root: Path) -> None:
    """Even a command whose writes are the point cannot change ``.git``: its write there
    and its delete of the whole directory are one reported skip; the rest is harvested."""
    ctx = capability_context(root, isolation="bwrap")
    script = "echo x >> .git/config && rm -rf .git/hooks && rm -rf vendor.git && echo n > new.txt"
    with project_sandbox(ctx.store, ctx.config, harvest=True) as box:
        box.run(["/bin/sh", "-c", script], timeout=10, what="sh")
        box.run(["/bin/sh", "-c", "rm -rf .git"], timeout=10, what="sh")
    assert box.harvest is not None
    assert "version-control" in box.harvest.skipped[".git"]
    assert box.harvest.written == ["new.txt"] and box.harvest.deleted == []
    assert ctx.store.changed_paths() == ["new.txt"]


def test_a_materialized_view_never_captures_version_control(root: Path) -> None:
    """A tool that removes the view's ``.git`` link (or a link to a directory holding a
    nested repository) would have deleted every file below it."""
    write_tree(root, {"vendor/lib/.git/config": "[core]\n", "vendor/lib/a.py": ""})
    ctx = capability_context(root)
    with ctx.store.materialize() as view:
        os.unlink(view / ".git")
        os.unlink(view / "vendor")
        (view / "new.txt").write_text("n")
    assert ctx.store.changed_paths() == ["new.txt", "vendor/lib/a.py"]
    assert ctx.store.exists(".git/config") and ctx.store.exists("vendor/lib/.git/config")


def test_accept_refuses_an_older_workspace_that_changes_git(root: Path) -> None:
    """A workspace holding a ``.git`` change (recorded before such writes were refused) is
    refused whole with WS_019: neither ``.git/config`` nor its other file is written."""
    ctx = capability_context(root)
    assert isinstance(ctx.store, OverlayWorkspace)
    ctx.store.write("keep.txt", b"edited\n")
    with sqlite3.connect(ctx.store.db_path) as conn:
        conn.execute(
            "INSERT INTO entries (path, kind, data, new_sha256, base_sha256, base_data,"
            " updated_at) VALUES ('.git/config', 'write', ?, NULL, NULL, NULL, ?)",
            (HOSTILE_CONFIG.format(marker="x").encode(), time.time()),
        )
    before = tree_hash(root)
    with pytest.raises(WorkspaceError) as info:
        accept(ctx)
    assert info.value.code == "WS_019" and "'.git/config'" in info.value.message
    assert tree_hash(root) == before


def test_accept_refuses_a_change_that_a_new_link_leads_into_git(root: Path) -> None:
    """A path that was a plain directory when written, and is a link to ``.git`` at accept,
    is refused rather than written through the link."""
    (root / "cfg").mkdir()
    ctx = capability_context(root)
    ctx.store.write("cfg/config", HOSTILE_CONFIG.format(marker="x").encode())
    (root / "cfg").rmdir()
    (root / "cfg").symlink_to(".git")
    before = tree_hash(root)
    with pytest.raises(WorkspaceError) as info:
        accept(ctx)
    assert info.value.code == "WS_019"
    assert tree_hash(root) == before
