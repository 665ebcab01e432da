"""Lint capabilities: run the real ruff and apply exactly one kind of fix through the store.

``ruff_check`` runs ``ruff check --output-format json --no-cache --force-exclude`` in a
materialized view of the workspace on the Python files the workspace lists (the view links
unchanged directories, which ruff would not descend), so the project's own ruff
configuration applies, excludes included, and nothing is written to the project.
``ruff_fix`` applies the edits ruff's JSON carries for one code (optionally one line) to
the workspace content itself, verifies the result still parses and writes it back
through the store.

Codes: TOOL_104 a line that is not a number, TOOL_301 ruff failed or printed something
unreadable, TOOL_302 no such diagnostic, TOOL_303 the diagnostic has no automatic fix,
TOOL_304 only an unsafe fix exists and ``unsafe`` was not set, TOOL_305 the fix would leave
a syntax error (nothing written), TOOL_306 invalid rule code or a file ruff_fix cannot edit.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from remora.errors import ToolError
from remora.source_edits import TextEdit
from remora.tools.capabilities.pysource import syntax_error
from remora.tools.capabilities.registry import CapabilityContext, capability
from remora.tools.capabilities.store_io import (
    bounded_diff,
    checked_path,
    is_dir,
    materialize,
    not_found,
    read_source,
    walk_files,
    write_text,
)
from remora.tools.capabilities.values import as_int
from remora.tools.process import run_command, scrubbed_env

_CODE = re.compile(r"^[A-Z]+[0-9]*$")
_NEWLINE = re.compile(r"\r\n|\r|\n")
_SYNTAX = "invalid-syntax"
_MAX_PASSES = 5
_BATCH = 400
_PYTHON_SUFFIXES = (".py", ".pyi")


def ruff_command() -> list[str]:
    """The ruff installed next to this interpreter, else ``python -m ruff``."""
    binary = Path(sys.executable).parent / ("ruff.exe" if sys.platform == "win32" else "ruff")
    return [str(binary)] if binary.is_file() else [sys.executable, "-m", "ruff"]


@capability
def ruff_check(
    ctx: CapabilityContext, path: str, select: list[str] | str | None = None
) -> dict[str, Any]:
    """Lint a file or directory with ruff and list the issues, fixable ones marked.

    ``path`` is a file or directory (``""`` for the whole workspace); ``select`` (e.g.
    ``["F401", "E"]``) replaces the project's rule selection. Each issue has code, line,
    col, end_line, end_col, message, fixable and applicability (safe, unsafe or none;
    unsafe fixes need ``unsafe=True``).
    """
    relative = checked_path(ctx, path, allow_root=True)
    directory = is_dir(ctx, relative)
    if not directory and not ctx.store.exists(relative):
        raise not_found(ctx, relative, "path")
    codes = parse_codes(select)
    files = walk_files(ctx, relative, _PYTHON_SUFFIXES) if directory else [relative]
    raw: list[dict[str, Any]] = []
    with materialize(ctx) as view, tempfile.TemporaryDirectory() as home:
        for start in range(0, len(files), _BATCH):
            batch = [str(view / name) for name in files[start : start + _BATCH]]
            raw.extend(run_ruff(ctx, view, Path(home), ["--force-exclude", *batch], codes))
    issues = [issue_of(item, view) for item in raw]
    issues.sort(key=lambda issue: (issue["path"], issue["line"], issue["col"], issue["code"]))
    return _report(relative or ".", issues)


@capability
def ruff_fix(
    ctx: CapabilityContext,
    path: str,
    code: str,
    line: int | None = None,
    unsafe: bool = False,
) -> dict[str, Any]:
    """Apply ruff's fix for one rule code (every occurrence, or only the one on ``line``).

    The edit goes to the workspace copy; the result shows the diff and how many issues
    remain. A fix that would break the syntax is refused and nothing is written.
    """
    relative, original, bom = read_python(ctx, path, "ruff_fix")
    rule = single_code(code)
    line = None if line is None else as_int(line, "line")
    text = original
    applied = 0
    with materialize(ctx) as view, tempfile.TemporaryDirectory() as home:
        stdin_name = [f"--stdin-filename={view / relative}", "-"]
        for attempt in range(1 if line is not None else _MAX_PASSES):
            scanned = text
            same_code = run_ruff(ctx, view, Path(home), stdin_name, [rule], stdin=text)
            found = [
                item
                for item in same_code
                if item.get("code") == rule and (line is None or item["location"]["row"] == line)
            ]
            if attempt == 0:
                _check_fixable(ctx, view, Path(home), stdin_name, text, rule, line, found, unsafe)
            edited, count = apply_edits(text, [item for item in found if fix_allowed(item, unsafe)])
            if not count or edited == text:
                break
            text, applied = edited, applied + count
        broken = syntax_error(text)
        if broken is not None:
            raise ToolError(
                "TOOL_305",
                f"the fix for {rule} would leave a syntax error ({broken}); nothing was written",
                "fix this issue by editing the code instead",
            )
        final = run_ruff(ctx, view, Path(home), stdin_name, stdin=text)
        remaining = [issue_of(item, view) for item in final]
        if scanned != text:  # the last pass changed the text: scan for the rule once more
            same_code = run_ruff(ctx, view, Path(home), stdin_name, [rule], stdin=text)
    if text != original:
        write_text(ctx, relative, text, bom=bom)
    by_code = Counter(issue["code"] for issue in remaining)
    return {
        "path": relative,
        "code": rule,
        "line": line,
        "fixes_applied": applied,
        "changed": text != original,
        "diff": bounded_diff(relative, original, text, context=1),
        "remaining": len(remaining),
        "remaining_for_code": sum(1 for item in same_code if item.get("code") == rule),
        "remaining_codes": dict(sorted(by_code.items())),
    }


def parse_codes(select: list[str] | str | None) -> list[str]:
    if select is None:
        return []
    items = select.replace(",", " ").split() if isinstance(select, str) else list(select)
    codes = [str(item).strip().upper() for item in items if str(item).strip()]
    bad = [code for code in codes if not _CODE.match(code)]
    if bad:
        raise ToolError(
            "TOOL_306",
            f"invalid rule code(s): {', '.join(bad)}",
            "use ruff codes or prefixes such as 'F401' or 'E'",
        )
    return codes


def read_python(ctx: CapabilityContext, path: str, tool: str) -> tuple[str, str, bool]:
    """:func:`read_source` of a Python file; TOOL_306 names ``tool`` for any other file."""
    relative, text, bom = read_source(ctx, path)
    if not relative.endswith(_PYTHON_SUFFIXES):
        raise ToolError(
            "TOOL_306", f"{tool} works on Python files only, not '{relative}'", "pass a .py file"
        )
    return relative, text, bom


def single_code(code: str) -> str:
    """``code`` as one full rule code such as ``F401`` (TOOL_306 for a prefix or a list)."""
    wanted = parse_codes(code)
    if len(wanted) != 1 or not any(ch.isdigit() for ch in wanted[0]):
        raise ToolError(
            "TOOL_306", f"'{code}' is not a single rule code", "pass one code such as 'F401'"
        )
    return wanted[0]


def run_ruff(
    ctx: CapabilityContext,
    view: Path,
    home: Path,
    targets: list[str],
    select: list[str] | None = None,
    *,
    stdin: str | None = None,
    options: tuple[str, ...] = (),
) -> list[dict[str, Any]]:
    """Raw diagnostics from one ruff run (on files, or on ``stdin`` named by a target).

    ``view`` is where ruff runs, so the project configuration found there applies unless
    ``options`` holds ``--isolated``.
    """
    argv = [*ruff_command(), "check", "--output-format=json", "--no-cache", "--exit-zero"]
    if select:
        argv.append("--select=" + ",".join(select))
    result = run_command(
        [*argv, *options, *targets],
        cwd=view,
        env=scrubbed_env(home),
        timeout=ctx.time_left(ctx.config.subprocess_timeout),
        what="ruff",
        input_data=(stdin or "").encode("utf-8"),
        output_limit=8_000_000,
    )
    try:
        data = json.loads(result.stdout) if result.returncode == 0 else None
    except json.JSONDecodeError:
        data = None
    if not isinstance(data, list):
        detail = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise ToolError(
            "TOOL_301",
            f"ruff failed (exit code {result.returncode}): {detail}",
            "check the project's ruff configuration",
        )
    return [item for item in data if isinstance(item, dict)]


def issue_of(item: dict[str, Any], view: Path) -> dict[str, Any]:
    fix = item.get("fix") or {}
    applicability = fix.get("applicability") if fix.get("edits") else None
    if applicability not in ("safe", "unsafe"):
        applicability = "none"
    filename = os.path.abspath(str(item.get("filename", "")))
    shown = filename
    for base in (os.path.abspath(view), str(view.resolve())):
        if filename.startswith(base + os.sep):
            shown = Path(os.path.relpath(filename, base)).as_posix()
            break
    location, end = item.get("location") or {}, item.get("end_location") or {}
    return {
        "path": shown,
        "code": item.get("code") or _SYNTAX,
        "line": location.get("row", 0),
        "col": location.get("column", 0),
        "end_line": end.get("row", 0),
        "end_col": end.get("column", 0),
        "message": item.get("message", ""),
        "fixable": applicability != "none",
        "applicability": applicability,
        "fix": fix.get("message"),
    }


def _report(path: str, issues: list[dict[str, Any]]) -> dict[str, Any]:
    by_code = Counter(issue["code"] for issue in issues)
    return {
        "path": path,
        "issues": issues,
        "count": len(issues),
        "fixable_count": sum(1 for issue in issues if issue["fixable"]),
        "codes": dict(sorted(by_code.items())),
        "syntax_errors": by_code.get(_SYNTAX, 0),
    }


def fix_allowed(item: dict[str, Any], unsafe: bool) -> bool:
    fix = item.get("fix") or {}
    kind = fix.get("applicability")
    return bool(fix.get("edits")) and (kind == "safe" or (unsafe and kind == "unsafe"))


def _check_fixable(
    ctx: CapabilityContext,
    view: Path,
    home: Path,
    stdin_name: list[str],
    text: str,
    rule: str,
    line: int | None,
    found: list[dict[str, Any]],
    unsafe: bool,
) -> None:
    """Raise the error that tells the caller why nothing can be fixed, if that is the case."""
    where = f" on line {line}" if line is not None else ""
    if not found:
        present = [
            issue_of(item, view) for item in run_ruff(ctx, view, home, stdin_name, stdin=text)
        ]
        lines = sorted({issue["line"] for issue in present if issue["code"] == rule})
        if lines:
            hint = f"{rule} is reported on line(s) {', '.join(map(str, lines))}"
        elif present:
            codes = sorted({issue["code"] for issue in present})
            hint = f"codes reported in this file: {', '.join(codes)}"
        else:
            hint = "ruff reports no issues in this file"
        raise ToolError("TOOL_302", f"ruff reports no {rule}{where}", hint)
    if any(fix_allowed(item, unsafe) for item in found):
        return
    if any(fix_allowed(item, True) for item in found):
        raise ToolError(
            "TOOL_304",
            f"the fix for {rule}{where} is unsafe (it may change behaviour)",
            "call again with unsafe=true if the change is intended, or edit the code",
        )
    raise ToolError(
        "TOOL_303",
        f"ruff has no automatic fix for {rule}{where}: {found[0].get('message', '')}",
        "edit the code by hand (read the file, then write the corrected version)",
    )


def apply_edits(text: str, items: list[dict[str, Any]]) -> tuple[str, int]:
    """``text`` with every non-overlapping fix applied, and how many fixes that was."""
    starts = [0, *(match.end() for match in _NEWLINE.finditer(text))]

    def offset(location: dict[str, Any]) -> int:
        row, column = int(location["row"]), int(location["column"])
        if row > len(starts):
            return len(text)
        return min(starts[row - 1] + column - 1, len(text))

    chosen: list[TextEdit] = []
    seen: set[tuple[TextEdit, ...]] = set()
    count = 0
    for item in sorted(items, key=lambda i: (i["location"]["row"], i["location"]["column"])):
        edits = tuple(
            sorted(
                TextEdit(offset(edit["location"]), offset(edit["end_location"]), edit["content"])
                for edit in item["fix"]["edits"]
            )
        )
        if edits in seen:
            count += 1
            continue
        if any(new.overlaps(old) for new in edits for old in chosen):
            continue
        seen.add(edits)
        chosen.extend(edits)
        count += 1
    for edit in sorted(chosen, key=lambda e: (e.start, e.end), reverse=True):
        text = text[: edit.start] + edit.new + text[edit.end :]
    return text, count


def format_text(ctx: CapabilityContext, path: str, text: str) -> str:
    """``text`` as ``ruff format`` writes it at ``path`` under the project's configuration
    (line length, quotes, ...); ``text`` unchanged when ruff cannot format it (formatting is
    never a reason to lose what was written)."""
    with materialize(ctx) as view, tempfile.TemporaryDirectory() as home:
        try:
            result = run_command(
                [*ruff_command(), "format", "--no-cache", "--stdin-filename", str(view / path)],
                cwd=view,
                env=scrubbed_env(Path(home)),
                timeout=ctx.time_left(ctx.config.subprocess_timeout),
                what="ruff format",
                input_data=text.encode("utf-8"),
                output_limit=8_000_000,
            )
        except ToolError:
            return text
    return result.stdout if result.returncode == 0 and result.stdout.strip() else text
