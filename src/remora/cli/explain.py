"""``remora explain CODE``: what an error code or a lint rule means, and what to do.

Remora's codes (``CONFIG_005``, ``TOOL_303``) come from :mod:`remora.error_codes`, read
from where they are raised and documented; lint rules (``F401``, ``B904``) from ruff's own
description and the lint operation's handling (:mod:`remora.operations.lint.explain`).

Codes: CLI_001 the code is neither one Remora raises nor a lint rule ruff knows.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import re
import sys
from typing import Annotated, Any

import typer
from rich.markdown import Markdown

from remora.cli._app import FormatOption, OutputFormat, app, console
from remora.cli._text import shown
from remora.error_codes import CODE_TEXT, ErrorCode, exit_code, lookup, normalize, registry
from remora.errors import RemoraError

_LINT_CODE = re.compile(r"^[A-Z]{1,4}[0-9]{1,4}$")


class UsageError(RemoraError):
    """A command was given something it cannot use (CLI_xxx)."""

    prefix = "CLI"
    exit_code = 2


@app.command("explain")
def explain_command(
    code: Annotated[
        str,
        typer.Argument(help="A Remora error code (CONFIG_005, TOOL_303) or a lint rule (B904)."),
    ],
    output: FormatOption = OutputFormat.table,
) -> None:
    """Explain an error code or a lint rule: what it means, why Remora refuses or leaves
    it, and what to do.

    Remora's codes are read from where they are raised (each message and hint) and
    documented; a lint rule from ruff's own description and what the lint operation does
    with it (the host fixes it, leaves it for you, or asks the model).

    Examples:

        remora explain CONFIG_005
        remora explain B904
    """
    wanted = normalize(code)
    if CODE_TEXT.match(wanted):
        entry = lookup(wanted)
        if entry is None:
            raise _unknown(code, _close_codes(wanted))
        _show_code(entry, output)
        return
    if _LINT_CODE.match(wanted):
        from remora.operations.lint.explain import explain_rule

        rule = explain_rule(wanted)
        if rule is None:
            raise _unknown(code, [])
        if output is OutputFormat.json:
            sys.stdout.write(json.dumps(dataclasses.asdict(rule), indent=2) + "\n")
            return
        _show_rule(rule)
        return
    raise _unknown(code, [])


def _unknown(code: str, close: list[str]) -> UsageError:
    hint = (
        f"did you mean {' or '.join(close)}? " if close else ""
    ) + "give a Remora error code such as CONFIG_005 (as printed before an error's message) "
    hint += "or a lint rule such as F401 ('ruff rule --all' lists ruff's rules)"
    return UsageError(
        "CLI_001",
        f"{code!r} is neither an error code Remora raises nor a lint rule ruff knows",
        hint,
    )


def _close_codes(code: str) -> list[str]:
    return difflib.get_close_matches(code, list(registry()), n=3, cutoff=0.8)


def _code_data(entry: ErrorCode) -> dict[str, Any]:
    family = entry.family
    return {
        "code": entry.code,
        "kind": "error_code",
        "error_class": family.error_class if family else None,
        "family": family.summary if family else None,
        "exit_code": exit_code(entry),
        "meaning": entry.meaning,
        "documented": [dataclasses.asdict(item) for item in entry.documented],
        "raised": [dataclasses.asdict(item) for item in entry.raised],
        "hints": entry.hints,
    }


def _show_code(entry: ErrorCode, output: OutputFormat) -> None:
    data = _code_data(entry)
    if output is OutputFormat.json:
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
        return
    head = f"[bold]{entry.code}[/]: {shown(entry.meaning)}"
    console.print(head, highlight=False, soft_wrap=True)
    if entry.family is not None:
        console.print(
            f"{shown(entry.family.error_class)}: {shown(entry.family.summary)} "
            f"(remora exits {data['exit_code']})",
            style="dim",
            highlight=False,
            soft_wrap=True,
        )
    documented: dict[str, list[str]] = {}
    for item in entry.documented:
        documented.setdefault(item.text, []).append(item.where)
    if len(documented) > 1 or any(len(places) > 1 for places in documented.values()):
        console.print("\n[bold]What the documentation says[/]")
        for text, places in documented.items():
            where = ", ".join(places)
            console.print(f"  {shown(text)}  [dim]({shown(where)})[/]", soft_wrap=True)
    said = [site for site in entry.raised if site.message]
    if said:
        console.print("\n[bold]What Remora says when it raises it[/]")
        for site in said:
            console.print(f"  {shown(site.message)}", highlight=False, soft_wrap=True)
            if site.hint and site.hint in entry.hints:
                console.print(f"    hint: {shown(site.hint)}", highlight=False, soft_wrap=True)
            console.print(f"    [dim]{shown(site.where)}[/]", highlight=False)
    if entry.hints:
        console.print("\n[bold]What to do[/]")
        for hint in entry.hints:
            console.print(f"  - {shown(hint)}", highlight=False, soft_wrap=True)
    console.print(
        "\n[dim]{...} stands for a value known when the error is raised: the message "
        "names the file, key or value.[/]",
        highlight=False,
    )


def _show_rule(rule: Any) -> None:
    console.print(
        f"[bold]{shown(rule.code)}[/] {shown(rule.name)} ({shown(rule.linter)}): "
        f"{shown(rule.summary)}",
        highlight=False,
        soft_wrap=True,
    )
    where = "in Remora's pinned rule set" if rule.in_rule_set else "not in Remora's rule set"
    console.print(f"{where}; ruff: {shown(rule.ruff_fix)}", style="dim", highlight=False)
    console.print("\n[bold]What Remora does with it[/]")
    for step in rule.steps:
        console.print(f"  - {shown(step)}", highlight=False, soft_wrap=True)
    if rule.refusals:
        console.print("\n[bold]Remora's rewrite leaves a site for you when[/]")
        for reason in rule.refusals:
            console.print(f"  - {shown(reason)}", highlight=False, soft_wrap=True)
    console.print("\n[bold]What to do[/]")
    console.print(f"  {shown(rule.to_do)}", highlight=False, soft_wrap=True)
    console.print(f"\n[bold]ruff's description[/] ({shown(rule.url)})\n", highlight=False)
    console.print(Markdown(rule.explanation))
