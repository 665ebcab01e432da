"""How a run looks while it runs and after: progress, per-job lines, tool calls, results table.

On a terminal: one overall bar plus one per operation with live done / failed / skipped
counts, elapsed time and ETA; the overall bar names the jobs in flight with their elapsed
time. Without one (CI, a pipe): one line per finished job on stderr, and a job that runs
past a minute is named once, so a long first run is never silent. ``-v`` adds every tool
call as it happens; ``-q`` shows only the results.
"""

from __future__ import annotations

import json
import os
import shlex
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

from remora.cli._app import OPTIONS, err_console
from remora.cli._text import shown, visible
from remora.events import Event, JobFinished, JobStarted, ToolCallEvent, ToolResultEvent
from remora.orchestration import Job, RunResult
from remora.runner import AgentResult

_STATUS_STYLE = {
    "success": "green",
    "partial": "yellow",
    "left": "cyan",
    "failed": "red",
    "skipped": "dim",
    "interrupted": "yellow",
}


class ToolCallPrinter:
    """An emitter for ``-v``: each tool call on stderr with its arguments and its outcome."""

    def __init__(self) -> None:
        self._calls: dict[str, str] = {}

    def emit(self, event: Event) -> None:
        job = event.job_id or ""
        if isinstance(event, ToolCallEvent):
            arguments = _clip(json.dumps(event.arguments, ensure_ascii=False), 120)
            self._calls[job] = f"[bold]{shown(event.tool)}[/]({shown(arguments)})"
        elif isinstance(event, ToolResultEvent):
            call = self._calls.pop(job, f"[bold]{shown(event.tool)}[/]")
            style = {"success": "green", "error": "red"}.get(event.outcome, "yellow")
            first = _one_line(event.summary, 100)
            err_console.print(
                f"  [dim]{shown(job)}[/] turn {event.turn}: {call} "
                f"-> [{style}]{shown(event.outcome)}[/]: {shown(first)}",
                highlight=False,
            )

    def close(self) -> None:
        return None


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


LONG_JOB_S = 60.0
"""A job running this long is named once on stderr (without live bars)."""


class RunningJobs:
    """An emitter that keeps the jobs in flight, from ``JobStarted`` to ``JobFinished``,
    with when each started: the live display names them with their elapsed time, and
    without one a job that runs long is named once (``announce``)."""

    def __init__(self, *, announce: bool, clock: Callable[[], float] = time.monotonic) -> None:
        self.announce = announce
        self.clock = clock
        self.started: dict[str, tuple[str, float]] = {}
        self._announced: set[str] = set()

    def emit(self, event: Event) -> None:
        job = event.job_id or ""
        if isinstance(event, JobStarted):
            where = event.qualname or event.file_path
            self.started[job] = (f"{event.operation} {where}", self.clock())
        elif isinstance(event, JobFinished):
            self.started.pop(job, None)
        if self.announce:
            self._say_long_jobs()

    def _say_long_jobs(self) -> None:
        now = self.clock()
        for job, (label, start) in self.started.items():
            if job not in self._announced and now - start >= LONG_JOB_S:
                self._announced.add(job)
                err_console.print(
                    f"still running after {now - start:.0f}s: {shown(label)}", highlight=False
                )

    def summary(self, limit: int = 3) -> str:
        """``running: docstring merge_with 12s, test dissoc 3s`` (longest first)."""
        if not self.started:
            return ""
        now = self.clock()
        items = sorted(self.started.values(), key=lambda item: item[1])
        shown_items = [f"{label} {now - start:.0f}s" for label, start in items[:limit]]
        more = f" (+{len(items) - limit} more)" if len(items) > limit else ""
        return "running: " + ", ".join(shown_items) + more

    def close(self) -> None:
        return None


class _CountsColumn(ProgressColumn):
    """Each bar's status counts; the overall bar's also names the jobs in flight, with
    their elapsed time (rendered on every refresh, so it moves during a long tool call)."""

    def __init__(self, running: RunningJobs) -> None:
        super().__init__()
        self.running = running

    def render(self, task: Task) -> Text:
        counts = str(task.fields.get("counts", ""))
        if not task.fields.get("overall"):
            return Text(counts)
        now = self.running.summary()
        return Text("; ".join(part for part in (counts, now) if part))


class RunDisplay:
    """Progress for one run; ``finished`` is the scheduler's per-job callback."""

    def __init__(self, jobs: Sequence[Job], progress: Progress | None) -> None:
        self.progress = progress
        self.counts: dict[str, Counter[str]] = {}
        self.totals: dict[str, int] = Counter(job.operation for job in jobs)
        self.tasks: dict[str, TaskID] = {}
        self.overall: TaskID | None = None
        if progress is not None:
            self.overall = progress.add_task("all", total=len(jobs), counts="", overall=True)
            for operation, total in self.totals.items():
                self.tasks[operation] = progress.add_task(operation, total=total, counts="")

    def finished(self, job: Job, result: AgentResult) -> None:
        counts = self.counts.setdefault(job.operation, Counter())
        counts[result.status] += 1
        if self.progress is not None and self.overall is not None:
            self.progress.update(self.tasks[job.operation], advance=1, counts=_counts(counts))
            overall: Counter[str] = sum(self.counts.values(), Counter())
            self.progress.update(self.overall, advance=1, counts=_counts(overall))
        elif OPTIONS.verbosity >= 0:
            done = sum(sum(c.values()) for c in self.counts.values())
            total = sum(self.totals.values())
            err_console.print(
                f"[{done}/{total}] {job_line(job, result)}", highlight=False, soft_wrap=True
            )


def job_line(job: Job, result: AgentResult) -> str:
    """``operation qualname (file:line): status - summary or error``, as Rich markup."""
    detail = result.error if result.status == "failed" else result.summary
    return (
        f"{job.operation} {shown(job.node.qualname)} "
        f"({shown(job.node.file_path)}:{job.node.start_line}): "
        f"[{_STATUS_STYLE.get(result.status, '')}]{result.status}[/]"
        + (f" - {shown(_one_line(detail))}" if detail else "")
    )


def _counts(counts: Counter[str]) -> str:
    parts = [
        f"{counts[name]} {name}"
        for name in ("success", "partial", "left", "failed", "skipped")
        if counts[name]
    ]
    if counts["interrupted"]:
        parts.append(f"{counts['interrupted']} interrupted")
    return ", ".join(parts)


def _one_line(text: str, limit: int = 160) -> str:
    return _clip(" ".join(text.split()), limit)


def live_display() -> bool:
    """Whether a run shows live bars (a terminal, not ``-q``)."""
    return OPTIONS.verbosity >= 0 and err_console.is_terminal


def running_jobs() -> RunningJobs:
    """The tracker of jobs in flight for this run's display (an emitter for the run)."""
    return RunningJobs(announce=OPTIONS.verbosity >= 0 and not live_display())


@contextmanager
def run_display(jobs: Sequence[Job], running: RunningJobs) -> Iterator[RunDisplay]:
    """Live bars on a terminal (the overall bar names the jobs in flight), per-job lines
    otherwise, nothing with ``-q``."""
    if not live_display():
        yield RunDisplay(jobs, None)
        return
    with Progress(
        TextColumn("[bold]{task.description:>12}[/]"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        _CountsColumn(running),
        TimeRemainingColumn(),
        console=err_console,
        transient=False,
    ) as progress:
        yield RunDisplay(jobs, progress)


def results_table(result: RunResult) -> Table:
    """Node, operation, status, summary, turns and changed files per job; locations fold."""
    table = Table(title=f"run {result.run_id}", title_justify="left", expand=False)
    table.add_column("node", overflow="fold", ratio=3)
    table.add_column("operation", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("summary", overflow="fold", ratio=4)
    table.add_column("turns", justify="right", no_wrap=True)
    table.add_column("changed", overflow="fold", ratio=2)
    for job, outcome, summary in _in_file_order(result):
        style = _STATUS_STYLE.get(outcome.status, "")
        table.add_row(
            shown(f"{job.node.qualname} ({job.node.file_path}:{job.node.start_line})"),
            job.operation,
            f"[{style}]{outcome.status}[/]",
            shown(_one_line(summary or "", 300)),
            str(outcome.telemetry.turns),
            shown(", ".join(outcome.changed_files)),
        )
    return table


def _in_file_order(result: RunResult) -> list[tuple[Job, AgentResult, str]]:
    """Each job with its outcome and what to say of it (the error of a failed one), by
    file and position: the order of the results table and of the plain lines."""
    ordered = sorted(
        result.results, key=lambda item: (item[0].node.file_path, item[0].node.start_line)
    )
    return [
        (job, outcome, (outcome.error if outcome.status == "failed" else outcome.summary) or "")
        for job, outcome in ordered
    ]


def results_lines(result: RunResult) -> list[str]:
    """The results without a terminal (a CI log, a pipe): one plain line per job, in the
    table's order, nothing folded: ``status  operation  node (file:line): summary``; plain
    text, to print without markup."""
    lines: list[str] = []
    for job, outcome, summary in _in_file_order(result):
        changed = f" [changed: {', '.join(outcome.changed_files)}]" if outcome.changed_files else ""
        lines.append(
            visible(
                f"{outcome.status:<11} {job.operation:<11} {job.node.qualname} "
                f"({job.node.file_path}:{job.node.start_line}): "
                f"{_one_line(summary or '', 300)}{changed}"
            )
        )
    return lines


def review_command(run_id: str, project_root: Path) -> str:
    """The command that reviews ``run_id`` from the current directory: with ``-p`` when
    the project root (where ``.remora/`` is) is not the current directory."""
    command = f"remora review {run_id}"
    here = Path.cwd().resolve()
    if project_root.resolve() == here:
        return command
    return f"{command} -p {shlex.quote(os.path.relpath(project_root.resolve(), here))}"


def footer(result: RunResult, project_root: Path, extra: Sequence[str] = ()) -> str:
    """Totals, the run id and the exact command that reviews it from here."""
    manifest = result.manifest
    summary = manifest.summary()
    parts = [
        f"{summary.jobs} job(s): {summary.succeeded} succeeded, "
        + (f"{summary.partial} partly done, " if summary.partial else "")
        + (f"{summary.left} left for you, " if summary.left else "")
        + f"{summary.failed} failed, "
        f"{result.count('skipped')} skipped, {result.count('interrupted')} interrupted",
        f"{summary.pending} change(s) await review",
    ]
    lines = ["; ".join(parts), *extra]
    if summary.pending:
        lines.append(f"review with: {review_command(manifest.run_id, project_root)}")
    return "\n".join(lines)
