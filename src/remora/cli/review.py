"""``remora runs``, ``review``, ``accept``, ``reject``, ``diff`` and ``undo``."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer
from rich import box
from rich.prompt import Prompt
from rich.rule import Rule
from rich.syntax import Syntax
from rich.table import Table

from remora.cli._app import (
    FormatOption,
    OutputFormat,
    app,
    console,
    err_console,
    load,
)
from remora.cli._text import shown, visible
from remora.discovery import find_project_root
from remora.errors import RemoraError, WorkspaceError
from remora.orchestration import JobRecord, ReviewService
from remora.workspace import RecoveryReport, WorkspaceManager

ProjectOption = Annotated[
    Path | None,
    typer.Option(
        "--project",
        "-p",
        help="Project directory (default: the project containing the current directory).",
        file_okay=False,
    ),
]
RunOption = Annotated[
    str | None, typer.Option("--run", "-r", help="Run id (default: the newest run).")
]
AllOption = Annotated[
    bool,
    typer.Option(
        "--all",
        help="Every change pending review, in the order 'remora review' lists them: of every "
        "run (the newest per node), or of the run given with --run.",
    ),
]
OperationOption = Annotated[
    str | None, typer.Option("--operation", "-o", help="Only jobs of this operation.")
]
WorkspaceIds = Annotated[
    list[str] | None, typer.Argument(help="Workspace ids, as 'remora review' and 'runs' show.")
]

_CHOICES = ["a", "r", "s", "t", "e", "A", "q", "?"]
_DECISIONS = {"a": "accepted", "r": "rejected", "s": "skipped", "t": "retry requested"}
_KEYS = """\
  a  accept: write the change into your files (edits you made since are merged)
  r  reject: drop the change
  s  skip: decide later; the change stays pending
  t  retry: drop the change, say what is wrong, and mark the job for 'remora retry'
  e  edit: open the proposed file(s) in $VISUAL or $EDITOR; what you save becomes the change
  A  accept this change and every other change of the same operation
  q  quit; what you did not decide stays pending
  ?  show these keys"""
_CONTINUED = "\N{RIGHTWARDS ARROW WITH HOOK} "


def _service(project: Path | None) -> ReviewService:
    """The project's review service, after recovering anything a crash interrupted."""
    root = find_project_root(project or Path.cwd())
    loaded = load(root)
    service = ReviewService(WorkspaceManager.from_config(root, loaded.config.workspace))
    _report_recovery(service.recover())
    return service


def _report_recovery(report: RecoveryReport) -> None:
    for workspace_id in report.completed:
        err_console.print(
            f"recovered: finished the interrupted accept/undo of {shown(workspace_id)}"
        )
    for workspace_id in report.rolled_back:
        err_console.print(
            f"recovered: rolled back the interrupted accept/undo of {shown(workspace_id)}"
        )
    for path in report.skipped_files:
        err_console.print(f"[yellow]left as is (edited after the interruption):[/] {shown(path)}")


def _selected(
    service: ReviewService,
    workspace_ids: list[str] | None,
    run_id: str | None,
    select_all: bool,
    operation: str | None,
) -> list[str]:
    if workspace_ids and (select_all or run_id):
        raise typer.BadParameter("give workspace ids, or --all (with --run), not both")
    if workspace_ids:
        return workspace_ids
    if not select_all:
        raise typer.BadParameter(
            "give workspace ids, or --all to take every pending change (--run: one run's)"
        )
    if run_id is None:
        # Every run's pending changes, as 'remora review' lists them: the newest per node
        # and operation, grouped by operation, then file and line.
        pending = service.pending_everywhere(operation)
        if not pending.jobs:
            service.store.resolve(None)  # WS_009 when there is no run at all
        if pending.hidden:
            err_console.print(
                f"{pending.hidden} older change(s) of the same nodes left pending "
                "('remora runs' lists their runs; --run RUN_ID takes one)"
            )
        return [job.workspace_id for job in pending.jobs if job.workspace_id]
    manifest = service.reconcile(run_id)
    return [job.workspace_id for job in manifest.pending_reviews(operation) if job.workspace_id]


def _each(workspace_ids: list[str], action: str, apply: Callable[[str], str]) -> None:
    """Apply ``apply`` to each id; failures are reported and make the command exit 1."""
    failures = 0
    if not workspace_ids:
        console.print("nothing pending review")
        return
    for workspace_id in workspace_ids:
        try:
            message = apply(workspace_id)
        except RemoraError as exc:
            failures += 1
            err_console.print(visible(exc.render()), style="red", markup=False, highlight=False)
            continue
        console.print(f"[green]{action}[/] {shown(workspace_id)}{shown(message)}")
    if failures:
        err_console.print(f"{failures} of {len(workspace_ids)} workspace(s) not {action}")
        raise typer.Exit(1)


def _accept_message(service: ReviewService, workspace_id: str) -> str:
    report = service.accept(workspace_id)
    counts = Counter(item.action for item in report.files)
    parts = [f"{count} {action}" for action, count in sorted(counts.items())]
    return f": {', '.join(parts) or 'no file changes'}"


def _reject_message(service: ReviewService, workspace_id: str) -> str:
    service.reject(workspace_id)
    return ""


@app.command("runs")
def runs_command(
    project: ProjectOption = None,
    output: FormatOption = OutputFormat.table,
) -> None:
    """List recorded runs, newest first, with how many changes await review.

    Each run's manifest lives in .remora/runs/<run_id>.json. An accept interrupted by a
    crash is finished (or rolled back) first, so the counts match the files on disk.

    Example: remora runs --format json
    """
    service = _service(project)
    summaries = [
        service.reconcile(summary.run_id).summary() if summary.pending else summary
        for summary in service.store.list()
    ]
    if output is OutputFormat.json:
        sys.stdout.write(json.dumps([s.model_dump(mode="json") for s in summaries], indent=2))
        sys.stdout.write("\n")
        return
    if not summaries:
        console.print("no runs recorded yet; 'remora analyze' creates one")
        return
    table = Table(
        title=f"runs in {shown(service.store.runs_dir)}", box=box.SIMPLE_HEAD, pad_edge=False
    )
    table.add_column("run id", no_wrap=True, style="bold")
    table.add_column("started", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("jobs", no_wrap=True, justify="right")
    for column in ("pending", "accepted", "rejected", "retried"):
        table.add_column(column, no_wrap=True, justify="right")
    for summary in summaries:
        jobs = f"{summary.jobs} ({summary.failed} failed)" if summary.failed else str(summary.jobs)
        table.add_row(
            shown(summary.run_id),
            time.strftime("%m-%d %H:%M", time.localtime(summary.created_at)),
            summary.status,
            jobs,
            f"[bold yellow]{summary.pending}[/]" if summary.pending else "0",
            str(summary.accepted),
            str(summary.rejected),
            str(summary.retry_requested + summary.retried),
        )
    console.print(table)


def _print_left_for_person(jobs: list[JobRecord]) -> None:
    """The run's jobs that proposed nothing and left their work to you, one line each."""
    if not jobs:
        return
    console.print(f"{len(jobs)} job(s) proposed no change and leave the work to you:")
    for job in jobs:
        said = job.error or job.summary or "failed"
        console.print(f"  {shown(job.operation)} · {shown(job.label)}: {shown(said)}")


def _show_job(service: ReviewService, job: JobRecord, index: int, total: int) -> bool:
    """Print a job's header and highlighted diff; False when its workspace is gone."""
    console.print(Rule(f"[{index}/{total}] {shown(job.operation)} · {shown(job.label)}"))
    if job.summary:
        console.print(shown(job.summary, multiline=True))
    console.print(f"workspace [cyan]{shown(job.workspace_id or '-')}[/]")
    if job.workspace_id is None:
        return False
    try:
        diffs = service.diff(job.workspace_id)
    except RemoraError as exc:
        err_console.print(visible(exc.render()), style="red", markup=False, highlight=False)
        return False
    for text in diffs.values():
        lines = wrapped(visible(text, multiline=True), max(20, console.width - 1))
        console.print(Syntax(lines, "diff", theme="ansi_dark", background_color="default"))
    if not diffs:
        console.print("(no file changes)")
    return True


def wrapped(diff: str, width: int) -> str:
    """``diff`` with every line longer than ``width`` folded into whole pieces, each
    continuation marked with an arrow after the line's own diff sign (so it is coloured
    like its line): nothing is cut off at the edge of the terminal."""
    out: list[str] = []
    for line in diff.splitlines():
        if len(line) <= width:
            out.append(line)
            continue
        sign = line[0] if line[:1] in ("+", "-", " ") else ""
        out.append(line[:width])
        rest = line[width:]
        room = max(1, width - len(sign) - len(_CONTINUED))
        while rest:
            out.append(f"{sign}{_CONTINUED}{rest[:room]}")
            rest = rest[room:]
    return "\n".join(out)


def _edit(service: ReviewService, job: JobRecord) -> str:
    """Open each file the change touches, as proposed, in the user's editor; what is saved
    replaces the proposal in the workspace, so accepting writes the edited version."""
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    command = _editor_command(editor)
    edited: list[str] = []
    with service.manager.open(job.workspace_id or "") as workspace:
        for path in workspace.changed_paths():
            try:
                proposed = workspace.read(path)
            except FileNotFoundError:
                continue  # a deletion: nothing to edit
            suffix = Path(path).suffix
            with tempfile.TemporaryDirectory() as folder:
                draft = Path(folder) / f"proposed{suffix}"
                draft.write_bytes(proposed)
                try:
                    done = subprocess.run([*command, str(draft)], check=False)
                except OSError as exc:
                    raise _editor_error(
                        editor, f"cannot be run ({exc.strerror or exc}); nothing changed"
                    ) from None
                if done.returncode != 0:
                    return f"the editor ({editor}) exited with {done.returncode}; nothing changed"
                saved = draft.read_bytes()
            if saved != proposed:
                workspace.write(path, saved)
                edited.append(path)
    return "edited " + ", ".join(edited) if edited else "no edit saved"


def _editor_command(editor: str) -> list[str]:
    """``$VISUAL``/``$EDITOR`` split as a shell would (``code --wait``); WS_020 when it
    does not split (an unbalanced quote) or names nothing."""
    try:
        command = shlex.split(editor)
    except ValueError as exc:
        raise _editor_error(editor, f"is not a command ({exc}); nothing changed") from None
    if not command:
        raise _editor_error(editor, "names no command; nothing changed")
    return command


def _editor_error(editor: str, what: str) -> WorkspaceError:
    return WorkspaceError(
        "WS_020",
        f"the editor {editor!r} (from $VISUAL or $EDITOR) {what}",
        "set VISUAL or EDITOR to a command, quoted as in a shell (e.g. EDITOR='code --wait'), "
        "and press e again, or accept, reject or skip the proposal as it is",
    )


def _decide(service: ReviewService, job: JobRecord, choice: str) -> str:
    workspace_id = job.workspace_id or ""
    if choice == "a":
        return "accepted" + _accept_message(service, workspace_id)
    if choice == "r":
        service.reject(workspace_id)
        return "rejected"
    if choice == "t":
        try:
            note = Prompt.ask(
                "What is wrong with it? (the retry's model is told; Enter for no note)",
                default="",
                show_default=False,
                console=console,
            )
        except EOFError:
            note = ""
        service.retry(workspace_id, note)
        return "marked for retry ('remora retry' reruns it)"
    return "skipped"


def _ask(service: ReviewService, job: JobRecord, index: int, total: int) -> str:
    """The person's decision on ``job``: ``?`` shows the keys and ``e`` edits the change
    (then shows it again) before asking once more."""
    while True:
        try:
            choice = Prompt.ask(
                f"[bold]a[/]ccept  [bold]r[/]eject  [bold]s[/]kip  re[bold]t[/]ry  "
                f"[bold]e[/]dit  [bold]A[/]ccept all {shown(job.operation)}  [bold]q[/]uit  "
                "[bold]?[/]",
                choices=_CHOICES,
                console=console,
            )
        except EOFError:
            return "q"
        if choice == "?":
            console.print(_KEYS, markup=False, highlight=False)
        elif choice == "e":
            try:
                console.print(shown(_edit(service, job)))
            except (RemoraError, OSError) as exc:
                said = exc.render() if isinstance(exc, RemoraError) else str(exc)
                err_console.print(visible(said), style="red", markup=False, highlight=False)
            _show_job(service, job, index, total)
        else:
            return choice


@app.command("review")
def review_command(
    run_id: Annotated[
        str | None,
        typer.Argument(
            help="Run to review (default: every run's pending changes, the newest per node)."
        ),
    ] = None,
    operation: OperationOption = None,
    project: ProjectOption = None,
) -> None:
    """Review a run interactively: each change's diff, then accept, reject, skip or retry.

    Changes are grouped by operation, then by file; long lines are folded, never cut. Keys:
    a accept, r reject, s skip, t retry (discard and rerun later), e edit the proposal in
    $VISUAL or $EDITOR (what you save is what gets accepted), A accept this and every other
    change of the same operation, q quit, ? the keys. Accepting never overwrites your own
    edits: changed files are merged, and a conflict leaves the project untouched.

    Needs a terminal; in scripts use 'remora diff', 'remora accept' and 'remora reject'.

    Example: remora review --operation docstring
    """
    service = _service(project)
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise WorkspaceError(
            "WS_008",
            "remora review is interactive and needs a terminal",
            "in scripts use 'remora diff WORKSPACE_ID', 'remora accept WORKSPACE_ID...' or "
            "'remora reject WORKSPACE_ID...' ('--all' takes every pending change, "
            "'--all --run RUN_ID' a whole run)",
        )
    if run_id is None:
        pending = service.pending_everywhere(operation)
        jobs, where = pending.jobs, "every run"
        if not jobs:
            service.store.resolve(None)  # WS_009 when there is no run at all
            console.print("nothing to review")
            return
        older = (
            f"; {pending.hidden} older change(s) of the same nodes left" if pending.hidden else ""
        )
        console.print(
            f"{len(jobs)} change(s) to review, the newest per node, from {pending.runs} "
            f"run(s){older}"
        )
    else:
        manifest = service.reconcile(run_id)
        jobs, where = manifest.pending_reviews(operation), manifest.run_id
        _print_left_for_person(manifest.left_for_person(operation))
        if not jobs:
            console.print(f"nothing to review in run {shown(manifest.run_id)}")
            return
        console.print(f"run {shown(manifest.run_id)}: {len(jobs)} change(s) to review")
    accept_all: set[str] = set()
    tally: Counter[str] = Counter()
    for index, job in enumerate(jobs, start=1):
        if job.operation in accept_all:
            choice = "a"
        else:
            if not _show_job(service, job, index, len(jobs)):
                continue
            choice = _ask(service, job, index, len(jobs))
        if choice == "q":
            break
        if choice == "A":
            accept_all.add(job.operation)
            choice = "a"
        try:
            outcome = _decide(service, job, choice)
        except RemoraError as exc:
            tally["failed"] += 1
            err_console.print(visible(exc.render()), style="red", markup=False, highlight=False)
            continue
        tally[_DECISIONS[choice]] += 1
        console.print(f"{shown(job.workspace_id or '')}: {shown(outcome)}")
    done = ", ".join(f"{count} {name}" for name, count in sorted(tally.items())) or "no decisions"
    console.print(f"review of {shown(where)}: {done}")


@app.command("accept")
def accept_command(
    workspace_ids: WorkspaceIds = None,
    run_id: RunOption = None,
    select_all: AllOption = False,
    operation: OperationOption = None,
    project: ProjectOption = None,
) -> None:
    """Apply workspaces to the project, without prompting.

    Each file is replaced atomically after checking it against the version the change
    was made from; if you edited it since, the edits are merged, and a conflict refuses
    that workspace (WS_004) leaving every file as it was. 'remora undo' reverts.

    --all takes every pending change as 'remora review' shows them (every run's, the
    newest per node; --run RUN_ID: that run's), one after another in review's order; a
    change that conflicts with one accepted before it is refused with its code and stays
    pending, and the others are still accepted.

    Examples:

        remora accept lint-3f2a9c0d1e2b4a5c-ab12cd
        remora accept --all
        remora accept --all --run 20250101-120000-ab12cd --operation lint
    """
    service = _service(project)
    ids = _selected(service, workspace_ids, run_id, select_all, operation)
    _each(ids, "accepted", lambda wid: _accept_message(service, wid))


@app.command("reject")
def reject_command(
    workspace_ids: WorkspaceIds = None,
    run_id: RunOption = None,
    select_all: AllOption = False,
    operation: OperationOption = None,
    project: ProjectOption = None,
) -> None:
    """Discard workspaces; the project is not touched.

    Examples:

        remora reject docstring-3f2a9c0d1e2b4a5c-ab12cd
        remora reject --all --operation sample_data
    """
    service = _service(project)
    ids = _selected(service, workspace_ids, run_id, select_all, operation)
    _each(ids, "rejected", lambda wid: _reject_message(service, wid))


@app.command("undo")
def undo_command(
    workspace_id: Annotated[str, typer.Argument(help="An accepted workspace id.")],
    keep_changed: Annotated[
        bool,
        typer.Option(
            "--keep-changed",
            help="Restore the files that still hold what the accept wrote; leave files "
            "changed since as they are.",
        ),
    ] = False,
    project: ProjectOption = None,
) -> None:
    """Put back what accepting a workspace overwrote; the change returns to review.

    Refused (WS_005) when a file changed again since the accept, so nothing you wrote
    later is lost; undo later accepts of the same file first, or pass --keep-changed to
    restore the rest and leave the changed files as they are.

    Example: remora undo lint-3f2a9c0d1e2b4a5c-ab12cd
    """
    service = _service(project)
    report = service.undo(workspace_id, keep_changed=keep_changed)
    paths = ", ".join(item.path for item in report.restored) or "no files"
    console.print(f"[green]undone[/] {shown(workspace_id)}: restored {shown(paths)}")
    if report.kept:
        err_console.print(f"left as is (changed since the accept): {shown(', '.join(report.kept))}")


@app.command("diff")
def diff_command(
    workspace_id: Annotated[str, typer.Argument(help="Workspace id.")],
    context: Annotated[int, typer.Option("--context", "-U", min=0, help="Context lines.")] = 3,
    project: ProjectOption = None,
) -> None:
    """Show a workspace's changes as a unified diff against the files it started from.

    Highlighted in a terminal, plain when piped (so 'git apply' can read it).

    Example: remora diff docstring-3f2a9c0d1e2b4a5c-ab12cd > docstring.patch
    """
    service = _service(project)
    text = "".join(service.diff(workspace_id, context).values())
    if console.is_terminal:
        shown_text = visible(text, multiline=True) or "(no changes)\n"
        console.print(Syntax(shown_text, "diff", background_color="default"))
    else:
        sys.stdout.write(text)
