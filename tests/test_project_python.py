"""The project's own Python runs its code: a dependency installed only in the project's
virtual environment imports in calls, pytest runs and coverage runs, under isolation."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from remora.config import ToolsConfig
from remora.errors import ToolError
from remora.operations.characterize.characterization import _measure
from remora.operations.characterize.inputs import load_target
from remora.tools.capabilities.call import call_function
from remora.tools.capabilities.pytest_runner import pytest_run
from remora.tools.interpreter import ProjectPython, project_python
from tests.stores import capability_context, write_tree
from tests.test_analyze_cli import remora

HOST = f"{sys.version_info.major}.{sys.version_info.minor}"
SOURCE = {
    "pyproject.toml": "[project]\nname = 'proj'\n",
    "pkg/__init__.py": "",
    "pkg/mod.py": (
        "import onlyhere\n\n\ndef answer(x):\n    if x:\n        return onlyhere.VALUE\n"
        "    return 0\n"
    ),
    "tests/test_mod.py": (
        "from pkg.mod import answer\n\n\ndef test_answer():\n    assert answer(1) == 42\n"
    ),
}


def make_venv(directory: Path) -> Path:
    """A virtual environment of this Python, without pip, holding a module nothing else has."""
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(directory)], check=True, timeout=120
    )
    [packages] = list(directory.glob("lib/python*/site-packages"))
    (packages / "onlyhere.py").write_text("VALUE = 42\n", encoding="utf-8")
    return directory


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = write_tree(tmp_path_factory.mktemp("p") / "proj", SOURCE)
    make_venv(root / ".venv")
    return root


def test_the_projects_venv_is_found_and_described(project: Path) -> None:
    found = project_python(project, ToolsConfig())
    assert (found.source, found.version) == (".venv", HOST)
    assert found.executable == str(project / ".venv" / "bin" / "python")
    assert found.shares_remoras_packages
    assert "Remora's pytest and coverage lent" in found.describe()
    bare = write_tree(project.parent / "bare", {"m.py": ""})
    assert project_python(bare, ToolsConfig()).is_remoras


@pytest.mark.parametrize("level", ["bwrap", "landlock"])
def test_a_call_imports_what_only_the_projects_venv_has(project: Path, level: str) -> None:
    ctx = capability_context(project, isolation=level)
    assert call_function(ctx, "pkg/mod.py", "answer", "[1]")["returned"]["json"] == 42


def test_pytest_and_coverage_run_under_the_projects_python(project: Path) -> None:
    ctx = capability_context(project)
    report = pytest_run(ctx, ["tests/test_mod.py"])
    assert report["ok"] is True, report
    assert [test["outcome"] for test in report["tests"]] == ["passed"]
    target = load_target(ctx, "pkg/mod.py", "answer")
    reasons, coverage = _measure(ctx, target, "tests/test_mod.py", (), runs=1)
    assert set(reasons.values()) == {""}, reasons
    assert coverage.missing_lines  # `return 0` is never run: coverage really measured it


def test_without_the_venv_the_dependency_is_missing(project: Path) -> None:
    ctx = capability_context(project, python=sys.executable)  # Remora's own, named
    assert project_python(project, ctx.config).is_remoras
    failed = call_function(ctx, "pkg/mod.py", "answer", "[1]")
    assert failed["stage"] == "import"
    assert failed["raised"]["message"] == "No module named 'onlyhere'"


def test_a_bad_setting_and_another_version_without_pytest_are_clear_errors(
    tmp_path: Path,
) -> None:
    with pytest.raises(ToolError) as caught:
        project_python(tmp_path, ToolsConfig(python="nowhere/python"))
    assert caught.value.code == "TOOL_805"
    other = ProjectPython(
        executable="/x/bin/python",
        source=".venv",
        version="3.1",
        environment=str(tmp_path),
    )
    with pytest.raises(ToolError) as caught:
        other.module_argv("pytest", "-q")
    assert caught.value.code == "TOOL_806" and "install pytest into" in caught.value.hint


def test_doctor_says_which_python_runs_the_project(project: Path) -> None:
    done = remora("doctor", str(project), "-f", "json", cwd=project, timeout=300)
    report = json.loads(done.stdout)
    assert report["project_python"]["source"] == ".venv", report["project_python"]
    assert report["project_python"]["executable"].endswith(".venv/bin/python")
