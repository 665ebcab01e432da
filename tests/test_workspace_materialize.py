"""Materialized views: cheap to build, look like the accepted project, never write the project."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from remora.tools.process import scrubbed_env
from remora.workspace import WorkspaceManager, sweep_stale_views


def snapshot(root: Path) -> dict[str, tuple[str, bool]]:
    """Every entry under root except Remora's state: content hash (or '' for dirs), is-link."""
    out: dict[str, tuple[str, bool]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = Path(dirpath).relative_to(root).as_posix()
        if rel_dir.startswith(".remora"):
            dirnames[:] = []
            continue
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            if rel.startswith(".remora"):
                continue
            digest = "" if path.is_dir() else hashlib.sha256(path.read_bytes()).hexdigest()
            out[rel] = (digest, path.is_symlink())
    return out


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "pkg").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (root / "pkg" / "other.py").write_text("VALUE = 1\n")
    (root / "tests" / "test_calc.py").write_text("from pkg.calc import add\n")
    (root / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (root / "run.sh").chmod(0o755)
    return root


@pytest.fixture
def manager(project: Path) -> WorkspaceManager:
    return WorkspaceManager(project)


def test_view_shows_the_project_after_accept(manager: WorkspaceManager, project: Path) -> None:
    with manager.create("lint", "n") as ws:
        ws.write("pkg/calc.py", b"def add(a, b):\n    return b + a\n")
        ws.write("pkg/newdir/new.py", b"NEW = 1\n")
        ws.delete("pkg/other.py")
        ws.write("run.sh", b"#!/bin/sh\necho changed\n")
        with ws.materialize() as view:
            assert view.parent == manager.views_dir
            assert view.name.startswith(f"{os.getpid()}-lint-n-")
            assert (view / "pkg" / "calc.py").read_bytes() == b"def add(a, b):\n    return b + a\n"
            assert not (view / "pkg" / "calc.py").is_symlink()
            assert (view / "pkg" / "newdir" / "new.py").read_bytes() == b"NEW = 1\n"
            assert not (view / "pkg" / "other.py").exists()
            assert (view / "pkg" / "__init__.py").is_symlink()
            assert (view / "tests").is_symlink()
            assert (view / "tests" / "test_calc.py").read_text() == "from pkg.calc import add\n"
            assert not (view / ".remora").exists()
            assert os.stat(view / "run.sh").st_mode & 0o777 == 0o755
        assert not view.exists()


def test_view_cost_grows_with_changes_not_project_size(tmp_path: Path) -> None:
    root = tmp_path / "big"
    for package in range(40):
        directory = root / f"pkg{package}"
        directory.mkdir(parents=True)
        for module in range(100):
            (directory / f"m{module}.py").write_text(f"X = {module}\n")
    manager = WorkspaceManager(root)
    with manager.create("lint", "big") as ws:
        ws.write("pkg3/m1.py", b"X = 'changed'\n")
        ws.write("pkg7/m2.py", b"X = 'changed'\n")
        start = time.perf_counter()
        with ws.materialize() as view:
            built = time.perf_counter() - start
            entries = sum(len(dirs) + len(files) for _, dirs, files in os.walk(view))
            assert (view / "pkg3" / "m1.py").read_text() == "X = 'changed'\n"
            assert (view / "pkg39" / "m99.py").read_text() == "X = 99\n"
    # root (40 links) + two real package dirs of 100 entries each: not 4,000 files.
    assert entries <= 40 + 2 * 100 + 2
    assert built < 2.0


def test_subprocess_writes_are_captured_and_project_is_untouched(
    manager: WorkspaceManager, project: Path, tmp_path: Path
) -> None:
    before = snapshot(project)
    script = (
        "import os, pathlib\n"
        "pathlib.Path('pkg/calc.py').write_text('def add(a, b):\\n    return a+b\\n')\n"
        "pathlib.Path('pkg/other.py').write_text('VALUE = 2\\n')\n"
        "pathlib.Path('tests/test_new.py').write_text('def test_x():\\n    pass\\n')\n"
        "os.makedirs('build/out', exist_ok=True)\n"
        "pathlib.Path('build/out/report.txt').write_text('ok\\n')\n"
        "pathlib.Path('run.tmp').write_text('#!/bin/sh\\necho atomically\\n')\n"
        "os.replace('run.tmp', 'run.sh')\n"
        "os.unlink('pkg/__init__.py')\n"
        "os.makedirs('.remora')\n"
        "pathlib.Path('.remora/not-captured').write_text('x')\n"
        "import pkg.calc\n"
    )
    with manager.create("test", "n") as ws:
        ws.write("pkg/calc.py", b"def add(a, b):\n    return a + b  # ws\n")
        with ws.materialize(writable=["pkg/other.py", "tests/test_new.py"]) as view:
            assert not (view / "pkg" / "other.py").is_symlink()
            assert not (view / "tests").is_symlink()
            subprocess.run(
                [sys.executable, "-c", script],
                cwd=view,
                env=scrubbed_env(tmp_path / "home"),
                check=True,
            )
        assert snapshot(project) == before
        assert not list(project.rglob("__pycache__"))
        assert ws.read("pkg/calc.py") == b"def add(a, b):\n    return a+b\n"
        assert ws.read("pkg/other.py") == b"VALUE = 2\n"
        assert ws.read("tests/test_new.py") == b"def test_x():\n    pass\n"
        assert ws.read("build/out/report.txt") == b"ok\n"
        assert ws.read("run.sh") == b"#!/bin/sh\necho atomically\n"
        assert not ws.exists("pkg/__init__.py")
        assert ws.changed_paths() == [
            "build/out/report.txt",
            "pkg/__init__.py",
            "pkg/calc.py",
            "pkg/other.py",
            "run.sh",
            "tests/test_new.py",
        ]


def test_writable_directory_gets_real_copies(manager: WorkspaceManager, project: Path) -> None:
    before = snapshot(project)
    with manager.create("test", "dir") as ws, ws.materialize(writable=["tests"]) as view:
        target = view / "tests" / "test_calc.py"
        assert not target.is_symlink()
        target.write_text("changed\n")
    assert snapshot(project) == before
    with manager.open("test-dir") as ws:
        assert ws.read("tests/test_calc.py") == b"changed\n"


def test_an_error_inside_the_view_captures_nothing(manager: WorkspaceManager) -> None:
    with manager.create("lint", "boom") as ws:
        with pytest.raises(RuntimeError), ws.materialize() as view:
            (view / "new.py").write_text("x\n")
            raise RuntimeError("tool crashed")
        assert ws.changed_paths() == []
        assert not view.exists()


def test_stale_views_of_dead_processes_are_swept(manager: WorkspaceManager) -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    dead = manager.views_dir / f"{proc.pid}-lint-x-deadbeef"
    (dead / "pkg").mkdir(parents=True)
    (dead / "pkg" / "link").symlink_to(manager.project_root / "pkg")
    live = manager.views_dir / f"{os.getppid()}-lint-y-cafebabe"
    live.mkdir()
    assert sweep_stale_views(manager.views_dir) == 1
    assert not dead.exists() and live.exists()
    assert (manager.project_root / "pkg" / "calc.py").exists()


def test_keep_views_leaves_the_view(project: Path) -> None:
    manager = WorkspaceManager(project, keep_views=True)
    with manager.create("lint", "keep") as ws, ws.materialize() as view:
        pass
    assert view.is_dir()
    assert manager.sweep_views() == 0
