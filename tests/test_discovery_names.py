"""File names discovery cannot turn into text are reported, never a traceback."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from remora.discovery import discover
from tests.support.cli_process import run_remora


def _project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / os.fsdecode(b"caf\xe9.py")).write_bytes(b"def f():\n    return 1\n")
    (tmp_path / "good.py").write_text("def g():\n    return 2\n")
    return tmp_path


def test_a_non_utf8_file_name_is_a_problem_and_the_rest_is_found(tmp_path: Path) -> None:
    result = discover([_project(tmp_path)], root=tmp_path)
    assert [node.qualname for node in result.nodes if node.node_type == "function"] == ["g"]
    [problem] = result.problems
    assert problem.code == "DISC_107" and problem.path == "caf\ufffd.py"
    problem.model_dump_json()


def test_the_cli_lists_it_without_a_traceback(tmp_path: Path) -> None:
    done = run_remora("discover", str(_project(tmp_path)), "-f", "json", cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert "DISC_107" in done.stdout + done.stderr


def test_a_directory_whose_venv_marker_cannot_be_checked_is_walked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "good.py").write_text("def g():\n    return 2\n")
    (tmp_path / "locked").mkdir()
    (tmp_path / "locked" / "inner.py").write_text("def h():\n    return 3\n")
    real_exists = Path.exists

    def exists(path: Path, *args: object, **kwargs: object) -> bool:
        if path.name == "pyvenv.cfg" and path.parent.name == "locked":
            raise PermissionError(13, "Permission denied", str(path))
        return real_exists(path)

    monkeypatch.setattr(Path, "exists", exists)
    result = discover([tmp_path], root=tmp_path)
    functions = sorted(node.qualname for node in result.nodes if node.node_type == "function")
    assert functions == ["g", "h"]
