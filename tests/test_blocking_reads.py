"""FIFOs, devices and endless files in a project: every read is refused with a code, quickly.

A FIFO blocks ``open`` until a writer comes, and ``/dev/zero`` never ends; both used to hang
``read_file``, ``search_content`` and discovery (or exhaust memory). Each call here runs in a
thread joined with a timeout, so a regression fails instead of hanging the suite, and the
project's bytes are compared before and after.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from remora.config import ToolsConfig
from remora.errors import ToolError, WorkspaceError
from remora.regular_files import FileTooLargeError, NotRegularFileError, read_regular_file
from remora.tools.capabilities import CapabilityContext
from remora.tools.capabilities.files import read_file, read_lines, search_content, write_file
from remora.workspace import WorkspaceManager
from tests.stores import capability_context, write_tree
from tests.support.timed import run_timed

LIMIT = 5.0


def _timed(call: Callable[[], Any], fifos: list[Path]) -> tuple[Any, float]:
    """``call`` under ``LIMIT``; a read stuck on a FIFO is released by opening its write end,
    so no thread is left behind."""

    def release() -> None:
        for fifo in fifos:
            with contextlib.suppress(OSError):
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))

    return run_timed(call, LIMIT, release)


def _snapshot(root: Path) -> dict[str, object]:
    """Every path's kind and content (regular files), link target (links), outside .remora."""
    state: dict[str, object] = {}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root).as_posix()
        if relative.startswith(".remora"):
            continue
        mode = path.lstat().st_mode
        if stat.S_ISLNK(mode):
            state[relative] = ("link", os.readlink(path))
        elif stat.S_ISREG(mode):
            state[relative] = ("file", path.read_bytes())
        else:
            state[relative] = ("other", stat.S_IFMT(mode))
    return state


def _make_device(path: Path) -> bool:
    """A character device like /dev/zero at ``path``, when this process may create one."""
    try:
        os.mknod(path, 0o600 | stat.S_IFCHR, os.makedev(1, 5))
    except (OSError, AttributeError):
        return False
    return True


@pytest.fixture
def project(tmp_path: Path) -> tuple[Path, list[Path]]:
    root = write_tree(
        tmp_path / "proj",
        {"mod.py": "needle = 1\n", "pkg/__init__.py": "", "pkg/util.py": "x = 'needle'\n"},
    )
    fifos = [root / "pipe.py", root / "pkg" / "pipe.txt"]
    for fifo in fifos:
        os.mkfifo(fifo)
    (root / "zero.txt").symlink_to("/dev/zero")
    return root, fifos


@pytest.fixture
def ctx(project: tuple[Path, list[Path]]) -> CapabilityContext:
    return capability_context(project[0])


def test_read_file_refuses_a_fifo(project: tuple[Path, list[Path]], ctx: CapabilityContext) -> None:
    root, fifos = project
    before = _snapshot(root)
    for path in ("pipe.py", "pkg/pipe.txt"):
        with pytest.raises(ToolError) as info:
            _timed(lambda path=path: read_file(ctx, path), fifos)
        assert info.value.code == "TOOL_103"
        assert path in info.value.message and "FIFO" in info.value.message
    with pytest.raises(ToolError) as lines:
        _timed(lambda: read_lines(ctx, "pipe.py", 1, 2), fifos)
    assert lines.value.code == "TOOL_103"
    with pytest.raises(WorkspaceError) as write:
        _timed(lambda: write_file(ctx, "pipe.py", "x = 1\n"), fifos)
    assert write.value.code == "WS_006" and "FIFO" in write.value.message
    assert _snapshot(root) == before


def test_read_file_refuses_dev_zero(
    project: tuple[Path, list[Path]], ctx: CapabilityContext
) -> None:
    root, fifos = project
    before = _snapshot(root)
    with pytest.raises(WorkspaceError) as outside:
        _timed(lambda: read_file(ctx, "zero.txt"), fifos)
    assert outside.value.code == "WS_001"
    if not _make_device(root / "dev.txt"):
        pytest.skip("cannot create a device node here")
    with pytest.raises(ToolError) as info:
        _timed(lambda: read_file(ctx, "dev.txt"), fifos)
    assert info.value.code == "TOOL_103" and "character device" in info.value.message
    found, _ = _timed(lambda: search_content(ctx, "needle"), fifos)
    assert {m["path"] for m in found["matches"]} == {"mod.py", "pkg/util.py"}
    assert any("dev.txt" in line for line in found["skipped"])
    assert _snapshot(root) == {**before, "dev.txt": ("other", stat.S_IFCHR)}


def test_search_content_skips_fifos_and_names_them(
    project: tuple[Path, list[Path]], ctx: CapabilityContext
) -> None:
    root, fifos = project
    before = _snapshot(root)
    found, elapsed = _timed(lambda: search_content(ctx, "needle"), fifos)
    assert elapsed < LIMIT
    assert {m["path"] for m in found["matches"]} == {"mod.py", "pkg/util.py"}
    assert sorted(found["skipped"]) == [
        "'pipe.py' is not a regular file but a FIFO (named pipe); it cannot be read",
        "'pkg/pipe.txt' is not a regular file but a FIFO (named pipe); it cannot be read",
    ]
    with pytest.raises(ToolError) as info:
        _timed(lambda: search_content(ctx, "needle", path="pipe.py"), fifos)
    assert info.value.code == "TOOL_103" and "pipe.py" in info.value.message
    assert _snapshot(root) == before


def test_reads_are_bounded(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "big", {"big.txt": "a" * 3000, "small.txt": "needle"})
    store = WorkspaceManager(root, max_read_bytes=1000).create("test", "big")
    big_ctx = CapabilityContext(store=store, config=ToolsConfig(), system={})
    with pytest.raises(ToolError) as info:
        read_file(big_ctx, "big.txt")
    assert info.value.code == "TOOL_108" and "big.txt" in info.value.message
    assert "workspace.max_read_mb" in info.value.message
    found = search_content(big_ctx, "needle")
    assert [m["path"] for m in found["matches"]] == ["small.txt"]
    assert found["skipped"] == [
        "'big.txt' is too large to read (larger than 1000 bytes, the workspace.max_read_mb limit)"
    ]
    with pytest.raises(FileTooLargeError):
        read_regular_file(root / "big.txt", limit=10)
    with pytest.raises(NotRegularFileError):
        _timed(lambda: read_regular_file(Path("/dev/zero"), limit=1000), [])
    assert read_regular_file(root / "big.txt", limit=3000) == b"a" * 3000


def _discover_problems(root: Path) -> list[tuple[str, str, str]]:
    """Discovery of ``root`` in a child with a time and memory limit (a regression must fail,
    not hang the suite or exhaust the machine's memory)."""
    code = (
        "import json, resource, sys\n"
        "from pathlib import Path\n"
        "resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))\n"
        "from remora.discovery import discover\n"
        "result = discover([Path(sys.argv[1])], root=Path(sys.argv[1]))\n"
        "print(json.dumps({'files': result.files, 'problems': "
        "[[p.code, p.path, p.message] for p in result.problems]}))\n"
    )
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", code, str(root)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert time.monotonic() - started < 30
    report = json.loads(done.stdout)
    assert report["files"] == 2
    return [tuple(problem) for problem in report["problems"]]


@pytest.mark.parametrize("kind", ["fifo", "dev_zero_link", "device", "too_large"])
def test_discovery_reports_a_bad_gitignore_and_goes_on(tmp_path: Path, kind: str) -> None:
    root = write_tree(tmp_path / "proj", {"pyproject.toml": "", "a.py": "x = 1\n"})
    sub = write_tree(root / "sub", {"b.py": "y = 2\n"})
    gitignore = sub / ".gitignore"
    if kind == "fifo":
        os.mkfifo(gitignore)
    elif kind == "dev_zero_link":
        gitignore.symlink_to("/dev/zero")
    elif kind == "device":
        if not _make_device(gitignore):
            pytest.skip("cannot create a device node here")
    else:
        gitignore.write_text("# big\n" * 200_000)
    before = _snapshot(root)
    problems = _discover_problems(root)
    code = "DISC_104" if kind == "too_large" else "DISC_105"
    assert [(c, p) for c, p, _ in problems] == [(code, "sub/.gitignore")]
    message = problems[0][2]
    assert "rules are not applied" in message
    if kind == "too_large":
        assert "discovery.max_file_bytes" in message
    else:
        assert "not a regular file" in message
    assert _snapshot(root) == before
