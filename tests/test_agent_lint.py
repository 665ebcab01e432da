"""The bundled lint agent end to end: scripted model, real tools, real workspace, scheduler."""

from __future__ import annotations

from pathlib import Path

import pytest

from remora.testing import call
from tests.stores import write_tree
from tests.support.agent_run import ToolOutcomes, run_operation

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


IDEAL = [
    call("run_linter"),
    call("apply_fix", code="E722", line=8),
    call("apply_fix", code="B006", line=5),
    call("apply_fix", code="F401", line=1),
    call("submit_result", summary="Fixed an unused import, a mutable default, a bare except."),
]


def test_the_ideal_sequence_fixes_everything_and_the_tests_still_pass(project: Path) -> None:
    outcome = run_operation(project, "lint", "pkg/mod.py", IDEAL)
    assert outcome.result.status == "success", outcome.result
    text = outcome.changed["pkg/mod.py"]
    assert "import os" not in text
    assert "def first(items, default=None):" in text
    assert "except Exception:" in text
    assert "noqa" not in text
    assert outcome.result.summary == (
        "Fixed B006 x1, E722 x1, F401 x1; 0 issue(s) left;"
        " the tests that import it still pass (1 file(s))"
    )
    assert outcome.result.details["tests_run"] == 1
    assert outcome.result.details["fixable_left"] == 0
    assert outcome.tools == ToolOutcomes(
        ["run_linter", "apply_fix", "apply_fix", "apply_fix", "submit_result"], errors=0
    )
    assert (project / "pkg/mod.py").read_text() == MODULE  # only review applies changes


def test_a_failed_fix_is_reported_and_the_model_goes_on(project: Path) -> None:
    script = [
        IDEAL[0],
        call("apply_fix", code="E501", line=3),  # not reported: the tool says what is
        *IDEAL[1:],
    ]
    outcome = run_operation(project, "lint", "pkg/mod.py", script)
    assert outcome.result.status == "success"
    assert outcome.tools.errors == 1
    first_error = outcome.tool_summaries[1]
    assert "no E501 on line 3" in first_error and "B006 line 5" in first_error


def test_an_invalid_argument_is_refused_before_any_tool_runs(project: Path) -> None:
    script = [IDEAL[0], call("apply_fix", code="F401"), *IDEAL[1:]]
    outcome = run_operation(project, "lint", "pkg/mod.py", script)
    assert outcome.result.status == "success"
    assert outcome.result.telemetry.invalid_calls == 1
    assert "missing required argument 'line'" in outcome.tool_summaries[1]
    assert outcome.changed["pkg/mod.py"].startswith("import sys\n")


def test_fixes_that_break_the_tests_are_undone_not_offered(project: Path) -> None:
    breaking = TESTS + "\n\ndef test_shared_default():\n    assert first.__defaults__ == ([],)\n"
    (project / "tests/test_mod.py").write_text(breaking)
    outcome = run_operation(project, "lint", "pkg/mod.py", IDEAL)
    assert outcome.result.status == "failed"
    assert outcome.result.details["broken_tests"] == ["tests/test_mod.py::test_shared_default"]
    assert outcome.changed == {}


def test_a_file_with_nothing_to_fix_is_skipped_without_the_model(project: Path) -> None:
    (project / "pkg/mod.py").write_text("l = 1\n")  # E741 only: no automatic fix
    outcome = run_operation(project, "lint", "pkg/mod.py", [])
    assert outcome.result.status == "skipped"
    assert "none with a fix" in outcome.result.summary and "E741" in outcome.result.summary
    assert outcome.model_calls == 0
