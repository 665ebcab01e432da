"""``remora config``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml
from rich.table import Table

from remora.cli._app import ConfigFormat, app, console, load
from remora.cli._text import shown
from remora.config import flatten_keys


@app.command("config")
def config_command(
    target: Annotated[
        Path | None, typer.Argument(help="Where to start searching for the config (default: .).")
    ] = None,
    output: Annotated[ConfigFormat, typer.Option("--format", "-f")] = ConfigFormat.yaml,
    sources: Annotated[
        bool, typer.Option("--sources", help="Show where each value came from.")
    ] = False,
) -> None:
    """Print the effective configuration.

    Values come from, highest first: --set flags, REMORA_SECTION__KEY environment
    variables, remora.yaml (or [tool.remora] in pyproject.toml, searched upward),
    then defaults. With --sources every key is shown with its origin.

    Example: REMORA_RUNNER__MAX_TURNS=4 remora config --sources
    """
    loaded = load(target)
    data: Any = loaded.config.model_dump(mode="json")
    if sources:
        if output is ConfigFormat.json:
            sys.stdout.write(json.dumps(loaded.sources, indent=2) + "\n")
            return
        table = Table(title=f"config file: {shown(loaded.file or 'none found')}")
        table.add_column("key", style="bold", overflow="fold")
        table.add_column("value", overflow="fold")
        table.add_column("source", style="cyan")
        flat = flatten_keys(data)
        for key, origin in loaded.sources.items():
            table.add_row(shown(key), shown(json.dumps(flat.get(key))), shown(origin))
        console.print(table)
        return
    if output is ConfigFormat.json:
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
    else:
        sys.stdout.write(yaml.safe_dump(data, sort_keys=False))
