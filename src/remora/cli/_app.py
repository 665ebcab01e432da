"""The Typer app, shared consoles and the options several commands take."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from remora import __version__
from remora.config import LoadedConfig, load_config, parse_assignments

app = typer.Typer(
    name="remora",
    help=(
        "Improve Python code one function at a time with small local models.\n\n"
        "Remora finds every file, class, function and method, runs tool-calling agents "
        "(lint, docstring, test, sample_data) on each, keeps every change in a "
        "copy-on-write workspace and lets you accept or reject it per node."
    ),
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",
    context_settings={"help_option_names": ["-h", "--help"]},
)
console = Console()
err_console = Console(stderr=True)


class OutputFormat(StrEnum):
    table = "table"
    json = "json"


class ConfigFormat(StrEnum):
    yaml = "yaml"
    json = "json"


FormatOption = Annotated[
    OutputFormat, typer.Option("--format", "-f", help="table for people, json for machines.")
]
ConfigFileOption = Annotated[
    Path | None,
    typer.Option(
        "--config",
        "-c",
        help="Config file to use instead of searching for remora.yaml / pyproject.toml upward.",
        dir_okay=False,
    ),
]
SetOption = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        "-s",
        help="Override one config value, e.g. --set runner.max_turns=4 (repeatable).",
        metavar="KEY=VALUE",
    ),
]


def load(
    target: Path | None, config_file: Path | None, assignments: list[str] | None
) -> LoadedConfig:
    return load_config(
        target, config_file=config_file, overrides=parse_assignments(assignments or [])
    )


def _version(value: bool) -> None:
    if value:
        console.print(f"remora {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version.")
    ] = False,
) -> None:
    """Remora: verified, reviewable code improvements from small local models."""
