"""The lint agent's one model decision: the issues no tool may fix (the manual residue).

After the host has applied every fix it can verify, the model is shown one manual issue at a
time: its code and message, why no tool may fix it, and the lines involved (the statement,
or a compound statement's header). It answers with those lines rewritten. The rewrite is
kept only when it is verified like every fix (the file parses, the issue is gone, no new
issue, no suppression comment), changes nothing but what the rule asks (the module's syntax
tree is the same once that change is undone, :mod:`.meaning`: ruff alone accepted ``None``
for ``raise Error(...)``) and the project's tests that import the module or its package
(:func:`package_tests`) still pass; otherwise nothing is written and the model may try once
more with the complaint in front of it. Only codes whose fix stays within the lines shown
and can be checked that way are asked about (:data:`MODEL_CODES`); a rename across a scope
(E741, B007), a moved default (B006) or an import (F401, F403, F811, F821) is left for the
person.

Codes: TOOL_302 the issue is not the one asked about.
"""

from __future__ import annotations

import ast
import re
import textwrap
from typing import Any

from remora.errors import ToolError
from remora.operations.lint.capabilities import (
    Linter,
    ModelAttempts,
    issue_key,
    model_attempts,
    verified_fix,
)
from remora.operations.lint.meaning import NORMALIZERS, changed_meaning
from remora.operations.lint.rules import DEFAULT_RULES
from remora.tools.capabilities.project import (
    MAX_TEST_FILES,
    is_test_file,
    module_names,
    module_tests,
)
from remora.tools.capabilities.registry import CapabilityContext, capability
from remora.tools.capabilities.regressions import tests_broken_by
from remora.tools.capabilities.ruff import apply_edits, fix_allowed, read_python, single_code
from remora.tools.capabilities.store_io import (
    bounded_diff,
    scan_text,
    store_read,
    walk_files,
    write_text,
)
from remora.tools.capabilities.values import as_int

LEFT_TO_THE_PERSON = frozenset({"E741", "B006", "F401", "F403", "F811", "F821"})
MODEL_CODES: tuple[str, ...] = tuple(
    code for code in DEFAULT_RULES if code not in LEFT_TO_THE_PERSON and code in NORMALIZERS
)
"""The manual issues the model is asked to rewrite: their fix stays within the lines shown
and the host can show a rewrite changes nothing else (:mod:`.meaning`)."""
MAX_ATTEMPTS = 2
"""Rewrites asked for one issue: the second comes with the first one's complaint."""
MAX_LINES = 8
"""Issues whose lines involved are more than this are left for the person."""
_FENCE = re.compile(r"^\s*```[a-zA-Z]*\s*\n(.*?)\n?\s*```\s*$", re.DOTALL)
_INLINE = re.compile(r"^\s*`([^`\n]+)`\s*$")


def involved_lines(text: str, line: int) -> tuple[int, int] | None:
    """The lines (first, last; 1-based) a fix of an issue reported on ``line`` touches: the
    innermost simple statement holding it, or the header of a compound statement or except
    clause; None when the source does not parse or no statement holds the line."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    best: tuple[int, int] | None = None
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt | ast.ExceptHandler):
            continue
        start, end = node.lineno, node.end_lineno or node.lineno
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.AST):
            end = max(start, min(getattr(child, "lineno", end) for child in body) - 1)
        if start <= line <= end and (best is None or end - start <= best[1] - best[0]):
            best = (start, end)
    return best


def _key(issue: dict[str, Any], lines: list[str]) -> tuple[str, int, str]:
    """An issue of the residue: its code, line and the line's text."""
    code, text = issue_key(issue, lines)
    return code, issue["line"], text


def _askable(
    ctx: CapabilityContext, text: str, issues: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The manual issues the model may be asked about, last line first, each with the
    lines involved."""
    state = model_attempts(ctx)
    lines = text.splitlines()
    found = []
    for issue in sorted(issues, key=lambda item: (-item["line"], item["code"])):
        if issue["fix"] != "manual" or issue["code"] not in MODEL_CODES:
            continue
        if state.tries.get(_key(issue, lines), 0) >= MAX_ATTEMPTS:
            continue
        span = involved_lines(text, issue["line"])
        if span is None or span[1] - span[0] + 1 > MAX_LINES:
            continue
        found.append({**issue, "start": span[0], "end": span[1]})
    return found


@capability
def lint_residue(ctx: CapabilityContext, path: str) -> dict[str, Any]:
    """The next issue no tool may fix that the model is asked to rewrite, and the evidence.

    ``issue`` has code, line, message, note (why no tool may fix it), start and end (the
    lines involved), or is None when nothing is left to ask; ``left`` counts the issues
    still to ask; ``text`` is what the model is shown.
    """
    relative, text, _ = read_python(ctx, path, "lint_residue")
    with Linter(ctx, relative) as linter:
        raw, issues = linter.linted(text)
        unsafe = linter.unsafe
    askable = _askable(ctx, text, issues)
    if not askable:
        return {"issue": None, "left": 0, "text": ""}
    issue = askable[0]
    shown = "\n".join(text.splitlines()[issue["start"] - 1 : issue["end"]])
    candidate = _candidate(text, issue, raw) if unsafe else None
    where = (
        f"Line {issue['start']}"
        if issue["start"] == issue["end"]
        else f"Lines {issue['start']}-{issue['end']}"
    )
    complaint = model_attempts(ctx).complaint
    evidence = (
        (f"Your rewrite was not kept: {complaint}.\n" if complaint else "")
        + f"Issue {issue['code']} on line {issue['line']}: {issue['message']}.\n"
        f"Why no tool fixed it: {issue['note']}.\n"
        f"{where}:\n{shown}\n"
        + (
            f"ruff's unsafe fix, not applied because of that, would give:\n{candidate}\n"
            if candidate
            else ""
        )
        + f"Call rewrite_lines with the new text of {where.lower()}."
    )
    return {"issue": issue, "left": len(askable), "text": evidence, "candidate": candidate}


def _candidate(text: str, issue: dict[str, Any], raw: list[dict[str, Any]]) -> str | None:
    """The lines involved as ruff's own fix of the issue (safe or unsafe) would leave
    them, if it has one."""
    items = [
        item
        for item in raw
        if item.get("code") == issue["code"]
        and item["location"]["row"] == issue["line"]
        and fix_allowed(item, unsafe=True)
    ]
    if not items:
        return None
    fixed, _ = apply_edits(text, items)
    before, after = text.splitlines(), fixed.splitlines()
    tail = len(before) - issue["end"]
    lines = after[issue["start"] - 1 : len(after) - tail]
    return "\n".join(lines) if lines and tail >= 0 else None


def package_tests(ctx: CapabilityContext, relative: str) -> list[str]:
    """The tests a model's rewrite of ``relative`` must not break: those that import the
    module, then those that import its top-level package (at most
    :data:`~remora.tools.capabilities.project.MAX_TEST_FILES` files). A package's tests
    often reach a module only through the package: sqlparse's ``tests/test_format.py``
    imports ``sqlparse``, never ``sqlparse.formatter``."""
    found = module_tests(ctx, relative)
    names = module_names(relative)
    if not names or "." not in names[0]:
        return found
    top = re.escape(names[0].split(".")[0])
    imports = re.compile(rf"^\s*(?:import|from)\s+{top}(?:\s|\.|$|,)", re.MULTILINE)
    for candidate in walk_files(ctx, "", (".py",)):
        if len(found) >= MAX_TEST_FILES:
            break
        if candidate in found or not is_test_file(candidate):
            continue
        source = scan_text(ctx, candidate)
        if source is not None and imports.search(source):
            found.append(candidate)
    return found


def fitted(original: list[str], proposed: str) -> list[str]:
    """The model's rewrite as lines indented like ``original``: a code fence or the
    backticks around one line stripped, its own common indentation replaced by that of the
    first original line."""
    fenced = _FENCE.match(proposed) or _INLINE.match(proposed)
    body = fenced.group(1) if fenced else proposed
    rows = textwrap.dedent(body.strip("\n")).splitlines()
    first = original[0] if original else ""
    indent = first[: len(first) - len(first.lstrip())]
    return [indent + row if row.strip() else "" for row in rows]


@capability
def lint_rewrite(
    ctx: CapabilityContext, path: str, code: str, line: int, text: str
) -> dict[str, Any]:
    """Replace the lines involved in the issue ``code`` on ``line`` (the one
    :func:`lint_residue` asks about) with ``text``, verified like every fix, then with
    the project's tests that import the module.

    ``rewritten`` says whether it was kept; ``problem`` why not; ``diff`` what changed.
    """
    relative, before, bom = read_python(ctx, path, "lint_rewrite")
    rule = single_code(code)
    row = as_int(line, "line")
    state = model_attempts(ctx)
    with Linter(ctx, relative) as linter:
        raw, issues = linter.linted(before)
        askable = _askable(ctx, before, issues)
        if not askable or (askable[0]["code"], askable[0]["line"]) != (rule, row):
            asked = f"{askable[0]['code']} on line {askable[0]['line']}" if askable else "none"
            raise ToolError(
                "TOOL_302",
                f"{rule} on line {row} is not the issue asked about (asked: {asked})",
                "rewrite the lines of the issue the last result named",
            )
        issue = askable[0]
        lines = before.splitlines()
        key = _key(issue, lines)
        state.tries[key] = state.tries.get(key, 0) + 1
        start, end = issue["start"], issue["end"]
        shown = "\n".join(lines[start - 1 : end])
        rows = fitted(lines[start - 1 : end], text)
        proposed = {"before": shown, "after": "\n".join(rows)}
        if not any(row.strip() for row in rows):
            return _refused(state, issue, "the new text is empty", proposed)
        after = "\n".join(lines[: start - 1] + rows + lines[end:])
        if before.endswith("\n"):
            after += "\n"
        try:
            verified_fix(linter, rule, row, before, after, raw)
        except ToolError as exc:
            return _refused(state, issue, exc.message, proposed)
    changed = changed_meaning(rule, before, after)
    if changed is not None:
        return _refused(state, issue, changed, proposed)
    original = store_read(ctx, relative)
    write_text(ctx, relative, after, bom=bom)
    broken, _ = tests_broken_by(ctx, relative, original, package_tests(ctx, relative))
    if broken:
        ctx.store.write(relative, original)
        problem = "it breaks the tests " + ", ".join(broken[:3])
        return _refused(state, issue, problem, proposed)
    state.complaint = ""
    done = {"code": rule, "line": row, "start": start, "end": end}
    state.rewritten.append({**done, **proposed})
    return {
        "rewritten": True,
        "problem": "",
        "diff": bounded_diff(relative, before, after, context=1),
        **done,
    }


def _refused(
    state: ModelAttempts, issue: dict[str, Any], problem: str, proposed: dict[str, str]
) -> dict[str, Any]:
    """Nothing written: the complaint the model sees next, and the refusal in the job's
    details with the lines shown (``before``) and the model's rewrite (``after``)."""
    state.complaint = problem
    state.refused.append(
        {"code": issue["code"], "line": issue["line"], "problem": problem, **proposed}
    )
    return {"rewritten": False, "problem": problem, "diff": "", "code": issue["code"]}


@capability
def lint_ask(ctx: CapabilityContext, path: str, action: str) -> dict[str, Any]:
    """The tool result after a rewrite: ``action`` (what happened), then the next issue to
    rewrite (``choices`` hold its code and line), or ``submit_result`` alone, which the
    host calls."""
    residue = lint_residue(ctx, path)
    issue = residue["issue"]
    if issue is None:
        said = action or "No issue is left for the model to rewrite."
        return {"outcome": "success", "summary": said, "next_tools": ["submit_result"]}
    return {
        "outcome": "success",
        "summary": f"{action}\n{residue['text']}".strip(),
        "next_tools": ["rewrite_lines", "submit_result"],
        "choices": {"code": [issue["code"]], "line": [issue["line"]]},
    }
