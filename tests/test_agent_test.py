"""The bundled test agent end to end: scripted model, real tools, real workspace, and the
generated tests run again, twice, on the unmodified project."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from remora.testing import call
from tests.stores import write_tree
from tests.support.agent_run import Outcome, run_operation

MODULE = '''"""Small helpers."""


def clamp(value, low, high):
    if low > high:
        raise ValueError("low must not exceed high")
    if value < low:
        return low
    if value > high:
        return high
    return value


def risky(n):
    if n == 13:
        import os

        os._exit(1)
    return n * 2


def parse_flag(text):
    if text.startswith("--"):
        return text[2:]
    return None


def _private(x):
    return x
'''
CLAMP_CASES = ["5, 0, 10", "-3, 0, 10", "20, 0, 10", "1, 2, 0"]


MODEL = {"model_inputs": True}
"""The model proposes inputs only with this option (by default the host's tests are the job)."""


def ideal(cases: list[str]) -> list:  # type: ignore[type-arg]
    """The model's decision (the host runs, writes, measures and submits); a submit in case
    the host asks for more while coverage still grows."""
    return [call("propose_inputs", cases=cases), call("submit_result")]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "proj", {"helpers.py": MODULE, "tests/__init__.py": ""})


def run_generated(project: Path, outcome: Outcome) -> subprocess.CompletedProcess[str]:
    """Write the job's test file into the project and run it with plain pytest."""
    [path] = [p for p in outcome.changed if p.startswith("tests/")]
    (project / path).write_text(outcome.changed[path])
    env = {**os.environ, "PYTHONPATH": str(project)}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", path],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_ideal_sequence_writes_tests_that_pass_twice_with_full_coverage(
    project: Path,
) -> None:
    outcome = run_operation(
        project, "test", "helpers.py", ideal(CLAMP_CASES), qualname="clamp", options=MODEL
    )
    assert outcome.result.status == "success", outcome.result
    details = outcome.result.details
    assert details["test_file"] == "tests/test_helpers.py"
    assert (details["line_rate"], details["branch_rate"]) == (1.0, 1.0)
    assert details["lines_total"] == 7 and details["branches_total"] == 6
    text = outcome.changed["tests/test_helpers.py"]
    pattern = 'match="^low\\\\ must\\\\ not\\\\ exceed\\\\ high$"'
    assert f"with pytest.raises(ValueError, {pattern}):" in text
    pinned = [
        tuple(int(v) for v in found)
        for found in re.findall(r"assert clamp\((-?\d+), (-?\d+), (-?\d+)\) == (-?\d+)", text)
    ]
    # one test per behaviour, each of the three results: below low, above high, between
    assert any(value < low <= high and result == low for value, low, high, result in pinned)
    assert any(value > high >= low and result == high for value, low, high, result in pinned)
    assert any(low <= value <= high and result == value for value, low, high, result in pinned)
    assert len(details["tests"]) == 4 and outcome.tools.errors == 0
    for _ in range(2):
        done = run_generated(project, outcome)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "4 passed" in done.stdout


def test_a_crashing_input_is_left_out_and_the_job_goes_on(project: Path) -> None:
    outcome = run_operation(
        project, "test", "helpers.py", ideal(["13", "4"]), qualname="risky", options=MODEL
    )
    assert outcome.result.status == "success", outcome.result
    text = outcome.changed["tests/test_helpers.py"]
    assert "risky(13)" not in text
    assert "assert risky(" in text
    assert run_generated(project, outcome).returncode == 0


def test_an_invalid_proposal_is_refused_with_the_reason_and_the_job_recovers(
    project: Path,
) -> None:
    script = [
        call("propose_inputs", values=["5, 0, 10"]),  # no 'cases': refused before any tool runs
        call("propose_inputs", cases=["open('x')", "5, 0, 10"]),
        call("submit_result"),
    ]
    outcome = run_operation(project, "test", "helpers.py", script, qualname="clamp", options=MODEL)
    assert outcome.result.status == "success", outcome.result
    assert outcome.result.telemetry.invalid_calls == 1
    assert "Rejected open('x'): the name 'open' is not available" in outcome.tool_summaries[1]


def test_model_proposals_add_behaviours_and_the_ablation_switch_leaves_them_out(
    project: Path,
) -> None:
    script = ideal(["'--verbose'"])
    with_model = run_operation(
        project, "test", "helpers.py", script, qualname="parse_flag", options=MODEL
    )
    assert with_model.result.status == "success", with_model.result
    assert 'parse_flag("--verbose") == "verbose"' in with_model.changed["tests/test_helpers.py"]
    assert with_model.result.details["line_rate"] == 1.0
    host_only = run_operation(
        project,
        "test",
        "helpers.py",
        script,
        qualname="parse_flag",
        options={"model_inputs": False},
    )
    # the host's tests (parse_flag('a') is None) kill none of its mutants
    assert host_only.result.status == "partial", host_only.result
    assert "--verbose" not in host_only.changed["tests/test_helpers.py"]
    assert host_only.result.details["line_rate"] < 1.0


def test_by_default_the_host_writes_the_tests_without_the_model(project: Path) -> None:
    outcome = run_operation(project, "test", "helpers.py", ideal(["'--x'"]), qualname="parse_flag")
    assert outcome.model_calls == 0
    assert outcome.result.status == "partial", outcome.result
    assert outcome.result.details["host_only"] is True
    assert "--x" not in outcome.changed["tests/test_helpers.py"]
    assert run_generated(project, outcome).returncode == 0


def test_the_model_sees_the_lines_the_hosts_tests_leave_uncovered(project: Path) -> None:
    outcome = run_operation(
        project, "test", "helpers.py", ideal(["'--x'"]), qualname="parse_flag", options=MODEL
    )
    evidence = outcome.requests[0].messages[1].content
    assert "The host's argument lists ran" in evidence
    marked = [line for line in evidence.splitlines() if "# never" in line]
    assert marked and all(line.split()[0].isdigit() for line in marked)
    assert outcome.result.details["line_rate"] == 1.0


def test_submitting_early_still_offers_only_verified_tests(project: Path) -> None:
    script = [call("submit_result", summary="done")]
    outcome = run_operation(project, "test", "helpers.py", script, qualname="clamp", options=MODEL)
    assert outcome.result.status == "success", outcome.result
    assert outcome.result.details["tests"]
    assert run_generated(project, outcome).returncode == 0


def test_private_functions_are_skipped_without_the_model(project: Path) -> None:
    outcome = run_operation(project, "test", "helpers.py", [], qualname="_private")
    assert outcome.result.status == "skipped" and outcome.model_calls == 0
    assert "include_private" in outcome.result.summary


def test_write_test_file_is_offered_only_when_the_option_asks_for_it(project: Path) -> None:
    default = run_operation(
        project, "test", "helpers.py", ideal(CLAMP_CASES), qualname="clamp", options=MODEL
    )
    assert "write_test_file" not in default.offered_tools
    content = (
        "from helpers import clamp\n\n\n"
        "def test_inside():\n    assert clamp(5, 0, 10) == 5\n\n\n"
        "def test_wrong():\n    assert clamp(50, 0, 10) == 50\n"
    )
    fixed = content.replace("== 50", "== 10")
    script = [
        call("write_test_file", content=content),
        call("write_test_file", content=fixed),
        call("submit_result", summary="done"),
    ]
    larger = run_operation(
        project,
        "test",
        "helpers.py",
        script,
        qualname="clamp",
        options={**MODEL, "write_test_file": True},
    )
    assert "write_test_file" in larger.offered_tools
    assert larger.result.status == "success", larger.result
    assert larger.tools.errors == 1  # the file with a failing test was not kept
    assert larger.changed["tests/test_helpers.py"] == fixed


WHEN = """from datetime import date


def first_of(year, month):
    return date(year, month, 1)
"""


def test_a_standard_class_the_module_imports_by_name_is_written_as_the_module_names_it(
    tmp_path: Path,
) -> None:
    """``datetime.date(2024, 3, 1)`` is how the value prints; the module knows it as ``date``,
    so the test imports ``date`` from the module and the test passes (it used to be left
    out: no generated test passed)."""
    project = write_tree(tmp_path / "proj", {"when.py": WHEN, "tests/conftest.py": ""})
    outcome = run_operation(project, "test", "when.py", [], qualname="first_of")
    assert outcome.result.status == "success", outcome.result
    text = outcome.changed["tests/test_when.py"]
    assert "from when import date, first_of" in text
    assert "first_of(2024, 2) == date(2024, 2, 1)" in text  # the telling base: not 1, 1
    assert run_generated(project, outcome).returncode == 0
    fixtures = run_operation(project, "sample_data", "when.py", [], qualname="first_of")
    written = fixtures.changed["fixtures/when/first_of.json"]
    assert '"$python": "date(2024, 2, 1)"' in written  # evaluable with the module's names
