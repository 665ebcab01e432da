"""One rule for the project root: ``remora doctor`` and ``remora analyze sub/file.py`` run in the
same directory of a project without a marker agree on the root and so on the project's Python
(the directory's ``.venv``)."""

from __future__ import annotations

import json
import venv
from pathlib import Path

import pytest

from remora.discovery import find_project_root
from tests.cli_helpers import run_cli


def _project(root: Path, *, with_venv: bool) -> Path:
    """``root/sub/mod.py`` with an unused import; ``root/.venv`` when asked; no marker."""
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "mod.py").write_text("import os\n\n\ndef f():\n    return 1\n")
    if with_venv:
        venv.create(root / ".venv", with_pip=False, symlinks=True)
    return root / "sub" / "mod.py"


def test_without_a_marker_the_nearest_venv_up_to_the_current_directory_is_the_root(
    tmp_path: Path,
) -> None:
    here = tmp_path / "here"
    target = _project(here, with_venv=True)
    assert find_project_root(target, cwd=here) == here.resolve()
    assert find_project_root(target.parent, cwd=here) == here.resolve()
    assert find_project_root(here, cwd=here) == here.resolve()
    # Above the current directory a venv is not looked for; outside it, neither.
    assert find_project_root(target, cwd=target.parent) == target.parent.resolve()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert find_project_root(target, cwd=elsewhere) == target.parent.resolve()
    # The nearer venv wins; a marker wins over any venv.
    venv.create(here / "sub" / "venv", with_pip=False, symlinks=True)
    assert find_project_root(target, cwd=here) == target.parent.resolve()
    (here / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    assert find_project_root(target, cwd=here) == here.resolve()


def test_without_a_marker_or_venv_the_root_is_the_targets_directory(tmp_path: Path) -> None:
    target = _project(tmp_path / "here", with_venv=False)
    assert find_project_root(target, cwd=tmp_path / "here") == target.parent.resolve()


def test_doctor_and_analyze_agree_on_the_root_and_its_python(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    here = tmp_path / "here"
    _project(here, with_venv=True)
    monkeypatch.chdir(here)
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    monkeypatch.setenv("COLUMNS", "200")
    doctor = run_cli(["--set", "model.backend=openai", "doctor", "-f", "json"], capsys)
    report = json.loads(doctor.out)
    assert report["project_root"] == str(here.resolve())
    assert report["project_python"]["source"] == ".venv", report["project_python"]
    assert report["project_python"]["executable"].startswith(str(here.resolve() / ".venv"))

    analyzed = run_cli(["analyze", "sub/mod.py", "--ops", "lint", "--check"], capsys)
    assert analyzed.code == 1, analyzed.out + analyzed.err  # the unused import, to propose
    assert list((here / ".remora" / "runs").glob("*.json")), "the run is recorded at the root"
    assert not (here / "sub" / ".remora").exists()
    assert "review with: remora review" in analyzed.out
