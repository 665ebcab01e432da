"""``remora watch``: analyze again whatever you save, node by node."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from remora.cli._app import OPTIONS, app, console, err_console, open_model, operations
from remora.cli._app import load as load_config
from remora.cli._text import shown
from remora.cli.analyze import OPERATIONS_HELP, split_ops, stop_on_problems

if TYPE_CHECKING:
    from collections.abc import Sequence

    from remora.discovery import DiscoveryProblem
    from remora.orchestration import Job, RunResult
    from remora.runner import AgentResult


@app.command("watch")
def watch_command(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(help="Python files or directories (default: the current directory)."),
    ] = None,
    ops: Annotated[list[str] | None, typer.Option("--ops", "-o", help=OPERATIONS_HELP)] = None,
    initial: Annotated[
        bool, typer.Option("--initial", help="Analyze everything once before watching.")
    ] = False,
) -> None:
    """Watch PATHS and re-run the agents on exactly the functions, classes and files you change.

    Each save (debounced by watch.debounce_ms) rediscovers the saved files; only nodes
    whose source changed run, each run recorded for 'remora review' like 'remora analyze'.
    Accepting a change does not trigger a new run; a file with a syntax error is skipped
    until the next save. Ctrl-C stops (a run in progress is recorded as interrupted).

    Example: remora watch src/ --ops docstring
    """
    from remora.cli._run_display import ToolCallPrinter, footer, job_line
    from remora.discovery import find_project_root
    from remora.orchestration import interrupt_on_sigint, open_emitter, plan_jobs
    from remora.watch import WatchCallbacks, Watcher
    from remora.workspace import WorkspaceManager

    targets = [path.resolve() for path in (paths or [Path.cwd()])]
    config = load_config(targets[0]).config
    root = find_project_root(targets[0])
    agents = operations().load_agents(config.agents.dirs)
    wanted = split_ops(ops)
    stop_on_problems(plan_jobs(config, agents, [], wanted))  # before watching, not per save
    manager = WorkspaceManager.from_config(root, config.workspace)
    verbose = (ToolCallPrinter(),) if OPTIONS.verbosity > 0 else ()
    emitter = open_emitter(config, manager.state_path, *verbose)
    model = open_model(config.model)

    def ready(nodes: int, files: int) -> None:
        err_console.print(
            f"watching {nodes} nodes in {files} files under {shown(root)} (Ctrl-C stops)"
        )

    def problem(found: DiscoveryProblem) -> None:
        err_console.print(
            f"[yellow]{shown(found.render())}[/] - waiting for the next save",
            highlight=False,
        )

    def own(path: str) -> None:
        if OPTIONS.verbosity > 0:
            err_console.print(f"{shown(path)}: written by an accept, not re-run")

    def done(job: Job, result: AgentResult) -> None:
        if OPTIONS.verbosity >= 0:
            err_console.print(job_line(job, result), highlight=False, soft_wrap=True)

    def starting(jobs: Sequence[Job]) -> None:
        if OPTIONS.verbosity >= 0:
            files = sorted({job.node.file_path for job in jobs})
            err_console.print(
                f"re-running {len(jobs)} job(s) on what changed in {shown(', '.join(files))}",
                highlight=False,
            )

    def finished(result: RunResult) -> None:
        console.print(footer(result, root), highlight=False)

    watcher = Watcher(
        config=config,
        root=root,
        targets=targets,
        agents=agents,
        model=model,
        manager=manager,
        ops=wanted,
        emitter=emitter,
        callbacks=WatchCallbacks(
            on_ready=ready,
            on_problem=problem,
            on_own_write=own,
            on_done=done,
            on_run=finished,
            on_start=starting,
        ),
    )

    async def main() -> None:
        stop = asyncio.Event()
        try:
            with interrupt_on_sigint(stop):
                await watcher.watch(stop, initial=initial)
        finally:
            await model.aclose()
            emitter.close()

    asyncio.run(main())
    err_console.print(f"stopped after {len(watcher.runs)} run(s)")
