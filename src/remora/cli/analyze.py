"""``remora analyze``: discover, plan, run every (operation x node) job, show and record results."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from remora.cli._app import (
    OPTIONS,
    Backend,
    ExecutorOption,
    FormatOption,
    OutputFormat,
    RayAddressOption,
    app,
    console,
    err_console,
    executor_kind,
    flag_overrides,
    open_model,
    operations,
)
from remora.cli._app import load as load_config
from remora.cli._text import shown, visible
from remora.errors import RunnerError

if TYPE_CHECKING:
    from remora.config import RemoraConfig
    from remora.discovery import DiscoveryResult
    from remora.orchestration import Plan, RunResult
    from remora.workspace import WorkspaceManager

OPERATIONS_HELP = (
    "Operations to run, comma-separated or repeated: lint, docstring, test, sample_data "
    "(or any operation in your config). Default: every enabled operation."
)
EXIT_FINDINGS = 1
EXIT_BROKEN = 2
EXIT_INTERRUPTED = 130


def split_ops(values: list[str] | None) -> list[str] | None:
    """``--ops lint,docstring --ops test`` as one list, or None when not given; RUN_020
    when given but naming nothing (``--ops ''`` must not mean every operation)."""
    if values is None:
        return None
    names = [name.strip() for value in values for name in value.split(",") if name.strip()]
    if not names:
        raise RunnerError(
            "RUN_020",
            "--ops names no operation",
            "give one or more, comma-separated, e.g. --ops lint,docstring; "
            "leave --ops out to run every enabled operation",
        )
    return names


@app.command("analyze")
def analyze_command(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(help="Python files or directories (default: the current directory)."),
    ] = None,
    ops: Annotated[list[str] | None, typer.Option("--ops", "-o", help=OPERATIONS_HELP)] = None,
    output: FormatOption = OutputFormat.table,
    diff: Annotated[
        bool, typer.Option("--diff", help="Print each proposed change as a unified diff.")
    ] = False,
    check: Annotated[
        bool,
        typer.Option(
            "--check",
            help="Exit 1 if any change was proposed (like ruff --check); 2 means a job failed.",
        ),
    ] = False,
    auto_accept: Annotated[
        bool, typer.Option("--auto-accept", help="Apply every proposed change right away.")
    ] = False,
    interactive: Annotated[
        bool, typer.Option("--interactive", "-i", help="Go straight into 'remora review'.")
    ] = False,
    backend: Annotated[
        Backend | None, typer.Option(help="llama_cpp: the embedded model; openai: a server.")
    ] = None,
    concurrency: Annotated[
        int | None, typer.Option("--concurrency", "-j", min=1, help="Jobs in flight at once.")
    ] = None,
    executor: ExecutorOption = None,
    ray_address: RayAddressOption = None,
    max_turns: Annotated[
        int | None, typer.Option("--max-turns", min=1, help="Turn limit for every agent.")
    ] = None,
    changed: Annotated[
        str | None,
        typer.Option(
            "--changed",
            metavar="[REF]",
            help="Only the nodes whose lines changed: the working tree and the index against "
            "REF (default HEAD; in CI the branch it merges into, e.g. origin/main, "
            "compared from where the branch left it). New files count whole. Write PATHS "
            "before it, or --changed=REF.",
        ),
    ] = None,
) -> None:
    """Run the agents on every node of PATHS and record the proposed changes for review.

    Each (operation x node) job runs in its own copy-on-write workspace: nothing reaches
    your files until you accept it ('remora review', or --auto-accept). The first run on
    the embedded model assembles it into the user cache (a few seconds) and then takes
    seconds to a minute per job on a laptop CPU; scope it with --ops and a path.

    Exit codes, as ruff's: 0 done (every job succeeded, partly succeeded, left its work to
    you, as a docstring whose summary no answer earned, or was skipped); 1 --check found
    changes to propose, or a file that does not parse; 2 Remora could not do its job (a
    job failed or timed out, an operation could not run, a usage or configuration error); 130
    interrupted (Ctrl-C: jobs stop between steps, finished jobs stay reviewable). A CI
    step can tell a finding (1) from a broken run (2).

    Examples:

        remora analyze src/pkg/module.py --ops docstring
        remora analyze . --ops lint --check --diff
        remora analyze --changed --ops lint,docstring
        remora analyze src/ --changed origin/main --check
        remora -v analyze src/ -j 4 --auto-accept
        remora analyze src/ --executor ray --ray-address auto
    """
    from remora.discovery import discover, find_project_root, target_path
    from remora.orchestration import plan_jobs
    from remora.workspace import WorkspaceManager

    targets = paths or [Path.cwd()]
    overrides = flag_overrides(
        {
            "model.backend": backend,
            "runner.concurrency": concurrency,
            "runner.max_turns": max_turns,
            "executor.kind": executor_kind(executor, ray_address),
            "executor.ray_address": ray_address,
        }
    )
    config = load_config(target_path(targets[0]), overrides).config
    root = find_project_root(target_path(targets[0]))
    lines = None
    if changed is not None:
        from remora.orchestration.changes import changed_files, git_changes

        lines = git_changes(root, changed)
        targets = changed_files(root, targets, lines)
        if not targets:
            _nothing_changed(root, output, f"no Python file changed against {changed}")
            return
    with err_console.status("discovering nodes...", spinner="dots"):
        discovered = discover(targets, config.discovery, root=root)
    _discovery_problems(discovered)
    agents = operations().load_agents(config.agents.dirs)
    plan = plan_jobs(config, agents, discovered.nodes, split_ops(ops))
    if lines is not None:
        from remora.orchestration.changes import changed_jobs

        stop_on_problems(plan)
        plan.jobs = changed_jobs(plan.jobs, discovered.nodes, lines)
        if not plan.jobs:
            _nothing_changed(root, output, f"no changed node against {changed} to run")
            _exit_discovery(discovered, check=check)
            return
    _problems(plan)
    manager = WorkspaceManager.from_config(root, config.workspace)
    result = _run(config, plan, discovered, manager, [str(path) for path in targets])
    _report(config, result, output, diff, manager)
    if auto_accept:
        _accept_all(manager, result)
    if interactive and result.manifest.summary().pending:
        from remora.cli.review import review_command

        review_command(run_id=result.run_id, operation=None, project=root)
    _exit(result, check=check, discovered=discovered)


@app.command("retry")
def retry_command(
    run_id: Annotated[
        str | None, typer.Argument(help="Run whose retries to run (default: the newest run).")
    ] = None,
    project: Annotated[
        Path | None,
        typer.Option(
            "--project", "-p", help="Project directory (default: the current one).", file_okay=False
        ),
    ] = None,
    output: FormatOption = OutputFormat.table,
) -> None:
    """Run again the jobs a review marked for retry ('t' in 'remora review'), as a new run.

    The nodes are rediscovered, so the retry sees the code as it is now; a node renamed or
    deleted since is reported. The model is shown what you said was wrong (the note 't'
    asks for) and samples its answer (temperature at least 0.7), so a retry is not the
    rejected answer again. Exit codes as for 'remora analyze'.

    Example: remora retry 20261123-101500123-3fa2c1
    """
    from remora.discovery import discover, find_project_root
    from remora.orchestration import ReviewService, RunManifest, plan_retries
    from remora.workspace import WorkspaceManager

    root = find_project_root(project or Path.cwd())
    config = load_config(root).config
    manager = WorkspaceManager.from_config(root, config.workspace)
    service = ReviewService(manager)
    manifest = service.reconcile(run_id)
    wanted = [job for job in manifest.jobs if job.review == "retry_requested"]
    if not wanted:
        console.print(f"nothing is marked for retry in run {shown(manifest.run_id)}")
        return
    files = sorted({root / job.file_path for job in wanted if job.file_path})
    discovered = discover(files, config.discovery, root=root)
    plan = plan_retries(
        config,
        operations().load_agents(config.agents.dirs),
        discovered.nodes,
        [(job.operation, job.node_id) for job in wanted],
        {(job.operation, job.node_id): job.retry_note for job in wanted},
    )
    _problems(plan)
    result = _run(config, plan, discovered, manager, [str(path) for path in files])
    retried = {job.job_id for job in wanted}

    def settle(old: RunManifest) -> None:
        for record in old.jobs:
            if record.job_id in retried:
                record.review = "retried"

    service.store.update(manifest.run_id, settle)
    _report(config, result, output, False, manager)
    _exit(result, check=False)


def stop_on_problems(plan: Plan) -> None:
    """Print every operation that cannot run, then stop before any work (RUN_020): a
    misspelt ``--ops`` name must not leave the others running."""
    for problem in plan.problems:
        err_console.print(
            f"RUN_020: {shown(problem.message)} ({shown(problem.hint)})",
            style="red",
            highlight=False,
            soft_wrap=True,
        )
    if plan.problems:
        names = ", ".join(problem.operation for problem in plan.problems)
        raise RunnerError(
            "RUN_020",
            f"nothing was run: {len(plan.problems)} operation(s) cannot run ({names})",
            "fix --ops or the configuration; 'remora list-agents' shows the agents",
        )


def _problems(plan: Plan) -> None:
    """Stop on operations that cannot run (RUN_020); RUN_021 when no node matches."""
    stop_on_problems(plan)
    if not plan.jobs:
        raise RunnerError(
            "RUN_021",
            "nothing to run: no node matches the operations",
            "check --ops and the paths; 'remora discover PATHS' lists the nodes",
        )


def _exit(result: RunResult, *, check: bool, discovered: DiscoveryResult | None = None) -> None:
    """The exit code as ruff's: 1 for findings (``--check`` and a change proposed, or a
    file that does not parse), 2 when Remora could not do its job (a job failed, an
    operation could not run), 130 when interrupted. (Operations that cannot run stop the
    command before any work.)"""
    if result.manifest.status == "interrupted":
        raise typer.Exit(EXIT_INTERRUPTED)
    if result.count("failed") > 0 or result.count("interrupted") > 0:  # e.g. a job timeout
        raise typer.Exit(EXIT_BROKEN)
    if check and result.changed:
        raise typer.Exit(EXIT_FINDINGS)
    if discovered is not None:
        _exit_discovery(discovered, check=check)


def _nothing_changed(root: Path, output: OutputFormat, why: str) -> None:
    """Say that ``--changed`` left nothing to run: in the output format asked for (an empty
    run for json, an empty log for sarif, so a CI upload still reads it), the words on
    stderr."""
    from remora.orchestration import RunManifest, new_run_id

    empty = RunManifest(run_id=new_run_id(), project_root=str(root), status="completed")
    if output is OutputFormat.json:
        sys.stdout.write(empty.model_dump_json(indent=2) + "\n")
    elif output is OutputFormat.sarif:
        from remora.orchestration.sarif import sarif_log

        sys.stdout.write(json.dumps(sarif_log(empty), indent=2) + "\n")
    else:
        console.print(f"{shown(why)}: nothing to run")
        return
    err_console.print(f"{shown(why)}: nothing to run", highlight=False)


UNPARSABLE = frozenset({"DISC_101", "DISC_102", "DISC_108"})
"""Discovery problems that leave a file unchecked: ``--check`` cannot pass it."""


def _discovery_problems(discovered: DiscoveryResult) -> None:
    """Say what discovery skipped or could not parse (the events record it too)."""
    for problem in discovered.problems:
        where = f"{problem.path}:{problem.line}" if problem.line else problem.path
        hint = f" ({problem.hint})" if problem.hint else ""
        err_console.print(
            f"{problem.code}: {shown(where)}: {shown(problem.message)}{shown(hint)}",
            style="yellow",
            highlight=False,
            soft_wrap=True,
        )


def _exit_discovery(discovered: DiscoveryResult, *, check: bool) -> None:
    """With ``--check``, exit 1 when a file could not be parsed: Remora cannot vouch for it."""
    if check and any(problem.code in UNPARSABLE for problem in discovered.problems):
        raise typer.Exit(EXIT_FINDINGS)


def _run(
    config: RemoraConfig,
    plan: Plan,
    discovered: DiscoveryResult,
    manager: WorkspaceManager,
    targets: list[str],
) -> RunResult:
    from remora.cli._run_display import ToolCallPrinter, run_display, running_jobs
    from remora.events import DiscoveryProblemEvent
    from remora.orchestration import interrupt_on_sigint, new_run_id, open_emitter, run_jobs
    from remora.orchestration.executor import executor_for

    verbose = (ToolCallPrinter(),) if OPTIONS.verbosity > 0 else ()
    running = running_jobs()
    emitter = open_emitter(config, manager.state_path, *verbose, running)
    run_id = new_run_id()
    for problem in discovered.problems:
        emitter.emit(
            DiscoveryProblemEvent(
                run_id=run_id,
                path=problem.path,
                code=problem.code,
                message=problem.message,
                hint=problem.hint,
            )
        )
    model = open_model(config.model) if config.executor.kind == "local" else None
    executor = executor_for(config, model)

    async def main() -> RunResult:
        cancel = asyncio.Event()
        try:
            with run_display(plan.jobs, running) as display, interrupt_on_sigint(cancel):
                return await run_jobs(
                    plan.jobs,
                    executor=executor,
                    config=config,
                    manager=manager,
                    targets=targets,
                    operations=plan.operations,
                    emitter=emitter,
                    cancel=cancel,
                    run_id=run_id,
                    on_done=display.finished,
                )
        finally:
            if model is not None:
                await model.aclose()
            emitter.close()

    return asyncio.run(main())


def _report(
    config: RemoraConfig,
    result: RunResult,
    output: OutputFormat,
    diff: bool,
    manager: WorkspaceManager,
) -> None:
    from remora.cli._run_display import footer, results_lines, results_table
    from remora.orchestration import ReviewService

    if output is OutputFormat.json:
        sys.stdout.write(result.manifest.model_dump_json(indent=2) + "\n")
    elif output is OutputFormat.sarif:
        from remora.orchestration.sarif import sarif_log, workspace_changes

        log = sarif_log(result.manifest, workspace_changes(manager, result.manifest))
        sys.stdout.write(json.dumps(log, indent=2) + "\n")
    elif console.is_terminal:
        console.print(results_table(result))
    else:
        for line in results_lines(result):
            console.print(line, markup=False, highlight=False, soft_wrap=True)
    if diff:
        service = ReviewService(manager)
        for record in result.manifest.jobs:
            if record.workspace_id and record.changed_files:
                for text in service.diff(record.workspace_id).values():
                    sys.stdout.write(visible(text, multiline=True) if console.is_terminal else text)
    if output is OutputFormat.table:
        notes = []
        if config.tools.isolation == "none":
            notes.append("isolation: none - project code ran WITHOUT isolation (tools.isolation)")
        console.print(footer(result, manager.project_root, notes), highlight=False)


def _accept_all(manager: WorkspaceManager, result: RunResult) -> None:
    from remora.errors import RemoraError
    from remora.orchestration import ReviewService

    service = ReviewService(manager)
    for record in result.manifest.pending_reviews():
        if record.workspace_id is None:
            continue
        try:
            service.accept(record.workspace_id)
            err_console.print(f"accepted {shown(record.workspace_id)}", highlight=False)
        except RemoraError as exc:
            err_console.print(visible(exc.render()), style="red", markup=False, highlight=False)
