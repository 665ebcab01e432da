"""The package under evaluation as a hostile tree or archive: special files (FIFOs, sockets)
are left out of scratch copies, and an archive that would unpack too large or into too many
members is refused before anything is extracted (issue 47)."""

from __future__ import annotations

import gzip
import io
import os
import socket
import stat
import tarfile
import zipfile
from pathlib import Path

import pytest

from remora.errors import EvalError
from remora.evaluation import package
from remora.evaluation.package import resolve_package
from tests.support.cli_process import run_remora


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _special_files(root: Path) -> list[str]:
    return sorted(
        path.relative_to(root).as_posix()
        for path in root.rglob("*")
        if not (path.is_symlink() or stat.S_ISREG(path.lstat().st_mode) or path.is_dir())
    )


def _project_with_special_files(root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A small project whose root, package and tests hold FIFOs (one named like a module and
    one like a test) and a socket, beside a symlink and its ordinary files."""
    _write(root / "pyproject.toml", "[project]\nname = 'demo'\n")
    _write(root / "demo" / "__init__.py", "")
    _write(root / "demo" / "core.py", "def double(x):\n    return 2 * x\n")
    _write(
        root / "tests" / "test_core.py",
        "from demo.core import double\n\n\ndef test_double():\n    assert double(2) == 4\n",
    )
    for fifo in ("pipe", "demo/pipe.py", "tests/test_pipe.py", "extra.py"):
        os.mkfifo(root / fifo)
    (root / "demo" / "link.py").symlink_to("core.py")
    monkeypatch.chdir(root)  # a relative name keeps the socket's path under the AF_UNIX limit
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind("demo.sock")
    assert _special_files(root) == [
        "demo.sock",
        "demo/pipe.py",
        "extra.py",
        "pipe",
        "tests/test_pipe.py",
    ]
    return root


def test_special_files_are_left_out_of_scratch_copies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _project_with_special_files(tmp_path / "proj", monkeypatch)
    source = resolve_package(str(root), tmp_path / "work")
    assert source.entries == ("demo",)
    project = source.copy_to(tmp_path / "copy")
    assert _special_files(project.root) == []
    assert (project.root / "demo" / "link.py").is_symlink()
    assert project.modules() == ["demo/__init__.py", "demo/core.py", "demo/link.py"]
    assert project.test_paths() == ["tests"]
    again = project.copy_to(tmp_path / "again")
    assert _special_files(again.root) == []
    assert (again.root / "demo" / "core.py").read_text(encoding="utf-8").startswith("def double")
    assert again.run_tests(120).status == "passed"
    alone = resolve_package(str(root / "demo"), tmp_path / "work2").copy_to(tmp_path / "alone")
    assert sorted(path.name for path in (alone.root / "demo").iterdir()) == [
        "__init__.py",
        "core.py",
        "link.py",
    ]


def test_a_fifo_is_neither_a_module_nor_a_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "one"
    _write(root / "tool.py", "def f():\n    return 1\n")
    os.mkfifo(root / "other.py")
    source = resolve_package(str(root), tmp_path / "work")
    assert source.entries == ("tool.py",)
    assert source.copy_to(tmp_path / "copy").modules() == ["tool.py"]
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(EvalError) as caught:
        resolve_package(str(tmp_path / "pipe"), tmp_path / "work")
    assert caught.value.code == "EVAL_003" and "not a directory" in caught.value.message


def test_eval_of_a_project_holding_special_files_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _project_with_special_files(tmp_path / "proj", monkeypatch)
    done = run_remora("eval", str(root), "--ops", "lint", "--limit", "1", cwd=tmp_path)
    assert "Traceback" not in done.stderr and "shutil.Error" not in done.stderr
    # the run ends as any other: its own tests pass, and lint (which would load the model
    # for a module of 40 lines or more) is reported not measured, exit 1, as documented
    assert done.returncode == 1, done.stderr
    assert "the package's own tests: pass (1 passed" in done.stdout
    assert "lint: not measured: no module of at least 40 lines" in done.stdout
    assert _special_files(root) == [
        "demo.sock",
        "demo/pipe.py",
        "extra.py",
        "pipe",
        "tests/test_pipe.py",
    ]


# --- archives over the size limits ---------------------------------------------------------------

FILES = {f"big-1.0/big/part{i}.py": "x = 0\n" * 200 for i in range(5)} | {
    "big-1.0/big/__init__.py": "",
}


def _archive(tmp_path: Path, suffix: str) -> Path:
    archive = tmp_path / f"big-1.0{suffix}"
    if suffix == ".zip":
        with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as opened:
            for name, text in FILES.items():
                opened.writestr(name, text)
    else:
        with tarfile.open(archive, "w:gz") as opened:
            for name, text in FILES.items():
                data = text.encode()
                info = tarfile.TarInfo(name)
                info.size = len(data)
                opened.addfile(info, io.BytesIO(data))
    return archive


def _unpacked(work: Path) -> list[Path]:
    directory = work / "sdist" / "unpacked"
    return list(directory.iterdir()) if directory.exists() else []


@pytest.mark.parametrize("suffix", [".tar.gz", ".zip"])
def test_an_archive_within_the_limits_unpacks(tmp_path: Path, suffix: str) -> None:
    source = resolve_package(str(_archive(tmp_path, suffix)), tmp_path / "work")
    assert (source.name, source.entries) == ("big", ("big",))
    assert len(source.copy_to(tmp_path / "copy").modules()) == 6


@pytest.mark.parametrize("suffix", [".tar.gz", ".zip"])
def test_an_archive_declaring_too_many_bytes_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suffix: str
) -> None:
    archive = _archive(tmp_path, suffix)
    monkeypatch.setattr(package, "MAX_UNPACKED_BYTES", 2_000)  # each part is 1,200 bytes
    with pytest.raises(EvalError) as caught:
        resolve_package(str(archive), tmp_path / "work")
    error = caught.value
    assert error.code == "EVAL_002" and error.exit_code == 2
    assert archive.name in error.message and "2,000 bytes" in error.message
    assert _unpacked(tmp_path / "work") == []


@pytest.mark.parametrize("suffix", [".tar.gz", ".zip"])
def test_an_archive_with_too_many_members_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suffix: str
) -> None:
    archive = _archive(tmp_path, suffix)
    monkeypatch.setattr(package, "MAX_UNPACKED_MEMBERS", 4)
    with pytest.raises(EvalError) as caught:
        resolve_package(str(archive), tmp_path / "work")
    error = caught.value
    assert error.code == "EVAL_002"
    assert archive.name in error.message and "4 members" in error.message
    assert _unpacked(tmp_path / "work") == []


def test_a_tar_header_declaring_600_mb_is_refused_before_its_data(tmp_path: Path) -> None:
    """The default limit, met by a header alone: nothing is decompressed past it."""
    info = tarfile.TarInfo("bomb-1.0/zeros.bin")
    info.size = 600_000_000
    archive = tmp_path / "bomb-1.0.tar.gz"
    archive.write_bytes(gzip.compress(info.tobuf(format=tarfile.PAX_FORMAT)))
    with pytest.raises(EvalError) as caught:
        resolve_package(str(archive), tmp_path / "work")
    assert caught.value.code == "EVAL_002"
    assert f"{package.MAX_UNPACKED_BYTES:,} bytes" in caught.value.message
    assert _unpacked(tmp_path / "work") == []


def test_hard_links_count_as_their_target(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    archive = tmp_path / "links-1.0.tar.gz"
    data = b"x" * 1_000
    with tarfile.open(archive, "w:gz") as opened:
        info = tarfile.TarInfo("links-1.0/data.txt")
        info.size = len(data)
        opened.addfile(info, io.BytesIO(data))
        for index in range(3):
            link = tarfile.TarInfo(f"links-1.0/copy{index}.txt")
            link.type = tarfile.LNKTYPE
            link.linkname = "links-1.0/data.txt"
            opened.addfile(link)
    monkeypatch.setattr(package, "MAX_UNPACKED_BYTES", 3_500)
    with pytest.raises(EvalError) as caught:
        resolve_package(str(archive), tmp_path / "work")
    assert caught.value.code == "EVAL_002" and "3,500 bytes" in caught.value.message
