"""The bundled lint agent end to end: scripted model, real tools, real workspace, scheduler."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.stores import write_tree
from tests.support.agent_run import run_operation

MODULE = """import os
import sys


def first(items, default=[]):
    try:
        return items[0]
    except:
        return default


def argv():
    return sys.argv
"""
TESTS = """from pkg.mod import first


def test_first():
    assert first([1]) == 1
    assert first([]) == []
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write_tree(
        tmp_path / "proj",
        {"pkg/__init__.py": "", "pkg/mod.py": MODULE, "tests/test_mod.py": TESTS},
    )


def test_the_host_fixes_everything_and_the_tests_still_pass_without_the_model(
    project: Path,
) -> None:
    outcome = run_operation(project, "lint", "pkg/mod.py", [])
    assert outcome.result.status == "success", outcome.result
    assert outcome.model_calls == 0
    text = outcome.changed["pkg/mod.py"]
    assert "import os" not in text
    assert "def first(items, default=None):" in text
    assert "except Exception:" in text
    assert "noqa" not in text
    assert outcome.result.summary == (
        "Fixed B006 x1, E722 x1, F401 x1; no issue left;"
        " the tests that import it still pass (1 file(s))"
    )
    details = outcome.result.details
    assert details["host_only"] is True
    assert details["tests_run"] == 1 and details["fixable_left"] == 0
    assert details["refused"] == []
    assert outcome.result.telemetry.turns == 0
    assert (project / "pkg/mod.py").read_text() == MODULE  # only review applies changes


def test_fixes_that_break_the_tests_are_undone_not_offered(project: Path) -> None:
    breaking = TESTS + "\n\ndef test_shared_default():\n    assert first.__defaults__ == ([],)\n"
    (project / "tests/test_mod.py").write_text(breaking)
    outcome = run_operation(project, "lint", "pkg/mod.py", [])
    assert outcome.result.status == "failed"
    assert outcome.result.details["broken_tests"] == ["tests/test_mod.py::test_shared_default"]
    assert outcome.changed == {}
    assert outcome.model_calls == 0


def test_manual_issues_left_are_named_for_a_person(project: Path) -> None:
    (project / "pkg/mod.py").write_text("import os\n\nl = 1\n")  # F401 fixable, E741 manual
    outcome = run_operation(project, "lint", "pkg/mod.py", [])
    assert outcome.result.status == "success"
    assert outcome.result.summary.startswith("Fixed F401 x1; 1 for a person")
    assert outcome.changed["pkg/mod.py"] == "\nl = 1\n"  # ruff removes the import line only


def test_a_file_with_nothing_to_fix_is_skipped_without_the_model(project: Path) -> None:
    (project / "pkg/mod.py").write_text("l = 1\n")  # E741 only: no automatic fix
    outcome = run_operation(project, "lint", "pkg/mod.py", [])
    assert outcome.result.status == "skipped"
    assert "none with a fix" in outcome.result.summary and "E741" in outcome.result.summary
    assert outcome.model_calls == 0
