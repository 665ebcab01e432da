"""The bundled docstring agent end to end: scripted model, real tools, real workspace."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from remora.testing import call
from tests.stores import write_tree
from tests.support.agent_run import run_operation

MODULE = '''"""Prices."""


def apply_discount(price_cents, percent):
    if percent < 0 or percent > 100:
        raise ValueError("percent must be between 0 and 100")
    return price_cents * (100 - percent) // 100


def documented(a, b):
    """Multiply two numbers.

    Args:
        a: The first.
        b: The second.

    Returns:
        The product.
    """
    return a * b


def _helper(x):
    return x
'''
GOOD = "Return the price after taking off a percentage discount."
IDEAL = [
    call("read_signature"),
    call("write_docstring", summary=GOOD),
    call("check_docstring"),
    call("submit_result", summary="Wrote the docstring."),
]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "proj", {"prices.py": MODULE})


def _docstring(text: str, name: str) -> str | None:
    tree = ast.parse(text)
    node = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)
    return ast.get_docstring(node)


def test_the_ideal_sequence_writes_a_clean_docstring(project: Path) -> None:
    outcome = run_operation(project, "docstring", "prices.py", IDEAL, qualname="apply_discount")
    assert outcome.result.status == "success", outcome.result
    assert outcome.result.details["problems"] == []
    assert outcome.result.summary == f"Docstring of apply_discount: {GOOD}"
    written = _docstring(outcome.changed["prices.py"], "apply_discount")
    assert written is not None
    assert written.startswith(GOOD)
    assert "Args:\n    price_cents:" in written
    assert "Raises:\n    ValueError: Percent must be between 0 and 100." in written
    assert "Returns:" in written
    assert outcome.tools.errors == 0


def test_numpy_style_comes_from_the_options(project: Path) -> None:
    outcome = run_operation(
        project,
        "docstring",
        "prices.py",
        IDEAL,
        qualname="apply_discount",
        options={"style": "numpy"},
    )
    assert outcome.result.status == "success", outcome.result
    written = _docstring(outcome.changed["prices.py"], "apply_discount") or ""
    assert "Parameters\n----------" in written


def test_a_summary_that_repeats_the_name_is_refused(project: Path) -> None:
    script = [IDEAL[0], call("write_docstring", summary="Apply discount."), *IDEAL[1:]]
    outcome = run_operation(project, "docstring", "prices.py", script, qualname="apply_discount")
    assert outcome.result.status == "success"
    assert outcome.tools.errors == 1
    assert "only repeats the name `apply_discount`" in outcome.tool_summaries[1]
    assert (_docstring(outcome.changed["prices.py"], "apply_discount") or "").startswith(GOOD)


def test_an_invalid_argument_is_refused_before_any_tool_runs(project: Path) -> None:
    script = [IDEAL[0], call("write_docstring", text=GOOD), *IDEAL[1:]]
    outcome = run_operation(project, "docstring", "prices.py", script, qualname="apply_discount")
    assert outcome.result.status == "success"
    assert outcome.result.telemetry.invalid_calls == 1
    assert "missing required argument 'summary'" in outcome.tool_summaries[1]


def test_when_no_summary_is_usable_the_job_fails_and_changes_nothing(project: Path) -> None:
    copied = call("write_docstring", summary="def apply_discount(price_cents, percent):")
    script = [IDEAL[0], copied, call("submit_result", summary="done")]
    outcome = run_operation(project, "docstring", "prices.py", script, qualname="apply_discount")
    assert outcome.result.status == "failed"
    assert "no summary the model proposed was usable" in (outcome.result.error or "")
    assert outcome.changed == {}


def test_clean_and_private_nodes_are_skipped_without_the_model(project: Path) -> None:
    clean = run_operation(project, "docstring", "prices.py", [], qualname="documented")
    assert clean.result.status == "skipped" and clean.model_calls == 0
    assert "complete and clean" in clean.result.summary
    private = run_operation(project, "docstring", "prices.py", [], qualname="_helper")
    assert private.result.status == "skipped" and private.model_calls == 0
    assert "include_private" in private.result.summary


def test_test_code_is_skipped_unless_asked(tmp_path: Path) -> None:
    source = "def test_total():\n    assert sum([1]) == 1\n"
    project = write_tree(tmp_path / "proj", {"tests/test_total.py": source})
    skipped = run_operation(project, "docstring", "tests/test_total.py", [])
    assert skipped.result.status == "skipped" and "include_tests" in skipped.result.summary
    asked = run_operation(
        project,
        "docstring",
        "tests/test_total.py",
        [
            call("read_signature"),
            call("write_docstring", summary="Check that sum adds one."),
            call("check_docstring"),
            call("submit_result", summary="done"),
        ],
        options={"include_tests": True},
    )
    assert asked.result.status == "success", asked.result


def test_missing_only_leaves_existing_docstrings_alone(project: Path) -> None:
    (project / "prices.py").write_text(
        MODULE.replace('"""Multiply two numbers.\n', '"""Multiply.\n\n    Args:\n        z: no.\n')
    )
    outcome = run_operation(
        project,
        "docstring",
        "prices.py",
        [],
        qualname="documented",
        options={"missing_only": True},
    )
    assert outcome.result.status == "skipped"
    assert "missing_only" in outcome.result.summary
