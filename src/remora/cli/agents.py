"""``remora list-agents`` and ``remora validate-agents``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from remora.cli._app import (
    FormatOption,
    OutputFormat,
    app,
    console,
    load,
    operations,
)
from remora.cli._text import shown, visible
from remora.config import RemoraConfig

if TYPE_CHECKING:
    from remora.definitions import AgentCheck

# remora.definitions pulls in the tool capabilities (libcst, jsonschema...): it is
# imported inside the commands so `remora --help` and other commands start fast.


@app.command("list-agents")
def list_agents_command(
    output: FormatOption = OutputFormat.table,
) -> None:
    """List the agents Remora can run: node types, tools and their effects, adapter, status.

    Agents come from the bundled set plus every folder in agents.dirs; a user agent with
    the same name as a bundled one replaces it. The status column runs the same checks
    as validate-agents.

    Example: remora list-agents --set 'agents.dirs=[my_agents]' --format json
    """
    config = load(None).config
    checks = operations().library.check(config.agents.dirs)
    rows = [_describe(check, checks[i + 1 :], config) for i, check in enumerate(checks)]
    if output is OutputFormat.json:
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return
    table = Table(title=f"{len(rows)} agent(s)")
    table.add_column("agent", style="bold", no_wrap=True)
    table.add_column("nodes", no_wrap=True)
    table.add_column("tools (effect)", overflow="fold")
    table.add_column("turns", justify="right", no_wrap=True)
    table.add_column("adapter", overflow="fold")
    table.add_column("status", no_wrap=True)
    for row in rows:
        origin = "bundled" if row["source"] == "bundled" else "user"
        agent = f"{shown(row['name'])}\n[dim]{origin}[/dim]"
        if row["operations"]:
            agent += f"\n[cyan]ops: {shown(', '.join(row['operations']))}[/cyan]"
        tools = "\n".join(shown(f"{tool['name']} ({tool['effect']})") for tool in row["tools"])
        status = "[green]ok[/green]" if row["ok"] else f"[red]{len(row['problems'])} problem(s)"
        if row["shadowed_by"]:
            status += "\n[dim]shadowed[/dim]"
        table.add_row(
            agent,
            "\n".join(row["applies_to"]),
            tools,
            str(row["max_turns"] or ""),
            shown(Path(row["adapter"]).stem) if row["adapter"] else "none",
            status,
        )
    console.print(table)


def _describe(check: AgentCheck, later: list[AgentCheck], config: RemoraConfig) -> dict[str, Any]:
    """One agent's row; ``later`` are the checks after it, which may shadow it."""
    definition = check.definition
    shadow = next(
        (other.source for other in later if other.definition and other.name == check.name), None
    )
    operations = [name for name in config.operations if config.agent_of(name) == check.name]
    return {
        "name": check.name,
        "path": str(check.path),
        "source": check.source,
        "applies_to": list(definition.applies_to) if definition else [],
        "max_turns": definition.max_turns if definition else None,
        "adapter": str(definition.model) if definition and definition.model else None,
        "tools": [
            {"name": tool.name, "effect": tool.effect, "description": tool.description}
            for tool in (definition.tools if definition else [])
        ],
        "operations": operations,
        "ok": check.ok,
        "problems": [problem.render() for problem in check.problems],
        "shadowed_by": shadow,
    }


@app.command("validate-agents")
def validate_agents_command(
    directory: Annotated[
        Path | None,
        typer.Argument(
            help="An agent folder or a folder of agent folders (default: bundled + agents.dirs)."
        ),
    ] = None,
) -> None:
    """Check agent definitions and every .pym tool they use; exit 1 on any problem.

    Checks the YAML schema, the tool set (exactly one terminal submit_result), the
    node_context template, inputs_override, context providers, adapters, and runs the
    .pym checker on every script, reporting each problem as CODE: message (hint) with
    file:line for script problems.

    Example: remora validate-agents my_agents/
    """
    from remora.definitions import check_agents

    library = operations().library
    if directory is not None:
        checks = check_agents([(str(directory), directory)], registry=library.capabilities)
    else:
        checks = library.check(load(None).config.agents.dirs)
    failed = [check for check in checks if not check.ok]
    for check in checks:
        if check.ok:
            assert check.definition is not None
            tools = ", ".join(f"{tool.name} ({tool.effect})" for tool in check.definition.tools)
            console.print(
                f"[green]ok[/green]   {shown(check.name)}  [dim]{shown(check.path)}[/dim]\n"
                f"       tools: {shown(tools)}",
                highlight=False,
            )
            continue
        console.print(
            f"[red]FAIL[/red] {shown(check.name)}  [dim]{shown(check.path)}[/dim]", highlight=False
        )
        for problem in check.problems:
            console.print(
                f"       {visible(problem.render())}", markup=False, highlight=False, soft_wrap=True
            )
    summary = f"{len(checks)} agent(s) checked, {len(failed)} with problems"
    console.print(summary if failed else f"{summary}: all valid", highlight=False)
    if failed:
        raise typer.Exit(1)
