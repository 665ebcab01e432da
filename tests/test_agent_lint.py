"""The bundled lint agent end to end: scripted model, real tools, real workspace, scheduler."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from remora.model.base import ModelRequest, ToolCall
from remora.testing import call
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


# --- the model's step: the issues no tool may fix ---------------------------------------------

SHAPES = """import os


class Point:
    def __init__(self, x):
        self.x = x

    def __eq__(self, other):
        return isinstance(other, Point) and self.x == other.x


def describe(point):
    if point == None:
        return "nothing"
    return "a point"
"""
SHAPES_TESTS = """from pkg.shapes import Point, describe


def test_describe():
    assert describe(None) == "nothing"
    assert describe(Point(1)) == "a point"
"""


@pytest.fixture
def shapes(tmp_path: Path) -> Path:
    return write_tree(
        tmp_path / "proj",
        {"pkg/__init__.py": "", "pkg/shapes.py": SHAPES, "tests/test_shapes.py": SHAPES_TESTS},
    )


MODEL = {"use_model": True}


def asked(request: ModelRequest) -> str:
    """The question the host put to the model: the latest tool result's summary."""
    return str(json.loads(request.messages[-1].content)["response"]["summary"])


def rewrite(text: str) -> ToolCall:
    return call("rewrite_lines", code="E711", line=12, text=text)


def test_the_model_is_shown_the_issue_no_tool_may_fix_and_its_rewrite_is_kept(
    shapes: Path,
) -> None:
    outcome = run_operation(
        shapes, "lint", "pkg/shapes.py", [rewrite("if point is None:")], options=MODEL
    )
    assert outcome.model_calls == 1
    [request] = outcome.requests
    assert request.choices == {"code": ["E711"], "line": [12]}
    question = asked(request)
    assert "Issue E711 on line 12" in question
    assert "the module defines __eq__" in question  # why the host's rewrite refused it
    assert "    if point == None:" in question
    assert "would give:\n    if point is None:" in question  # ruff's unsafe fix, as evidence
    text = outcome.changed["pkg/shapes.py"]
    assert "    if point is None:\n" in text and "import os" not in text
    result = outcome.result
    assert result.status == "success", result
    assert result.summary == (
        "Fixed E711 x1, F401 x1 (the model's rewrite of E711 on line 12 was kept); no issue "
        "left; the tests that import it still pass (1 file(s))"
    )
    assert result.details["model_rewrites"] == [
        {
            "code": "E711",
            "line": 12,
            "start": 12,
            "end": 12,
            "before": "    if point == None:",
            "after": "    if point is None:",
        }
    ]
    assert result.details["model_refused"] == []
    assert result.details["model_asked"] == {"E711": 1}
    # What `remora eval --as-published` sums per row: the file as the project has it had
    # one issue no tool may fix; the model was asked about it and its rewrite was kept.
    assert result.details["counts"] == {
        "manual": 1,
        "left_for_a_person": 0,
        "model_asked": 1,
        "model_kept": 1,
        "model_refused": 0,
    }


def test_rewrites_that_change_more_or_break_the_tests_lose_none_of_the_hosts_fixes(
    shapes: Path,
) -> None:
    # A caller's object equal to None: `is None` differs from `== None` for it.
    nothing = "\n\nclass Nothing:\n    def __eq__(self, other):\n        return other is None\n"
    nothing += '\n\ndef test_nothing():\n    assert describe(Nothing()) == "nothing"\n'
    (shapes / "tests/test_shapes.py").write_text(SHAPES_TESTS + nothing)
    # The first rewrite removes E711, ruff is clean, but it inverts the condition: more
    # than the rule asks. The second is the rule's own change, and the tests refuse it.
    script = [rewrite("if point is not None:"), rewrite("if point is None:")]
    outcome = run_operation(shapes, "lint", "pkg/shapes.py", script, options=MODEL)
    assert outcome.model_calls == 2
    retry = asked(outcome.requests[1])
    assert retry.startswith(
        "Your rewrite was not kept: it changes the code beyond what E711 asks "
        "(only `==`/`!=` may become `is`/`is not`)."
    )
    text = outcome.changed["pkg/shapes.py"]
    assert "import os" not in text and "    if point == None:\n" in text
    result = outcome.result
    assert result.status == "success"
    assert result.summary.startswith("Fixed F401 x1 (2 rewrite(s) refused (last: it breaks")
    assert "1 for a person" in result.summary
    refused = result.details["model_refused"]
    assert [item["problem"] for item in refused] == [
        "it changes the code beyond what E711 asks (only `==`/`!=` may become `is`/`is not`)",
        "it breaks the tests tests/test_shapes.py::test_nothing",
    ]
    # Each refusal keeps the lines shown and what the model wrote, for a person to judge.
    assert [(item["before"], item["after"]) for item in refused] == [
        ("    if point == None:", "    if point is not None:"),
        ("    if point == None:", "    if point is None:"),
    ]
    assert result.details["counts"] == {
        "manual": 1,
        "left_for_a_person": 1,
        "model_asked": 1,
        "model_kept": 0,
        "model_refused": 2,
    }


def test_by_default_the_residue_is_left_for_the_person(shapes: Path) -> None:
    outcome = run_operation(shapes, "lint", "pkg/shapes.py", [])  # the default
    assert outcome.model_calls == 0
    assert outcome.result.summary.startswith("Fixed F401 x1; 1 for a person")
    assert "    if point == None:\n" in outcome.changed["pkg/shapes.py"]


def test_a_file_with_only_residue_the_model_cannot_rewrite_ends_failed_and_unchanged(
    shapes: Path,
) -> None:
    (shapes / "pkg/shapes.py").write_text(SHAPES.replace("import os\n", ""))
    script = [rewrite("if point = None"), rewrite("if point == None or None:")]
    outcome = run_operation(shapes, "lint", "pkg/shapes.py", script, options=MODEL)
    assert outcome.changed == {}
    assert outcome.result.status == "left"
    assert outcome.result.summary.startswith("Nothing changed (2 rewrite(s) refused")
