"""The Typer app, shared consoles and the options several commands take."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from remora import __version__
from remora.config import LoadedConfig, ModelConfig, load_config, parse_assignments
from remora.model.base import ModelClient

if TYPE_CHECKING:
    from remora.operations import OperationRegistry

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
# emoji=False: Rich would turn ":thumbs_up:" in a file name into an emoji even without markup
console = Console(emoji=False)
err_console = Console(stderr=True, emoji=False)
PLAIN_WIDTH = 4096
"""The width of output that goes to no terminal (a CI log, a pipe, a file) when COLUMNS does
not say one: wide enough that a table is never wrapped, since no terminal will wrap it."""


class ColorChoice(StrEnum):
    auto = "auto"
    always = "always"
    never = "never"


def set_up_consoles(color: ColorChoice = ColorChoice.auto) -> None:
    """Configure both consoles: colour as ``--color`` says (``auto``: on a terminal, unless
    NO_COLOR is set, as ruff and pytest do), and the plain width off a terminal."""
    for target, stderr in ((console, False), (err_console, True)):
        settings: dict[str, Any] = {"stderr": stderr, "emoji": False}
        if color is ColorChoice.always:
            settings["force_terminal"] = True
        elif color is ColorChoice.never or os.environ.get("NO_COLOR"):
            settings["no_color"] = True
        target.__init__(**settings)  # type: ignore[misc]
        if not target.is_terminal and not os.environ.get("COLUMNS"):
            target.width = PLAIN_WIDTH


set_up_consoles()


class OutputFormat(StrEnum):
    table = "table"
    json = "json"
    sarif = "sarif"


SARIF_COMMANDS = frozenset({"analyze", "retry"})
"""The commands that write a run as SARIF (``--format sarif``); the others refuse it."""


def _check_format(ctx: typer.Context, value: OutputFormat) -> OutputFormat:
    if value is OutputFormat.sarif and ctx.info_name not in SARIF_COMMANDS:
        raise typer.BadParameter(
            "sarif is written by 'remora analyze' and 'remora retry' only; use table or json"
        )
    return value


class ConfigFormat(StrEnum):
    yaml = "yaml"
    json = "json"


class Backend(StrEnum):
    llama_cpp = "llama_cpp"
    openai = "openai"


class ExecutorKind(StrEnum):
    local = "local"
    ray = "ray"


ExecutorOption = Annotated[
    ExecutorKind | None,
    typer.Option(
        "--executor",
        help="local: jobs in this process; ray: on the workers of a Ray cluster, each with "
        "its own model (pip install 'remora[ray]'; docs/cluster.md). Default: executor.kind.",
    ),
]
RayAddressOption = Annotated[
    str | None,
    typer.Option(
        "--ray-address",
        metavar="ADDRESS",
        help="Run on this Ray cluster (implies --executor ray): auto joins the one 'ray start "
        "--head' began here, HOST:6379 another; with --executor ray alone, a local Ray "
        "instance is started for the run.",
    ),
]


def executor_kind(kind: ExecutorKind | None, ray_address: str | None) -> ExecutorKind | None:
    """``--executor`` as given, or ray when only ``--ray-address`` was (None: neither)."""
    if kind is None and ray_address is not None:
        return ExecutorKind.ray
    return kind


class ToolChoice(StrEnum):
    required = "required"
    auto = "auto"


FormatOption = Annotated[
    OutputFormat,
    typer.Option(
        "--format",
        "-f",
        help="table for people, json for machines, sarif (analyze, retry) for code scanning.",
        callback=_check_format,
    ),
]


@dataclass
class GlobalOptions:
    """The options every command shares, given once before the command name."""

    config_file: Path | None = None
    assignments: list[str] = field(default_factory=list)
    verbosity: int = 0  # -1 quiet, 0 normal, 1 verbose (every tool call)


OPTIONS = GlobalOptions()

_GLOBAL_WITH_VALUE = ("--config", "-c", "--set", "-s", "--color")
_GLOBAL_FLAGS = ("--quiet", "-q", "--verbose")
_COUNTED = re.compile(r"^-v+$")


def _global(token: str) -> int:
    """How many tokens the global option starting at ``token`` takes (0: not one)."""
    if token in _GLOBAL_WITH_VALUE:
        return 2
    if token.startswith(tuple(f"{name}=" for name in _GLOBAL_WITH_VALUE if name[1] == "-")):
        return 1
    if token in _GLOBAL_FLAGS or _COUNTED.match(token):
        return 1
    return 0


def hoist_global_options(args: list[str]) -> list[str]:
    """``args`` with the global options given after the command name moved before it, so
    ``remora analyze . --set runner.max_turns=4 -v`` works as users type it (no command
    has an option of the same name). Nothing after ``--`` moves."""
    index = 0
    while index < len(args) and (width := _global(args[index])):
        index += width  # the global options already in front
    if index >= len(args) or args[index].startswith("-"):
        return list(args)
    front, rest = list(args[:index]), [args[index]]
    position = index + 1
    while position < len(args):
        token = args[position]
        if token == "--":
            rest.extend(args[position:])
            break
        width = _global(token)
        if width:
            front.extend(args[position : position + width])
            position += width
        else:
            rest.append(token)
            position += 1
    return front + rest


OPTIONAL_VALUES = {"--changed": "HEAD"}
"""Options whose value may be left out, with the value they then take: ``--changed`` alone
is ``--changed HEAD``."""


def fill_optional_values(args: list[str]) -> list[str]:
    """``args`` with the value of an option of :data:`OPTIONAL_VALUES` filled in where it was
    left out: at the end, before another option, or before an existing path (a path is
    taken for a path, not a revision; ``--changed=REF`` is always a value)."""
    filled: list[str] = []
    for index, token in enumerate(args):
        filled.append(token)
        if token == "--":
            return filled + list(args[index + 1 :])
        if token in OPTIONAL_VALUES:
            following = args[index + 1] if index + 1 < len(args) else None
            if following is None or following.startswith("-") or Path(following).exists():
                filled.append(OPTIONAL_VALUES[token])
    return filled


def flag_overrides(values: dict[str, object | None]) -> list[str]:
    """``key=value`` overrides for a command's own flags that were given (None: not given)."""
    return [
        f"{key}={value.value if isinstance(value, StrEnum) else value}"
        for key, value in values.items()
        if value is not None
    ]


def load(target: Path | None, overrides: list[str] | None = None) -> LoadedConfig:
    """The config for ``target`` with the installed operations' defaults, the global
    --config/--set and a command's own flags (``overrides``, which win over --set)."""
    registry = operations()
    loaded = load_config(
        target,
        config_file=OPTIONS.config_file,
        overrides=parse_assignments([*OPTIONS.assignments, *(overrides or [])]),
        operations=registry.default_configs(),
    )
    registry.check_options(loaded)
    for warning in loaded.warnings:
        err_console.print(f"warning: {warning}", style="yellow", highlight=False, soft_wrap=True)
    return loaded


def operations() -> OperationRegistry:
    """The installed operations (bundled plus entry points), assembled once per process."""
    from remora.operations import installed_operations

    return installed_operations()


def _version(value: bool) -> None:
    if value:
        console.print(f"remora {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version.")
    ] = False,
    config_file: Annotated[
        Path | None,
        typer.Option(
            "--config",
            "-c",
            help="Config file to use instead of searching for remora.yaml / pyproject.toml "
            "upward from the target.",
            dir_okay=False,
        ),
    ] = None,
    assignments: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            "-s",
            help="Override one config value, e.g. --set runner.max_turns=4 (repeatable); "
            "every key is in docs/configuration.md.",
            metavar="KEY=VALUE",
        ),
    ] = None,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="Only results and errors; no progress.")
    ] = False,
    verbose: Annotated[
        int, typer.Option("--verbose", "-v", count=True, help="Show every tool call as it runs.")
    ] = 0,
    color: Annotated[
        ColorChoice,
        typer.Option(
            "--color",
            help="Colour the output: auto (on a terminal, unless NO_COLOR is set), always or "
            "never.",
        ),
    ] = ColorChoice.auto,
) -> None:
    """Remora: verified, reviewable code improvements from small local models.

    Options before the command apply to every command, e.g.
    remora --set runner.concurrency=4 -v analyze src/
    """
    OPTIONS.config_file = config_file
    OPTIONS.assignments = list(assignments or [])
    OPTIONS.verbosity = -1 if quiet else verbose
    if color is not ColorChoice.auto:
        set_up_consoles(color)


def open_model(config: ModelConfig) -> ModelClient:
    """The configured backend. For the in-process one the load probe runs now, before any
    job starts, under a spinner when it has to start a child (once per machine, llama.cpp
    build and model), so a build that crashes on this CPU is one MODEL_024 error up front."""
    from remora.model import create_client
    from remora.model.llama_cpp import LlamaCppBackend

    model = create_client(config)
    if isinstance(model, LlamaCppBackend):
        if model.load_profile_known():
            model.choose_load_profile()
        else:
            with err_console.status(
                "checking that llama.cpp runs on this CPU (once per machine, build and model)...",
                spinner="dots",
            ):
                model.choose_load_profile()
    return model
