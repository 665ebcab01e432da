"""The eval report's text forms: cells, the markdown a user pastes into an issue."""

from __future__ import annotations

from remora.evaluation.report import (
    Column,
    EvalReport,
    OperationReport,
    RemoraFigures,
    Score,
    SuiteRun,
    counted,
    format_value,
    operation_notes,
    operation_rows,
    to_markdown,
)


def _report() -> EvalReport:
    lint = OperationReport(
        operation="lint",
        unit="modules",
        selection=["pkg/a.py", "pkg/b.py"],
        columns=[
            Column(key="fixed", label="fixed", kind="count"),
            Column(key="rate", label="fix rate", kind="rate", help="fixed / injected"),
            Column(key="tests", label="tests pass", kind="text"),
        ],
        scores=[
            Score(tool="ruff --fix", kind="baseline", values={"fixed": 3, "rate": 0.375}),
            Score(
                tool="remora",
                kind="remora",
                values={"fixed": 7, "rate": 0.875, "tests": True},
                wall_s=61.23,
            ),
            Score(tool="broken | tool", kind="baseline", error="exit 2: no such option"),
        ],
        remora=[
            RemoraFigures(
                variant="remora",
                jobs=2,
                statuses={"success": 1, "failed": 1},
                wall_s=61.2,
                jobs_per_min=1.96,
                mean_turns=6.5,
                valid_calls=12,
                invalid_calls=1,
                call_validity=12 / 13,
            )
        ],
        notes=["8 injections per module"],
    )
    docstring = OperationReport(
        operation="docstring",
        unit="functions",
        selection=[],
        columns=[],
        scores=[],
        error="internal error: ValueError: boom",
    )
    return EvalReport(
        remora_version="0.1.0",
        spec="pkg==1.0",
        package="pkg==1.0",
        command="remora eval pkg==1.0 --ops lint,docstring --limit 2 --seed 0",
        seed=0,
        limit=2,
        operations=["lint", "docstring"],
        model="llama.cpp, embedded",
        started="2026-11-23T10:00:00+00:00",
        wall_s=75.4,
        test_suite=SuiteRun(status="passed", summary="3 passed in 0.5s", wall_s=0.6),
        reports=[lint, docstring],
    )


def test_counts_agree_with_their_unit() -> None:
    assert counted(1, "functions") == "1 function"
    assert counted(0, "modules") == "0 modules"
    assert counted(12, "functions") == "12 functions"


def test_cells_by_kind() -> None:
    assert format_value(0.375, "rate") == "38%"
    assert format_value(1, "rate") == "100%"
    assert format_value(61.23, "seconds") == "61.2"
    assert format_value(2.5, "number") == "2.50"
    assert format_value(3, "count") == "3"
    assert format_value(None, "rate") == "-"
    assert format_value(True, "text") == "yes"
    assert format_value("FAIL (1 failed)", "text") == "FAIL (1 failed)"


def test_rows_and_notes() -> None:
    lint = _report().reports[0]
    headers, rows = operation_rows(lint)
    assert headers == ["tool", "fixed", "fix rate", "tests pass", "wall s"]
    assert rows[0] == ["ruff --fix", "3", "38%", "-", "-"]
    assert rows[1] == ["remora", "7", "88%", "yes", "61.2"]
    assert operation_notes(lint) == [
        "broken | tool: exit 2: no such option",
        "8 injections per module",
        "fix rate: fixed / injected",
    ]


def test_markdown_has_everything_to_read_and_repeat_a_run() -> None:
    text = to_markdown(_report())
    assert text.startswith("## Remora eval: pkg==1.0\n")
    assert "- command: `remora eval pkg==1.0 --ops lint,docstring --limit 2 --seed 0`" in text
    assert "- the package's own tests: pass (3 passed in 0.5s)" in text
    assert "2 modules: `pkg/a.py`, `pkg/b.py`" in text
    assert "| tool | fixed | fix rate | tests pass | wall s |" in text
    assert "|---|---:|---:|---:|---:|" in text
    assert "| remora | 7 | 88% | yes | 61.2 |" in text
    assert "| remora | 2 | 1 failed, 1 success | 1.96 | 6.50 | 92% |" in text
    assert "- broken \\| tool: exit 2: no such option" not in text
    assert "- broken | tool: exit 2: no such option" in text
    assert "### docstring\n\nNot measured: internal error: ValueError: boom" in text


def test_the_json_form_round_trips() -> None:
    report = _report()
    assert EvalReport.model_validate_json(report.model_dump_json()) == report
