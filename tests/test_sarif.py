"""``remora analyze --format sarif``: a real subprocess, checked against the official SARIF
2.1.0 schema shipped with the package, and the log's parts one by one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from remora.orchestration import JobRecord, RunManifest
from remora.orchestration.sarif import SARIF_SCHEMA_PATH, FileChange, sarif_log
from remora.workspace import WorkspaceManager
from tests.stores import write_tree

REPO = Path(__file__).resolve().parents[1]
SCRIPTED = REPO / "tests" / "support" / "scripted_cli.py"
MODULE = """\
import os
import sys


def load(path):
    try:
        return open(path).read()
    except OSError:
        raise ValueError(path)


def size(items):
    if items == None:
        return 0
    return len(items)
"""
HOST_ONLY = ["--set", "operations.docstring.options.use_model=false"]


def validate(log: dict[str, Any]) -> None:
    schema = json.loads(SARIF_SCHEMA_PATH.read_text(encoding="utf-8"))
    validator = jsonschema.validators.validator_for(schema)
    validator.check_schema(schema)
    validator(schema, format_checker=validator.FORMAT_CHECKER).validate(log)


def apply_replacements(text: str, change: dict[str, Any]) -> str:
    """``text`` with a SARIF artifactChange's replacements applied (lines and columns from
    1, code points), last first so earlier regions stay where they are."""
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(line: int, column: int) -> int:
        return (starts[line - 1] if line <= len(lines) else len(text)) + column - 1

    for replacement in reversed(change["replacements"]):
        region = replacement["deletedRegion"]
        start = offset(region["startLine"], region["startColumn"])
        end = offset(region["endLine"], region["endColumn"])
        inserted = replacement.get("insertedContent", {}).get("text", "")
        text = text[:start] + inserted + text[end:]
    return text


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write_tree(
        tmp_path / "proj",
        {
            "pyproject.toml": "[project]\nname = 'proj'\n",
            "pkg/__init__.py": "",
            "pkg/mod.py": MODULE,
        },
    )


def analyze(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPTED), *HOST_ONLY, "analyze", *args],
        cwd=project,
        env={**os.environ, "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_analyze_writes_valid_sarif_with_issues_left_jobs_left_and_fixes(project: Path) -> None:
    done = analyze(project, "pkg/mod.py", "--ops", "lint,docstring", "--format", "sarif")
    assert done.returncode == 0, done.stderr  # the docstring jobs left their work: no failure
    log = json.loads(done.stdout)
    validate(log)
    run = log["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "remora" and driver["version"]
    rules = {rule["id"]: rule for rule in driver["rules"]}
    assert {"B904", "remora/lint", "remora/docstring"} <= set(rules)
    assert rules["B904"]["helpUri"].startswith("https://docs.astral.sh/ruff/rules/")
    by_rule: dict[str, list[dict[str, Any]]] = {}
    for result in run["results"]:
        by_rule.setdefault(result["ruleId"], []).append(result)
        assert driver["rules"][result["ruleIndex"]]["id"] == result["ruleId"]

    # the lint issue no tool may fix, where it is in the project's file (the pending
    # fixes remove two import lines above it: the job's own version has it on line 7)
    (b904,) = by_rule["B904"]
    assert b904["level"] == "warning"
    where = b904["locations"][0]["physicalLocation"]
    assert where["artifactLocation"] == {"uri": "pkg/mod.py", "uriBaseId": "%SRCROOT%"}
    assert where["region"]["startLine"] == where["region"]["endLine"] == 9
    line = MODULE.splitlines()[8]
    start, end = where["region"]["startColumn"], where["region"]["endColumn"]
    assert line[start - 1 : end - 1] == "raise ValueError(path)"

    # the docstring jobs that left their work to the person
    left = by_rule["remora/docstring"]
    assert sorted(r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in left) == [
        5,
        12,
    ]
    assert all(r["level"] == "warning" and "left for you" in r["message"]["text"] for r in left)

    # the lint job's change as a fix: applied to the file, it gives the workspace's version
    (lint,) = by_rule["remora/lint"]
    assert lint["level"] == "note" and "Fixed" in lint["message"]["text"]
    (fix,) = lint["fixes"]
    (change,) = fix["artifactChanges"]
    assert change["artifactLocation"]["uri"] == "pkg/mod.py"
    fixed = apply_replacements(MODULE, change)
    with WorkspaceManager(project).open(lint["properties"]["workspaceId"]) as workspace:
        assert fixed == workspace.read("pkg/mod.py").decode()
    assert "import os" not in fixed and "if items is None:" in fixed
    assert (project / "pkg/mod.py").read_text() == MODULE  # nothing applied


def test_sarif_is_refused_where_no_run_is_written(project: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPTED), "discover", "pkg", "--format", "sarif"],
        cwd=project,
        env={**os.environ, "COLUMNS": "300"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert "sarif is written by 'remora analyze' and 'remora retry' only" in done.stderr


def manifest(*jobs: JobRecord) -> RunManifest:
    return RunManifest(
        run_id="20261206-000000000-abcdef",
        project_root="/work/proj",
        operations=["lint", "docstring"],
        jobs=list(jobs),
        status="completed",
    )


def test_levels_messages_and_locations_of_job_results() -> None:
    log = sarif_log(
        manifest(
            JobRecord(
                job_id="docstring-1",
                operation="docstring",
                node_id="1",
                qualname="Box.open",
                file_path="pkg/box.py",
                start_line=3,
                status="failed",
                error="RUN_005: the job took longer than 120 s",
            ),
            JobRecord(
                job_id="docstring-2",
                operation="docstring",
                node_id="2",
                qualname="Box.close",
                file_path="pkg/box.py",
                start_line=9,
                status="partial",
                summary="Docstring of Box.close: Close it. Left for you: describe force",
            ),
            JobRecord(job_id="lint-3", operation="lint", node_id="3", status="skipped"),
        )
    )
    validate(log)
    results = log["runs"][0]["results"]
    assert [(r["ruleId"], r["level"]) for r in results] == [
        ("remora/docstring", "error"),
        ("remora/docstring", "warning"),
    ]
    assert results[0]["message"]["text"] == (
        "docstring Box.open: RUN_005: the job took longer than 120 s"
    )
    location = results[1]["locations"][0]
    assert location["physicalLocation"]["region"] == {"startLine": 9}
    assert location["logicalLocations"] == [{"fullyQualifiedName": "Box.close"}]
    assert log["runs"][0]["originalUriBaseIds"]["%SRCROOT%"]["uri"] == "file:///work/proj/"


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("a\nb\nc\n", "a\nB\nc\n"),
        ("a\nb", "a\nb\nc"),  # no newline at the end, a line added after it
        ("a\nb\n", "x\na\nb\n# end\n"),
        ("a\nb\nc\n", ""),
        ("def f():\n    return 1\n", 'def f():\n    """One."""\n    return 1\n'),
    ],
)
def test_fix_replacements_turn_the_project_file_into_the_change(before: str, after: str) -> None:
    job = JobRecord(
        job_id="lint-1",
        operation="lint",
        node_id="1",
        file_path="m.py",
        start_line=1,
        status="success",
        workspace_id="lint-1-aaaaaa",
        changed_files=["m.py"],
        review="pending",
        summary="Fixed things",
    )
    log = sarif_log(manifest(job), {"lint-1-aaaaaa": [FileChange("m.py", before, after)]})
    validate(log)
    (result,) = log["runs"][0]["results"]
    (change,) = result["fixes"][0]["artifactChanges"]
    assert apply_replacements(before, change) == after


def test_a_new_file_is_one_insertion() -> None:
    job = JobRecord(
        job_id="test-1",
        operation="test",
        node_id="1",
        file_path="pkg/m.py",
        status="success",
        workspace_id="test-1-aaaaaa",
        changed_files=["tests/test_m.py"],
        review="pending",
    )
    text = "def test_it():\n    assert True\n"
    log = sarif_log(manifest(job), {"test-1-aaaaaa": [FileChange("tests/test_m.py", None, text)]})
    validate(log)
    (change,) = log["runs"][0]["results"][0]["fixes"][0]["artifactChanges"]
    assert change["artifactLocation"]["uri"] == "tests/test_m.py"
    assert apply_replacements("", change) == text


def test_lint_issues_map_to_the_project_lines_and_malformed_details_are_ignored() -> None:
    before = "import os\nimport sys\n\n\ndef f():\n    l = 1\n    return l\n"
    after = "\n\ndef f():\n    l = 1\n    return l\n"
    issue = {"code": "E741", "line": 4, "column": 5, "end_line": 4, "end_column": 6}
    job = JobRecord(
        job_id="lint-1",
        operation="lint",
        node_id="1",
        file_path="m.py",
        start_line=1,
        status="success",
        workspace_id="ws",
        changed_files=["m.py"],
        review="pending",
        details={"for_a_person": [issue, {"code": 3}, "E501"]},
    )
    log = sarif_log(manifest(job), {"ws": [FileChange("m.py", before, after)]})
    validate(log)
    (issue_result,) = [r for r in log["runs"][0]["results"] if r["ruleId"] == "E741"]
    region = issue_result["locations"][0]["physicalLocation"]["region"]
    assert region == {"startLine": 6, "endLine": 6, "startColumn": 5, "endColumn": 6}
    assert before.splitlines()[5][4:5] == "l"
