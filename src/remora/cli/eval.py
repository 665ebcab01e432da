"""``remora eval``: Remora's agents against the best deterministic tools, on a real package."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from remora.cli._app import (
    OPTIONS,
    Backend,
    ExecutorOption,
    RayAddressOption,
    app,
    console,
    err_console,
    executor_kind,
    flag_overrides,
    operations,
)
from remora.cli._text import shown, visible
from remora.cli.analyze import split_ops

if TYPE_CHECKING:
    from remora.evaluation.report import EvalReport, OperationReport

OPERATIONS_HELP = (
    "Operations to measure, comma-separated or repeated: lint, docstring, test, sample_data "
    "as bundled, and any installed operation with an evaluation (default: all; with "
    "--as-published, any installed operation)."
)
AS_PUBLISHED_HELP = (
    "Prove the operations do no harm: run each on N modules of the package as published "
    "(a scratch copy; every proposed change accepted) and report its value (changes, "
    "docstrings and tests added, tests passing) beside its harm: the package's tests and "
    "doctests that passed before and fail after, examples and literal blocks altered, words "
    "and sentences of the authors' docstrings lost, summaries replaced, generated tests "
    "that repeat the package's own or fail. Every harm count should be 0."
)


class EvalFormat(StrEnum):
    table = "table"
    json = "json"
    markdown = "markdown"


@app.command("eval")
def eval_command(
    spec: Annotated[
        str,
        typer.Argument(
            help="A pip requirement (toolz==1.0.0: its sdist is fetched into a temporary "
            "directory) or a path: a project, a package directory or an sdist archive.",
            metavar="SPEC",
        ),
    ],
    ops: Annotated[list[str] | None, typer.Option("--ops", "-o", help=OPERATIONS_HELP)] = None,
    limit: Annotated[
        int,
        typer.Option(
            "--limit", "-n", help="Modules (lint) or functions (the others) per operation."
        ),
    ] = 6,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the selection and injections.")] = 0,
    output: Annotated[
        EvalFormat,
        typer.Option(
            "--format", "-f", help="table for people, markdown for an issue, json for machines."
        ),
    ] = EvalFormat.table,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="Keep everything here (a new or empty directory): report.json, report.md "
            "and the scratch projects each tool changed.",
            file_okay=False,
        ),
    ] = None,
    backend: Annotated[
        Backend | None,
        typer.Option(
            help="llama_cpp: the embedded model; openai: a server (--set model.base_url=...)."
        ),
    ] = None,
    executor: ExecutorOption = None,
    ray_address: RayAddressOption = None,
    as_published: Annotated[bool, typer.Option("--as-published", help=AS_PUBLISHED_HELP)] = False,
    rows: Annotated[
        list[str] | None,
        typer.Option(
            "--rows",
            help="Measure only these of Remora's rows, by name, comma-separated or repeated "
            "(e.g. 'remora (host only),remora (host only, untested)'; default: all).",
        ),
    ] = None,
    baselines: Annotated[
        bool,
        typer.Option(
            "--baselines/--no-baselines",
            help="Run the baseline tools' rows (hypothesis write, st.builds) too.",
        ),
    ] = True,
) -> None:
    """Measure the agents on a real package against the best deterministic tools, side by side.

    SPEC's package is copied into scratch projects and its own tests run once. Then, on
    a seeded selection (recorded in the report, so a run repeats exactly):

    - lint: seeded ruff-detectable mistakes injected into N modules; fix rate, new
      violations, noqa added and the package's tests, vs ruff --fix and --unsafe-fixes.

    - docstring: N functions' docstrings removed and regenerated; pydoclint and ruff-D
      clean rates, parameter consistency, coverage, ROUGE-L/BLEU vs the original summary,
      vs a summary made from the function name.

    - test: characterization tests for N functions; pass rate, flaky tests dropped, line
      and branch coverage, mutation score and type-only tests, with and without the
      model's inputs, vs 'hypothesis write'; each Remora row also runs 'untested', on a
      copy without the package's own tests (the code users mostly bring).

    - sample_data: fixtures for N functions that call without an argument error, with and
      without the model's inputs, vs st.builds/st.from_type.

    Every Remora run also reports jobs per minute, mean turns and tool-call validity.
    Expect a few minutes per operation with --limit 6 on a laptop CPU.

    With --as-published nothing is injected or removed: each operation (any installed one)
    runs on N seeded modules of the untouched package, every change accepted on a scratch
    copy, and the table puts its value (changes, docstrings and tests added, tests added
    passing, doctests before and after) beside its harm, column by column: tests and
    doctests broken, examples and literal blocks altered, sentences and words of the
    authors' docstrings lost, summaries replaced, duplicate and failing tests added. Every
    harm column should read 0; the notes quote the first harms, --format json has them all.
    A summary changed only to the imperative or by a final period is a mechanical fix,
    counted apart.

    Examples:

        remora eval toolz==1.0.0 --ops docstring --limit 4

        remora eval ./my_project --format markdown --out eval-run/

        remora eval toolz==1.0.0 --as-published --ops lint,docstring --limit 2

        remora eval toolz==1.0.0 --ops test --no-baselines --rows 'remora (host only, untested)'

        remora --set model.base_url=http://127.0.0.1:8000/v1 eval toolz==1.0.0 --backend openai

        remora eval toolz==1.0.0 --ops lint --executor ray --ray-address auto
    """
    from remora.evaluation import EvalOptions, RemoraSession, run_eval

    installed = operations()
    evaluators = installed.evaluators()
    assignments = [
        *OPTIONS.assignments,
        *flag_overrides(
            {
                "model.backend": backend,
                "executor.kind": executor_kind(executor, ray_address),
                "executor.ray_address": ray_address,
            }
        ),
    ]
    options = EvalOptions(
        spec=spec,
        operations=split_ops(ops) or (installed.names if as_published else list(evaluators)),
        limit=limit,
        seed=seed,
        out=out,
        as_published=as_published,
        rows=[name.strip() for item in rows for name in _row_names(item)] if rows else None,
        baselines=baselines,
    )
    session = RemoraSession(
        installed.library,
        installed.default_configs(),
        config_file=OPTIONS.config_file,
        assignments=assignments,
    )
    with eval_progress() as progress:
        report = run_eval(options, evaluators=evaluators, session=session, progress=progress)
    _render(report, output)
    _check_rows(options.rows, report)
    if out is not None:
        err_console.print(f"report written to {shown(str(out))}/report.md and report.json")
    if any(item.error for item in report.reports):
        raise typer.Exit(1)


def _check_rows(rows: list[str] | None, report: EvalReport) -> None:
    """EVAL_007 when a row named with --rows was measured by no operation (a typo, or a row
    the operations measured do not have): the report then lacks what was asked for."""
    measured = {figures.variant for item in report.reports for figures in item.remora}
    missing = [row for row in rows or [] if row not in measured]
    if missing:
        from remora.errors import EvalError

        raise EvalError(
            "EVAL_007",
            f"no operation measured the row(s) {', '.join(repr(row) for row in missing)}",
            f"rows measured: {', '.join(sorted(measured)) or 'none'}; names are as the "
            "report's table shows them",
        )


def _row_names(item: str) -> list[str]:
    """Row names in one --rows value: split at commas outside parentheses, since names such
    as 'remora (host only, untested)' hold one."""
    names, depth, current = [], 0, ""
    for char in item:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            names.append(current)
            current = ""
        else:
            current += char
    return [name for name in [*names, current] if name.strip()]


@dataclass
class _Bars:
    """One progress bar per operation (and one for setting up), created on first use."""

    progress: Progress | None
    tasks: dict[str, TaskID] = field(default_factory=dict)

    def update(
        self,
        operation: str,
        *,
        total: int | None = None,
        advance: int = 0,
        description: str | None = None,
    ) -> None:
        if self.progress is None:
            if description and OPTIONS.verbosity >= 0:
                err_console.print(f"{operation}: {shown(description)}", highlight=False)
            return
        if operation not in self.tasks:
            self.tasks[operation] = self.progress.add_task(operation, total=None, status="")
        task = self.tasks[operation]
        fields: dict[str, object] = {"advance": advance}
        if total is not None:
            fields["total"] = total
        if description is not None:
            fields["status"] = shown(description)
        self.progress.update(task, **fields)  # type: ignore[arg-type]


@contextmanager
def eval_progress() -> Iterator[_Bars]:
    """Live bars on a terminal; one line per step otherwise; nothing with ``-q``."""
    if OPTIONS.verbosity < 0 or not err_console.is_terminal:
        yield _Bars(None)
        return
    with Progress(
        TextColumn("[bold]{task.description:>12}[/]"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[status]}"),
        console=err_console,
    ) as progress:
        yield _Bars(progress)


def _render(report: EvalReport, output: EvalFormat) -> None:
    from remora.evaluation.report import to_markdown

    if output is EvalFormat.json:
        sys.stdout.write(report.model_dump_json(indent=2) + "\n")
        return
    if output is EvalFormat.markdown:
        text = to_markdown(report)
        sys.stdout.write(visible(text, multiline=True) if console.is_terminal else text)
        return
    console.print(f"[bold]Remora eval: {shown(report.package)}[/]  ({shown(report.model)})")
    console.print(f"repeat with: {shown(report.command)}", highlight=False, soft_wrap=True)
    if report.test_suite is not None:
        console.print(f"the package's own tests: {shown(report.test_suite.describe())}")
    for operation in report.reports:
        _render_operation(operation)
    console.print(f"\nwall time {report.wall_s:.0f} s", highlight=False)


def _render_operation(report: OperationReport) -> None:
    from remora.evaluation.report import (
        REMORA_HEADERS,
        counted,
        operation_notes,
        operation_rows,
        remora_rows,
    )

    console.print()
    if report.error:
        console.print(f"[bold]{report.operation}[/]: not measured: {shown(report.error)}")
        return
    chosen = ", ".join(report.selection)
    title = f"{report.operation}: {counted(len(report.selection), report.unit)}"
    headers, rows = operation_rows(report)
    if _width(headers, rows) > console.width:
        headers, rows = _transposed(headers, rows)
    console.print(_table(title, headers, rows))
    console.print(f"  {shown(chosen)}", style="dim", highlight=False, soft_wrap=True)
    if report.remora:
        console.print(_table(None, REMORA_HEADERS, remora_rows(report)))
    for note in operation_notes(report):
        console.print(f"  - {shown(note)}", highlight=False, soft_wrap=True)


def _width(headers: list[str], rows: list[list[str]]) -> int:
    """The characters a table needs to show every heading and cell on one line."""
    columns = zip(headers, *rows, strict=True)
    return 1 + sum(3 + max(len(cell) for cell in column) for column in columns)


def _transposed(headers: list[str], rows: list[list[str]]) -> tuple[list[str], list[list[str]]]:
    """A table too wide for the terminal as one row per column and one column per tool
    (``--as-published`` has a column per value and per harm), so that it still reads."""
    tools = [row[0] for row in rows]
    return [headers[0], *tools], [
        [header, *(row[index] for row in rows)] for index, header in enumerate(headers) if index
    ]


def _table(title: str | None, headers: list[str], rows: list[list[str]]) -> Table:
    table = Table(title=title, title_justify="left", expand=False)
    for index, header in enumerate(headers):
        table.add_column(header, justify="left" if index == 0 else "right", overflow="fold")
    for row in rows:
        table.add_row(*(shown(cell) for cell in row))
    return table
