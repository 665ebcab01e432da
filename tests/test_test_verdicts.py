"""test_verdict: tests that pass but kill none of the function's mutants are not a success.

The host's own pipeline runs on a small project (doctest argument lists observed in the
sandbox, tests written, run twice with coverage, then the function's mutants run against
them), the way a test job does.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from remora.operations.characterize import steps
from remora.orchestration.runs import JobRecord
from remora.tools.capabilities import CapabilityContext
from tests.stores import capability_context, write_tree
from tests.support.agent_run import run_operation

# note's result is None whatever its branch does, so no test can tell its four mutants
# ('>' to '>=', 100, '-' to '+', 1) from the function; double's result pins its mutants.
MODULE = '''"""One function whose result says nothing, one whose result says it all."""


def note(x):
    """Note it.

    >>> note(3)
    """
    if x > 100:
        x = x - 1


def double(n):
    """Double.

    >>> double(2)
    4
    """
    return n * 2
'''

PATH = "pkg/mod.py"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "proj", {"pkg/__init__.py": "", PATH: MODULE})


@pytest.fixture
def ctx(root: Path, tmp_path: Path) -> CapabilityContext:
    return capability_context(root, {"workspace_id": str(tmp_path)})


def test_tests_that_kill_no_mutant_are_partial(ctx: CapabilityContext) -> None:
    """The tests pass twice, but no mutant of the function fails them: they pin little."""
    verdict = steps.test_verdict(ctx, PATH, "note")
    details = verdict["details"]
    assert verdict["status"] == "partial", verdict
    assert details["mutants_killed"] == 0 and details["mutants_measured"] >= 1
    tests = len(details["tests"])
    assert verdict["summary"].startswith(
        f"{tests} characterization test(s) in {details['test_file']} pass twice but kill none "
        f"of the function's {details['mutants_measured']} mutants: they pin little; lines "
    )
    assert "mutants killed" not in verdict["summary"]


def test_tests_that_kill_a_mutant_are_a_success(ctx: CapabilityContext) -> None:
    """The usual summary, with the mutants killed."""
    verdict = steps.test_verdict(ctx, PATH, "double")
    assert verdict["status"] == "success", verdict
    assert verdict["details"]["mutants_killed"] >= 1
    assert "pass twice; lines " in verdict["summary"]
    assert "mutants killed " in verdict["summary"]


def test_a_partial_test_job_is_still_offered_for_review(root: Path) -> None:
    """The job ends ``partial`` with its test file kept in the workspace, pending review."""
    outcome = run_operation(root, "test", PATH, [], qualname="note")
    assert outcome.result.status == "partial", outcome.result
    assert "kill none of the function's" in outcome.result.summary
    assert outcome.result.details["test_file"] in outcome.changed
    assert JobRecord.from_result(outcome.result).review == "pending"
