"""What ``remora eval`` reports: one table per operation, tools side by side, and its text forms.

The models are the JSON output (``--format json``) as they are; :func:`operation_rows` and
:func:`remora_rows` give the cells both the terminal table and the markdown report show, so
the two never disagree.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

Value = float | int | str | bool | None
ColumnKind = Literal["rate", "count", "number", "text", "seconds"]
ScoreKind = Literal["baseline", "remora", "reference"]

ADAPTER_ROW = "remora"
HOST_ONLY_ROW = "remora (host only)"
BASE_MODEL_ROW = "remora (base model)"
"""Row names with a meaning across operations: Remora as shipped (the model with the
agent's adapter), the host alone, and the base model without the adapter at the same
decision points. An evaluation with all three can gate an adapter (``remora train gate``)."""
BASE_MODEL_SETTING = "model.use_adapters=false"
"""The setting that makes a run :data:`BASE_MODEL_ROW`'s: every agent without its adapter."""


class SuiteRun(BaseModel):
    """One run of the package's own test suite."""

    status: Literal["passed", "failed", "cannot_run"]
    summary: str
    wall_s: float

    def describe(self) -> str:
        words = {"passed": "pass", "failed": "FAIL", "cannot_run": "cannot run"}
        return f"{words[self.status]} ({self.summary})" if self.summary else words[self.status]


class Column(BaseModel):
    """One measured quantity: its key in :attr:`Score.values`, its heading, how it prints."""

    key: str
    label: str
    kind: ColumnKind = "number"
    help: str = ""


class Score(BaseModel):
    """What one tool (a baseline, a Remora variant, a reference) achieved on the selection."""

    tool: str
    kind: ScoreKind
    values: dict[str, Value] = Field(default_factory=dict)
    wall_s: float | None = None
    error: str | None = None


class RemoraFigures(BaseModel):
    """How one Remora run went: throughput, turns and the validity of the model's calls."""

    variant: str
    jobs: int
    statuses: dict[str, int]
    wall_s: float
    jobs_per_min: float | None
    mean_turns: float | None
    valid_calls: int
    invalid_calls: int
    call_validity: float | None
    model_s: float = Field(default=0.0, description="Seconds the jobs spent waiting on the model.")
    model_share: float | None = Field(
        default=None, description="model_s over the jobs' own wall time (None without jobs)."
    )
    tokens_per_job: float | None = Field(
        default=None,
        description="Prompt tokens evaluated (not cached) plus completion tokens, per job: "
        "what the model was made to do, sampled candidates included.",
    )
    candidates: int = Field(default=0, description="Answers given at screened decisions.")
    candidates_passed: int = Field(default=0, description="Of those, accepted by the screen.")
    error: str | None = None


class OperationReport(BaseModel):
    """One operation's comparison on one seeded selection of the package."""

    operation: str
    unit: str
    selection: list[str]
    columns: list[Column]
    scores: list[Score]
    remora: list[RemoraFigures] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    details: dict[str, Any] = Field(default_factory=dict)
    wall_s: float = 0.0
    error: str | None = None


class EvalReport(BaseModel):
    """A whole ``remora eval`` run: enough to read the results and to repeat the run exactly."""

    remora_version: str
    spec: str
    package: str
    command: str
    seed: int
    limit: int
    operations: list[str]
    model: str
    started: str
    wall_s: float = 0.0
    test_suite: SuiteRun | None = None
    reports: list[OperationReport] = Field(default_factory=list)


def counted(count: int, unit: str) -> str:
    """``3 functions``, ``1 function``."""
    return f"{count} {unit.removesuffix('s') if count == 1 else unit}"


def format_value(value: Value, kind: ColumnKind) -> str:
    """A cell: rates as percentages, seconds with one decimal, None as '-'."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if kind == "rate" and isinstance(value, int | float):
        return f"{100 * value:.0f}%"
    if kind == "seconds" and isinstance(value, int | float):
        return f"{value:.1f}"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def operation_rows(report: OperationReport) -> tuple[list[str], list[list[str]]]:
    """Headings and cells of an operation's comparison table (one row per tool)."""
    headers = ["tool", *(column.label for column in report.columns), "wall s"]
    rows = []
    for score in report.scores:
        cells = [format_value(score.values.get(c.key), c.kind) for c in report.columns]
        rows.append([score.tool, *cells, format_value(score.wall_s, "seconds")])
    return headers, rows


REMORA_HEADERS = [
    "Remora run",
    "jobs",
    "statuses",
    "jobs/min",
    "mean turns",
    "call validity",
    "model time",
    "tokens/job",
    "candidates passed",
]


def remora_rows(report: OperationReport) -> list[list[str]]:
    """Cells of the table of an operation's Remora runs (see :data:`REMORA_HEADERS`)."""
    return [
        [
            figures.variant,
            str(figures.jobs),
            ", ".join(f"{n} {status}" for status, n in sorted(figures.statuses.items())) or "-",
            format_value(figures.jobs_per_min, "number"),
            format_value(figures.mean_turns, "number"),
            format_value(figures.call_validity, "rate"),
            format_value(figures.model_share, "rate"),
            format_value(figures.tokens_per_job, "number"),
            f"{figures.candidates_passed} / {figures.candidates}" if figures.candidates else "-",
        ]
        for figures in report.remora
    ]


def operation_notes(report: OperationReport) -> list[str]:
    """The notes under an operation's tables: errors first, then what the columns mean."""
    notes = [f"{score.tool}: {score.error}" for score in report.scores if score.error]
    notes += [f"{figures.variant}: {figures.error}" for figures in report.remora if figures.error]
    notes += report.notes
    notes += [f"{column.label}: {column.help}" for column in report.columns if column.help]
    return list(dict.fromkeys(notes))


def to_markdown(report: EvalReport) -> str:
    """The report as markdown a user can paste into an issue."""
    lines = [
        f"## Remora eval: {report.package}",
        "",
        f"- command: `{report.command}`",
        f"- remora {report.remora_version}; model: {report.model}",
        f"- seed {report.seed}, limit {report.limit}; started {report.started}; "
        f"wall time {report.wall_s:.0f} s",
    ]
    if report.test_suite is not None:
        lines.append(f"- the package's own tests: {report.test_suite.describe()}")
    for operation in report.reports:
        lines += ["", f"### {operation.operation}"]
        if operation.error:
            lines += ["", f"Not measured: {operation.error}"]
            continue
        chosen = ", ".join(f"`{item}`" for item in operation.selection)
        lines += ["", f"{counted(len(operation.selection), operation.unit)}: {chosen}", ""]
        headers, rows = operation_rows(operation)
        lines += _markdown_table(headers, rows)
        if operation.remora:
            lines.append("")
            lines += _markdown_table(REMORA_HEADERS, remora_rows(operation))
        notes = operation_notes(operation)
        if notes:
            lines.append("")
            lines += [f"- {note}" for note in notes]
    return "\n".join(lines) + "\n"


def _markdown_table(headers: list[str], rows: list[list[str]]) -> list[str]:
    def line(cells: list[str]) -> str:
        return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"

    rule = "|" + "|".join("---" if i == 0 else "---:" for i in range(len(headers))) + "|"
    return [line(headers), rule, *(line(row) for row in rows)]
