"""The whole ``run_eval`` pipeline on the synthetic package with scripted models: the four
operations from real tool runs, the report files, the progress, and its failure handling."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from remora.errors import EvalError
from remora.evaluation.context import EvalContext, pick, seeded
from remora.evaluation.package import resolve_package
from remora.evaluation.report import OperationReport, Score
from remora.evaluation.run import EvalOptions, run_eval
from remora.model.base import ModelRequest
from remora.operations import installed_operations
from remora.testing import Step
from tests.support.eval_context import EVAL_PACKAGE, RecordingProgress, scripted_session
from tests.support.policy_characterize import sample_data_policy
from tests.support.policy_characterize import test_policy as characterization_policy
from tests.support.policy_docstring import docstring_policy
from tests.support.policy_lint import lint_policy

OPERATIONS = installed_operations().evaluators()


def every_agent(request: ModelRequest) -> Step:
    """Each agent's scripted policy, chosen by the tools the request offers."""
    names = {spec.name for spec in request.tools}
    if "rewrite_lines" in names:
        return lint_policy(request)
    if "write_docstring" in names:
        return docstring_policy(request)
    if "write_tests" in names:
        return characterization_policy(request)
    return sample_data_policy(request)


def test_all_four_operations_on_the_synthetic_package(tmp_path: Path) -> None:
    progress = RecordingProgress()
    out = tmp_path / "out"
    options = EvalOptions(spec=str(EVAL_PACKAGE), limit=1, seed=3, out=out, test_timeout=120)
    report = run_eval(
        options, evaluators=OPERATIONS, session=scripted_session(every_agent), progress=progress
    )

    assert report.package == "eval_package" and report.seed == 3 and report.limit == 1
    assert report.command.endswith("--ops lint,docstring,test,sample_data --limit 1 --seed 3")
    assert report.test_suite is not None and report.test_suite.status == "passed"
    assert [item.operation for item in report.reports] == list(OPERATIONS)
    for item in report.reports:
        assert item.error is None, item.error
        assert len(item.selection) == 1
        assert any(score.kind == "baseline" for score in item.scores)
        assert [score for score in item.scores if score.kind == "remora"]
        assert item.remora and all(figures.jobs >= 1 for figures in item.remora)
        for figures in item.remora:
            assert figures.model_share is not None and 0 <= figures.model_share <= 1
        assert progress.advanced(item.operation) > 0
    assert progress.advanced("setup") == 1
    saved = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert saved["reports"][0]["selection"] == report.reports[0].selection
    markdown = (out / "report.md").read_text(encoding="utf-8")
    for operation in OPERATIONS:
        assert f"### {operation}" in markdown
    assert "def slug" in (EVAL_PACKAGE / "shapes" / "text.py").read_text(encoding="utf-8")


def _fine(context: EvalContext) -> OperationReport:
    return OperationReport(
        operation="docstring",
        unit="functions",
        selection=[context.original.modules()[0]],
        columns=[],
        scores=[Score(tool="x", kind="baseline")],
    )


def _broken(context: EvalContext) -> OperationReport:
    raise ValueError("boom")


def test_a_broken_operation_loses_nothing_else(
    tmp_path: Path,
) -> None:
    evaluators = {**OPERATIONS, "lint": _broken, "docstring": _fine}
    options = EvalOptions(spec=str(EVAL_PACKAGE), operations=["lint", "docstring"])
    report = run_eval(options, evaluators=evaluators, session=scripted_session(every_agent))
    lint, docstring = report.reports
    assert lint.error == "internal error: ValueError: boom"
    assert "ValueError" in lint.details["traceback"]
    assert docstring.error is None and docstring.selection == ["shapes/__init__.py"]


@pytest.mark.parametrize(
    ("changes", "code"),
    [
        ({"operations": ["lint", "typo"]}, "EVAL_004"),
        ({"limit": 0}, "EVAL_005"),
        ({"seed": -1}, "EVAL_005"),
    ],
)
def test_options_are_checked_before_any_work(
    tmp_path: Path, changes: dict[str, object], code: str
) -> None:
    options = EvalOptions.model_validate({"spec": "toolz==1.0.0", **changes})
    with pytest.raises(EvalError) as caught:
        run_eval(options, evaluators=OPERATIONS, session=scripted_session(every_agent))
    assert caught.value.code == code


def test_the_command_repeats_the_run() -> None:
    options = EvalOptions(spec="toolz==1.0.0", operations=["test"], limit=4, seed=2)
    assert options.command(["model.backend=openai"]) == (
        "remora --set model.backend=openai eval toolz==1.0.0 --ops test --limit 4 --seed 2"
    )


def test_the_selection_is_seeded() -> None:
    items = list(range(20))
    first = pick(items, 5, seeded(0, "functions"))
    assert first == pick(items, 5, seeded(0, "functions")) and first == sorted(first)
    assert pick(items, 5, seeded(0, "modules")) != first
    assert pick(items, 5, seeded(1, "functions")) != first
    assert pick(items, 50, seeded(0, "functions")) == items


def test_a_selector_runs_exactly_its_node(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "mod.py").write_text(
        "def outer(values):\n"
        "    def inner(value):\n"
        "        return value + 1\n"
        "    return [inner(value) for value in values]\n"
    )
    project = resolve_package(str(root), tmp_path / "work").copy_to(tmp_path / "copy")
    run = scripted_session(every_agent).run(project, ["pkg/mod.py::outer"], ["docstring"])
    assert [job.qualname for job in run.jobs] == ["outer"]
    assert run.figures("remora", "docstring").jobs == 1


def test_no_operation_that_can_be_measured_is_eval_004() -> None:
    options = EvalOptions(spec="toolz==1.0.0")
    with pytest.raises(EvalError) as caught:
        run_eval(options, evaluators={}, session=scripted_session(every_agent))
    assert caught.value.code == "EVAL_004"
