"""The package under evaluation: SPEC resolution, scratch copies, its modules and its tests."""

from __future__ import annotations

import shutil
import tarfile
from pathlib import Path

import pytest

from remora.errors import EvalError
from remora.evaluation.package import is_test_path, resolve_package
from tests.support.eval_context import EVAL_PACKAGE


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_a_project_directory_is_laid_out_and_copied(tmp_path: Path) -> None:
    source = resolve_package(str(EVAL_PACKAGE), tmp_path / "work")
    assert (source.name, source.path_entry, source.entries) == ("eval_package", "", ("shapes",))
    project = source.copy_to(tmp_path / "copy")
    assert project.modules() == ["shapes/__init__.py", "shapes/geometry.py", "shapes/text.py"]
    assert project.module_name("shapes/text.py") == "shapes.text"
    assert project.module_name("shapes/__init__.py") == "shapes"
    assert project.test_paths() == ["tests"]
    assert project.check_import("shapes.text") == (True, "")
    ok, error = project.check_import("shapes.nowhere")
    assert not ok and "ModuleNotFoundError" in error
    (project.root / "shapes" / "text.py").write_text("x = 1\n", encoding="utf-8")
    assert "def slug" in (EVAL_PACKAGE / "shapes" / "text.py").read_text(encoding="utf-8")


def test_the_suite_passes_fails_or_cannot_run(tmp_path: Path) -> None:
    project = resolve_package(str(EVAL_PACKAGE), tmp_path).copy_to(tmp_path / "copy")
    passed = project.run_tests(120)
    assert passed.status == "passed" and "3 passed" in passed.summary
    geometry = project.root / "shapes" / "geometry.py"
    geometry.write_text(
        geometry.read_text(encoding="utf-8").replace("return width * height", "return 0"),
        encoding="utf-8",
    )
    failed = project.run_tests(120)
    assert failed.status == "failed" and "1 failed" in failed.summary
    geometry.write_text("import no_such_module\n", encoding="utf-8")
    broken = project.run_tests(120)
    assert broken.status == "cannot_run" and "collecting" in broken.summary
    shutil.rmtree(project.root / "tests")
    assert project.run_tests(120).summary == "no tests found"


def test_a_src_layout_with_tests_inside_the_package(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    _write(root / "pyproject.toml", "[project]\nname = 'demo'\n")
    _write(root / "src" / "demo" / "__init__.py", "")
    _write(root / "src" / "demo" / "core.py", "def f():\n    return 1\n")
    _write(
        root / "src" / "demo" / "tests" / "test_core.py",
        "from demo.core import f\n\ndef test_f():\n    assert f() == 1\n",
    )
    _write(root / "docs" / "conf.py", "")
    source = resolve_package(str(root), tmp_path / "work")
    assert (source.path_entry, source.entries) == ("src", ("demo",))
    project = source.copy_to(tmp_path / "copy")
    assert project.modules() == ["src/demo/__init__.py", "src/demo/core.py"]
    assert project.module_name("src/demo/core.py") == "demo.core"
    assert project.test_paths() == ["src/demo/tests"]
    assert project.run_tests(120).status == "passed"


def test_a_package_directory_is_copied_alone(tmp_path: Path) -> None:
    source = resolve_package(str(EVAL_PACKAGE / "shapes"), tmp_path / "work")
    project = source.copy_to(tmp_path / "copy")
    assert sorted(path.name for path in project.root.iterdir()) == ["shapes"]
    assert project.modules()[-1] == "shapes/text.py"
    assert project.run_tests(60).status == "cannot_run"


def test_a_single_module_project(tmp_path: Path) -> None:
    _write(tmp_path / "one" / "setup.py", "")
    _write(tmp_path / "one" / "tool.py", "def f():\n    return 1\n")
    _write(tmp_path / "one" / "test_tool.py", "")
    source = resolve_package(str(tmp_path / "one"), tmp_path / "work")
    assert source.entries == ("tool.py",)
    project = source.copy_to(tmp_path / "copy")
    assert project.modules() == ["tool.py"]
    assert project.test_paths() == ["test_tool.py"]


def test_an_sdist_archive(tmp_path: Path) -> None:
    staged = tmp_path / "shapes-0.1.0"
    shutil.copytree(EVAL_PACKAGE, staged)
    (staged / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: shapes\nVersion: 0.1.0\n")
    archive = tmp_path / "shapes-0.1.0.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(staged, arcname="shapes-0.1.0")
    source = resolve_package(str(archive), tmp_path / "work")
    assert (source.name, source.version, source.label) == ("shapes", "0.1.0", "shapes==0.1.0")
    assert source.copy_to(tmp_path / "copy").run_tests(120).status == "passed"


@pytest.mark.parametrize(
    ("spec", "code"),
    [("not a requirement !!", "EVAL_001"), ("", "EVAL_001")],
)
def test_a_bad_spec_is_a_coded_error(tmp_path: Path, spec: str, code: str) -> None:
    with pytest.raises(EvalError) as caught:
        resolve_package(spec, tmp_path)
    assert caught.value.code == code and caught.value.exit_code == 2


def test_paths_without_a_package(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    _write(tmp_path / "lone.py", "x = 1\n")
    for path in (tmp_path / "empty", tmp_path / "lone.py"):
        with pytest.raises(EvalError) as caught:
            resolve_package(str(path), tmp_path / "work")
        assert caught.value.code == "EVAL_003"


def test_a_requirement_pip_cannot_fetch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.delenv("PIP_FIND_LINKS", raising=False)
    with pytest.raises(EvalError) as caught:
        resolve_package("remora-no-such-package==0.0.1", tmp_path)
    assert caught.value.code == "EVAL_002"
    assert "remora-no-such-package" in caught.value.message


def test_a_corrupt_archive(tmp_path: Path) -> None:
    archive = tmp_path / "bad-1.0.tar.gz"
    archive.write_bytes(b"not a tar file")
    with pytest.raises(EvalError) as caught:
        resolve_package(str(archive), tmp_path / "work")
    assert caught.value.code == "EVAL_002"


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("pkg/tests/test_a.py", True),
        ("pkg/test/helpers.py", True),
        ("test_b.py", True),
        ("pkg/b_test.py", True),
        ("conftest.py", True),
        ("pkg/testing.py", False),
        ("pkg/contest.py", False),
        ("pkg/core.py", False),
    ],
)
def test_test_paths(path: str, expected: bool) -> None:
    assert is_test_path(path) is expected
