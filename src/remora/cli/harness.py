"""``remora harness``: the tool-call benchmark, on the embedded model or a server."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from remora.cli._app import (
    OPTIONS,
    Backend,
    FormatOption,
    OutputFormat,
    ToolChoice,
    app,
    console,
    err_console,
    flag_overrides,
    load,
    open_model,
    operations,
)
from remora.cli._text import shown, visible
from remora.discovery import discover, find_project_root, target_path
from remora.errors import RunnerError

if TYPE_CHECKING:
    from remora.harness import EpisodeRecord, HarnessReport

MAX_REQUESTS = 10_000
"""Most episodes per variant: every one is planned up front, so an unbounded -n allocated
until the OOM killer came (10,000 episodes already take hours)."""

# The harness, agent definitions and model backends are heavy (libcst, jsonschema, the
# agent loop): they are imported inside the command so other commands start fast.


@app.command("harness")
def harness_command(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            help="Python files or directories to run episodes on (default: the current directory)."
        ),
    ] = None,
    variants: Annotated[
        list[str] | None,
        typer.Option(
            "--variant",
            help="System-prompt variant to compare (repeatable): default, terse, stepwise...",
        ),
    ] = None,
    requests: Annotated[
        int,
        typer.Option("--requests", "-n", min=1, max=MAX_REQUESTS, help="Episodes per variant."),
    ] = 4,
    concurrency: Annotated[
        int, typer.Option("--concurrency", "-j", min=1, help="Episodes in flight at once.")
    ] = 1,
    backend: Annotated[
        Backend | None, typer.Option(help="llama_cpp: the embedded model; openai: a server.")
    ] = None,
    agent_name: Annotated[str, typer.Option("--agent", help="Agent to drive.")] = "harness",
    temperature: Annotated[
        float | None, typer.Option(help="Sampling temperature (default 0).")
    ] = None,
    tool_choice: Annotated[
        ToolChoice | None, typer.Option(help="required (default): every turn must call a tool.")
    ] = None,
    output: FormatOption = OutputFormat.table,
) -> None:
    """Measure how reliably the model drives an agent's tools.

    Runs the agent (by default the bundled harness agent: echo, then submit) on real
    nodes its precheck finds work on, REQUESTS times per prompt variant, CONCURRENCY at a
    time, through the same loop as a real run. Every call is checked against the agent's
    expectation (its YAML): an episode is a success only when it submitted and every call
    was as expected. Reports success and correct-call rates, tool-call, valid-call, miss
    and repeat rates, turns, latency p50/p95, token throughput and KV-cache hit ratio.

    Examples:

        remora harness examples/sample_project   # embedded model, the example project
        remora harness --agent lint -n 2 examples/sample_project
        remora harness --variant default --variant stepwise -n 8 --format json
        remora --set model.base_url=http://127.0.0.1:8000/v1 harness --backend openai
    """
    from remora.cli._run_display import ToolCallPrinter
    from remora.events import Emitter, FanoutEmitter, JsonlEmitter
    from remora.harness import DEFAULT_VARIANT, run_harness
    from remora.model.factory import describe_backend
    from remora.orchestration import interrupt_on_sigint

    targets = paths or [Path.cwd()]
    overrides = flag_overrides(
        {
            "model.backend": backend,
            "runner.temperature": temperature,
            "runner.tool_choice": tool_choice,
        }
    )
    config = load(target_path(targets[0]), overrides).config
    agents = operations().load_agents(config.agents.dirs)
    if agent_name not in agents:
        raise RunnerError(
            "RUN_014", f"unknown agent '{agent_name}'", f"known agents: {', '.join(agents)}"
        )
    root = find_project_root(target_path(targets[0]))
    nodes = discover(targets, config.discovery, root=root).nodes
    chosen = variants or [DEFAULT_VARIANT]
    model = open_model(config.model)
    total = requests * len(chosen)
    emitters: list[Emitter] = [ToolCallPrinter()] if OPTIONS.verbosity > 0 else []
    if config.events.enabled and config.events.path is not None:
        emitters.append(JsonlEmitter(config.events.path))  # the default path would be a temp dir
    emitter = FanoutEmitter(*emitters)
    finished = 0

    def episode_done(episode: EpisodeRecord) -> None:
        nonlocal finished
        finished += 1
        progress.advance(task)
        if not err_console.is_terminal and OPTIONS.verbosity >= 0:
            err_console.print(
                visible(
                    f"[{finished}/{total}] {episode.variant} {episode.node}: {episode.status}"
                    f"{_correctness(episode)} in {episode.wall_s:.1f}s"
                ),
                highlight=False,
                markup=False,
            )

    with Progress(
        TextColumn("[bold]harness[/bold] {task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
        disable=not err_console.is_terminal,
    ) as progress:
        described = describe_backend(config.model)
        task = progress.add_task(shown(described), total=total)

        async def main() -> HarnessReport:
            cancel = asyncio.Event()
            try:
                with interrupt_on_sigint(cancel):
                    return await run_harness(
                        agent=agents[agent_name],
                        nodes=nodes,
                        root=root,
                        model=model,
                        config=config,
                        backend=described,
                        variants=chosen,
                        requests=requests,
                        concurrency=concurrency,
                        on_episode=episode_done,
                        emitter=emitter,
                        cancel=cancel,
                    )
            finally:
                await model.aclose()
                emitter.close()

        report = asyncio.run(main())
    if output is OutputFormat.json:
        sys.stdout.write(json.dumps(report.model_dump(mode="json"), indent=2) + "\n")
    else:
        _render(report)
    # Failed or wrong episodes are what the benchmark measures; only a model that never
    # produced a valid call (down, misconfigured) makes the run itself an error.
    if report.episodes and all(
        episode.status != "success" and episode.calls == episode.invalid_calls
        for episode in report.episodes
    ):
        first = report.episodes[0].error or report.episodes[0].status
        raise RunnerError(
            "RUN_022",
            f"every one of the {len(report.episodes)} episodes failed without a valid call; "
            f"the first: {first}",
            "check the model ('remora doctor', model.* in 'remora config') and -v output",
        )


def _table(title: str, columns: list[str], caption: str) -> Table:
    table = Table(title=title, caption=caption, title_justify="left", caption_justify="left")
    for index, name in enumerate(columns):
        table.add_column(name, justify="left" if index == 0 else "right", no_wrap=True)
    return table


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _correctness(episode: EpisodeRecord) -> str:
    if episode.correct is None:
        return ""
    return ", correct" if episode.correct else f", not correct ({episode.problem})"


def _render(report: HarnessReport) -> None:
    console.print(
        f"[bold]{shown(report.agent)}[/bold] agent on [bold]{shown(report.backend)}[/bold]: "
        f"{report.requests} request(s) per variant, concurrency {report.concurrency}, "
        f"temperature {report.temperature}, tool_choice {shown(report.tool_choice)}"
    )
    console.print(
        f"expected: {shown(report.expectation)}"
        if report.expectation
        else "expected: not declared (the agent has no expectation; success means submitted)"
    )
    calls = _table(
        "Tool calls",
        ["variant", "success", "correct", "submit", "call", "valid", "miss", "repeat", "turns"],
        "success: runs that submitted with every call as expected; correct: calls with the "
        "expected name and arguments at their position; submit: runs that submitted; "
        "call: responses holding a usable call; valid: calls that passed the schema; "
        "repeat: calls identical to an earlier one",
    )
    speed = _table(
        "Speed",
        ["variant", "p50 s", "p95 s", "prompt tok/s", "gen tok/s", "cache hit"],
        "latency per model call; tokens per second of model time; cache hit: prompt "
        "tokens reused from the KV cache",
    )
    for stats in report.variants:
        calls.add_row(
            shown(stats.variant),
            _pct(stats.success_rate),
            _pct(stats.correct_call_rate),
            _pct(stats.submitted_rate),
            _pct(stats.tool_call_rate),
            _pct(stats.valid_call_rate),
            _pct(stats.miss_rate),
            _pct(stats.repeat_rate),
            f"{stats.mean_turns:.1f}",
        )
        speed.add_row(
            shown(stats.variant),
            f"{stats.latency_p50_s:.2f}",
            f"{stats.latency_p95_s:.2f}",
            f"{stats.prompt_tokens_per_s:.0f}",
            f"{stats.generated_tokens_per_s:.0f}",
            _pct(stats.cache_hit_ratio),
        )
    console.print(calls)
    console.print(speed)
    failed = [episode for episode in report.episodes if not episode.success]
    for episode in failed[:5]:
        why = (
            f"not correct: {episode.problem}"
            if episode.status == "success"
            else episode.error or "no error text"
        )
        console.print(
            f"[yellow]{shown(episode.variant)}[/yellow] {shown(episode.node)}: "
            f"{shown(episode.status)} ({shown(why)})"
        )
    if len(failed) > 5:
        console.print(f"... and {len(failed) - 5} more unsuccessful episode(s); --format json")
