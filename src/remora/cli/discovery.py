"""``remora discover``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from remora.cli._app import (
    FormatOption,
    OutputFormat,
    app,
    console,
    err_console,
    load,
)
from remora.cli._text import shown
from remora.discovery import DiscoveryResult, discover, find_project_root, target_path


@app.command("discover")
def discover_command(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(help="Python files or directories (default: the current directory)."),
    ] = None,
    output: FormatOption = OutputFormat.table,
) -> None:
    """List the files, classes, functions and methods Remora would work on.

    Honours .gitignore and skips virtualenvs, build and cache directories. Files it
    cannot use (undecodable, binary, too large, unreadable) are listed as problems, one
    line each: CODE: path: message (hint). A file with a syntax error, or one that takes
    longer than discovery.parse_timeout to parse, keeps its file node (and, for a syntax
    error, the definitions outside the error). Source is decoded as Python does: UTF-8, or
    the encoding a coding line declares.

    Example: remora discover src/ --format json
    """
    targets = paths or [Path.cwd()]
    loaded = load(target_path(targets[0]))
    with err_console.status("discovering nodes...", spinner="dots"):
        result = discover(
            targets, loaded.config.discovery, root=find_project_root(target_path(targets[0]))
        )
    if output is OutputFormat.json:
        sys.stdout.write(json.dumps(result.model_dump(mode="json"), indent=2) + "\n")
        return
    _render_discovery(result)


def _render_discovery(result: DiscoveryResult) -> None:
    table = Table(
        title=f"{len(result.nodes)} nodes in {result.files} files under {shown(result.root)}"
    )
    table.add_column("type", style="cyan")
    table.add_column("qualname", style="bold", overflow="fold")
    table.add_column("location", overflow="fold")
    table.add_column("node id", style="dim", no_wrap=True)
    for node in result.nodes:
        table.add_row(
            node.node_type,
            shown(node.qualname),
            f"{shown(node.file_path)}:{node.start_line}-{node.end_line}",
            node.node_id,
        )
    console.print(table)
    for problem in result.problems:
        console.print(shown(problem.render()), style="yellow", highlight=False, soft_wrap=True)
