"""The lint agent's capabilities: list what can be fixed, fix one thing, verify with the tests.

Every diagnostic comes from the real ruff with a pinned rule set (``options.select``, by
default :data:`~remora.operations.lint.rules.DEFAULT_RULES`), never ruff's moving
default selection, and is classified by how it can be fixed:

- ``ruff_safe``: ruff's own safe fix;
- ``rewrite``: a Remora rewrite (:mod:`._rewrites`) whose safety analysis accepts this site;
  for a rule Remora rewrites, that analysis decides, so ruff's unsafe fix is never used;
- ``ruff_unsafe``: ruff's unsafe fix, when ``options.unsafe_fixes`` allows it (the default:
  every change is verified here and reviewed by a person);
- ``manual``: nothing Remora may apply (the reason says why).

``lint_fix`` applies one fix and verifies it before anything is written: the file still
parses, the diagnostic is gone and no diagnostic of the rule set appeared. ``lint_verify``
runs the project's tests that import the module in the isolated runner and undoes the
job's edits of that file when they broke a test that passes without them. Suppression
comments (``# noqa``) are never written.

Codes: TOOL_302 no such diagnostic on that line, TOOL_303 no fix Remora may apply,
TOOL_305 the fix would leave a syntax error, TOOL_306 a bad rule code or a non-Python file,
TOOL_307 the fix would add a diagnostic or did not remove it (nothing written).
"""

from __future__ import annotations

import re
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from remora.errors import ToolError
from remora.operations.lint._rewrites import REWRITE_CODES, RewriteRefused, rewrite
from remora.operations.lint.options import LintOptions
from remora.operations.lint.rules import DEFAULT_RULES
from remora.tools.capabilities.project import module_tests
from remora.tools.capabilities.pysource import syntax_error
from remora.tools.capabilities.registry import CapabilityContext, capability
from remora.tools.capabilities.regressions import base_content, tests_broken_by
from remora.tools.capabilities.ruff import (
    apply_edits,
    fix_allowed,
    parse_codes,
    read_python,
    run_ruff,
    single_code,
)
from remora.tools.capabilities.store_io import (
    bounded_diff,
    decode_text,
    materialize,
    write_text,
)
from remora.tools.capabilities.values import as_int

FixKind = Literal["ruff_safe", "ruff_unsafe", "rewrite", "manual"]
FIXABLE: tuple[FixKind, ...] = ("ruff_safe", "rewrite", "ruff_unsafe")
MAX_FIX_ROUNDS = 200
"""At most this many fixes tried on one file by ``lint_fix_all``."""
_LINE_NUMBER = re.compile(r"\bline \d+")
_MODEL_STATE = "lint_model"
_SUPPRESSION = re.compile(r"#\s*(noqa|ruff\s*:\s*noqa|type:\s*ignore)", re.IGNORECASE)


@capability
def lint_issues(ctx: CapabilityContext, path: str) -> dict[str, Any]:
    """Lint one Python file with the pinned rule set; each issue says how it can be fixed.

    Issues have code, line, message, fix (ruff_safe, rewrite, ruff_unsafe or manual) and
    note. ``choices`` lists the codes and lines a fix can be asked for.
    """
    relative, text, _ = read_python(ctx, path, "lint_issues")
    with Linter(ctx, relative) as linter:
        issues = linter.classified(text)
    return _report(relative, issues)


@capability
def lint_fix(ctx: CapabilityContext, path: str, code: str, line: int) -> dict[str, Any]:
    """Fix the issue ``code`` on ``line`` (every such issue on that line) and verify it.

    When ``code`` is reported on one line only, a wrong ``line`` is corrected to it.
    Nothing is written unless the file still parses, the issue is gone and no new issue
    appeared. The result has the fix applied, the diff and the issues that remain.
    """
    relative, text, bom = read_python(ctx, path, "lint_fix")
    rule = single_code(code)
    row = as_int(line, "line")
    with Linter(ctx, relative) as linter:
        done = _fix(linter, text, rule, row)
    write_text(ctx, relative, done.text, bom=bom)
    report = _report(relative, done.remaining)
    fixed = {"code": rule, "line": done.line, "fix": done.kind, "description": done.description}
    if row != done.line:
        fixed["asked_line"] = row
    return {
        "fixed": fixed,
        "diff": bounded_diff(relative, text, done.text, context=1),
        **report,
    }


@capability
def lint_fix_all(ctx: CapabilityContext, path: str) -> dict[str, Any]:
    """Apply every fix Remora may apply, bottom-up, each verified as ``lint_fix`` verifies it.

    The result has the fixes made (code, line, fix, description), those refused with the
    reason, the issues that remain and the diff. Nothing is written when nothing was fixed.
    """
    relative, text, bom = read_python(ctx, path, "lint_fix_all")
    fixed: list[dict[str, Any]] = []
    refused: list[dict[str, Any]] = []
    tried: set[tuple[str, str]] = set()
    current = text

    with Linter(ctx, relative) as linter:
        raw, issues = linter.linted(current)
        for _ in range(MAX_FIX_ROUNDS):
            lines = current.splitlines()
            pending = [
                issue
                for issue in issues
                if issue["fix"] != "manual" and issue_key(issue, lines) not in tried
            ]
            if not pending:
                break
            issue = max(pending, key=lambda found: (found["line"], found["code"]))
            tried.add(issue_key(issue, lines))
            try:
                done = _fix(linter, current, issue["code"], issue["line"], (raw, issues))
            except ToolError as exc:
                refused.append(
                    {"code": issue["code"], "line": issue["line"], "reason": exc.message}
                )
                continue
            current, raw, issues = done.text, done.raw, done.remaining
            fixed.append(
                {
                    "code": issue["code"],
                    "line": done.line,
                    "fix": done.kind,
                    "description": done.description,
                }
            )
    if current != text:
        write_text(ctx, relative, current, bom=bom)
    return {
        "fixed": fixed,
        "refused": refused,
        "diff": bounded_diff(relative, text, current, context=1),
        **_report(relative, issues),
    }


def issue_key(issue: dict[str, Any], lines: list[str]) -> tuple[str, str]:
    """An issue by its code and its line's text: an edit above moves it, not this."""
    row = issue["line"]
    return issue["code"], lines[row - 1].strip() if 0 < row <= len(lines) else ""


@dataclass(frozen=True)
class _Fixed:
    text: str
    line: int
    kind: FixKind
    description: str
    raw: list[dict[str, Any]]
    """ruff's diagnostics of ``text``, and :attr:`remaining` classified from them."""
    remaining: list[dict[str, Any]]


def _fix(
    linter: Linter,
    text: str,
    rule: str,
    row: int,
    linted: tuple[list[dict[str, Any]], list[dict[str, Any]]] | None = None,
) -> _Fixed:
    """``text`` with the issue ``rule`` on ``row`` fixed and verified (ToolError if not).

    ``linted`` is ruff's diagnostics of ``text`` and their classification when the caller
    has them (the previous fix's result), so ``text`` is not linted twice."""
    raw, issues = linter.linted(text) if linted is None else linted
    here = [issue for issue in issues if issue["code"] == rule and issue["line"] == row]
    if not here:
        # A small model often pairs a code with the line of a neighbouring issue; when
        # the code is reported on one line only, that is the issue it means.
        lines = {issue["line"] for issue in issues if issue["code"] == rule}
        if len(lines) != 1:
            raise _not_reported(rule, row, issues)
        row = lines.pop()
        here = [issue for issue in issues if issue["code"] == rule and issue["line"] == row]
    kind: FixKind = here[0]["fix"]
    if kind == "manual":
        raise ToolError(
            "TOOL_303",
            f"{rule} on line {row} has no fix Remora may apply: {here[0]['note']}",
            "leave it for a person; fix another issue or submit",
        )
    if kind == "rewrite":
        done = rewrite(text, rule, row)
        new_text, description = done.text, done.description
    else:
        unsafe = kind == "ruff_unsafe"
        items = [
            item
            for item in raw
            if item.get("code") == rule
            and item["location"]["row"] == row
            and fix_allowed(item, unsafe)
        ]
        new_text, _ = apply_edits(text, items)
        description = str((items[0].get("fix") or {}).get("message") or f"ruff's fix for {rule}")
    raw_after = verified_fix(linter, rule, row, text, new_text, raw)
    remaining = [linter.classify(new_text, item) for item in raw_after]
    return _Fixed(new_text, row, kind, description, raw_after, remaining)


@capability
def lint_verify(ctx: CapabilityContext, path: str) -> dict[str, Any]:
    """Run the project's tests that import this module against the job's edits.

    When a test fails with the edits and passes without them, the edits of this file are
    undone (``reverted``); failures that happen either way are reported, not blamed.
    ``changed`` says whether the file differs from the project's after that, ``fixed``
    how many issues of each code the edits removed, ``left`` the issues that remain.
    """
    relative, text, _ = read_python(ctx, path, "lint_verify")
    tests = module_tests(ctx, relative)
    original = base_content(ctx, relative)
    result: dict[str, Any] = {
        "path": relative,
        "tests": tests,
        "ok": True,
        "changed": relative in ctx.store.changed_paths(),
        "reverted": False,
        "broken": [],
        "failing_anyway": [],
    }
    if tests and original is not None and result["changed"]:
        broken, result["failing_anyway"] = tests_broken_by(ctx, relative, original, tests)
        if broken:
            ctx.store.write(relative, original)
            result.update(ok=False, changed=False, reverted=True, broken=broken)
            text = decode_text(relative, original)
    result["fixed"], result["left"], result["for_a_person"] = _lint_outcome(
        ctx, relative, original, text
    )
    return result


@capability
def lint_result(ctx: CapabilityContext, path: str) -> dict[str, Any]:
    """The job's outcome, on the host's word: the tests that import the module run against
    the edits (undone if they broke one), then status, summary and details say what was
    fixed and what is left. ``partial`` when issues Remora may fix are left. ``counts``
    in the details (summed per row by ``remora eval --as-published``): the issues no tool
    may fix in the project's version of the file (``manual``), those left for a person,
    and the issues the model was asked about, its rewrites kept and refused; ``for_a_person``
    in the details: each issue left for a person, with its span (``remora analyze
    --format sarif`` reports them)."""
    checked = lint_verify(ctx, path)
    left = checked["left"]
    details: dict[str, Any] = {
        "tests_run": len(checked["tests"]),
        "issues_left": left["count"],
        "fixable_left": left["fixable"],
    }
    if checked["failing_anyway"]:
        details["tests_failing_without_the_fixes"] = checked["failing_anyway"]
    attempts = model_attempts(ctx)
    if attempts.asked:
        details |= attempts.account()
    if checked["for_a_person"]:
        details["for_a_person"] = checked["for_a_person"]
    details["counts"] = {
        "manual": _manual_count(ctx, checked["path"]),
        "left_for_a_person": left["count"] - left["fixable"],
        **attempts.counts(),
    }
    if checked["reverted"]:
        return {
            "status": "failed",
            "summary": "The fixes broke tests and were undone: " + ", ".join(checked["broken"][:5]),
            "details": {**details, "broken_tests": checked["broken"]},
        }
    if checked["changed"]:
        fixed = ", ".join(f"{code} x{count}" for code, count in checked["fixed"].items())
        tested = ""
        if checked["failing_anyway"]:
            tested = "; some tests fail with or without the fixes"
        elif checked["tests"]:
            tested = f"; the tests that import it still pass ({len(checked['tests'])} file(s))"
        manual = left["count"] - left["fixable"]
        rest = [f"{left['fixable']} fixable left"] if left["fixable"] else []
        rest += [f"{manual} for a person"] if manual else []
        return {
            "status": "partial" if left["fixable"] else "success",
            "summary": f"Fixed {fixed or 'issues'}{attempts.said()}; "
            + (", ".join(rest) if rest else "no issue left")
            + tested,
            "details": {**details, "fixed": checked["fixed"]},
        }
    if attempts.asked:
        return {
            "status": "left",
            "summary": f"Nothing changed{attempts.said()}; {left['count']} issue(s) for a person",
            "details": details,
        }
    if left["fixable"]:
        return {
            "status": "failed",
            "summary": f"{left['fixable']} fixable issue(s) were left unfixed",
            "details": details,
        }
    return {"status": "skipped", "summary": "nothing to fix", "details": details}


@dataclass
class ModelAttempts:
    """The model's rewrites in one job (:mod:`.residue`): per issue how often it was
    asked, the rewrites kept, those refused and the last complaint.
    Its account gives the issues asked per code."""

    tries: dict[tuple[str, int, str], int] = field(default_factory=dict)
    """Attempts per issue, by code, line and the line's text (two issues may share a
    line's text; the residue is asked last line first and a refused rewrite writes
    nothing, so the line of an issue still to ask does not move)."""
    rewritten: list[dict[str, Any]] = field(default_factory=list)
    refused: list[dict[str, Any]] = field(default_factory=list)
    complaint: str = ""

    @property
    def asked(self) -> bool:
        return bool(self.tries)

    def account(self) -> dict[str, Any]:
        """The job's details: issues asked, rewrites kept and refused."""
        return {
            "model_asked": dict(Counter(code for code, _, _ in self.tries)),
            "model_rewrites": list(self.rewritten),
            "model_refused": list(self.refused),
        }

    def counts(self) -> dict[str, int]:
        """The model's part in numbers: issues asked about, rewrites kept and refused."""
        return {
            "model_asked": len(self.tries),
            "model_kept": len(self.rewritten),
            "model_refused": len(self.refused),
        }

    def said(self) -> str:
        """The summary's clause on the model's part, or nothing when it was not asked."""
        if not self.asked:
            return ""
        kept = ", ".join(f"{item['code']} on line {item['line']}" for item in self.rewritten)
        parts = [f"the model's rewrite of {kept} was kept"] if kept else []
        if self.refused:
            parts.append(
                f"{len(self.refused)} rewrite(s) refused (last: {self.refused[-1]['problem']})"
            )
        return " (" + "; ".join(parts) + ")"


def _manual_count(ctx: CapabilityContext, relative: str) -> int:
    """The issues no tool may fix in the project's own version of the file (before the
    job's edits): the manual residue a person or the model is left with."""
    original = base_content(ctx, relative)
    if original is None:
        return 0
    with Linter(ctx, relative) as linter:
        issues = linter.classified(decode_text(relative, original))
    return sum(issue["fix"] == "manual" for issue in issues)


def model_attempts(ctx: CapabilityContext) -> ModelAttempts:
    """The job's :class:`ModelAttempts`, kept in its working state."""
    found = ctx.state.get(_MODEL_STATE)
    if not isinstance(found, ModelAttempts):
        found = ModelAttempts()
        ctx.state[_MODEL_STATE] = found
    return found


def _lint_outcome(
    ctx: CapabilityContext, relative: str, original: bytes | None, text: str
) -> tuple[dict[str, int], dict[str, int], list[dict[str, Any]]]:
    """The issues per code that the project's version of the file has and ``text`` lacks,
    how many issues (and fixable ones) ``text`` has, and those of them no tool may fix,
    where they are (for a person, and for reports such as SARIF)."""
    before_text = decode_text(relative, original) if original is not None else text
    with Linter(ctx, relative) as linter:
        raw, after = linter.linted(text)
        before = [issue["code"] for issue in after]
        if before_text != text:
            before = [_identity(item)[0] for item in linter.raw(before_text)]
    removed = Counter(before) - Counter(issue["code"] for issue in after)
    report = _report(relative, after)
    left = {"count": report["count"], "fixable": report["fixable"]}
    return dict(sorted(removed.items())), left, _for_a_person(raw, after)


def _for_a_person(raw: list[dict[str, Any]], issues: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``manual`` issues among ``issues`` (classified from ``raw``, in its order) with
    their span and ruff's documentation link."""
    found = []
    for item, issue in zip(raw, issues, strict=True):
        if issue["fix"] != "manual":
            continue
        start, end = item.get("location") or {}, item.get("end_location") or {}
        found.append(
            {
                "code": issue["code"],
                "line": issue["line"],
                "column": int(start.get("column") or 1),
                "end_line": int(end.get("row") or issue["line"]),
                "end_column": int(end.get("column") or 0) or None,
                "message": issue["message"],
                "note": issue["note"],
                "url": item.get("url") or None,
            }
        )
    return found


class Linter:
    """ruff on one file's text (through stdin, in a view so the project's config applies)."""

    def __init__(self, ctx: CapabilityContext, relative: str) -> None:
        self.ctx = ctx
        self.relative = relative
        self.options = ctx.options(LintOptions)
        self.rules = parse_codes(self.options.select) or list(DEFAULT_RULES)
        self.unsafe = self.options.unsafe_fixes

    def __enter__(self) -> Linter:
        self._view_cm = materialize(self.ctx)
        self._home_cm = tempfile.TemporaryDirectory()
        self.view = self._view_cm.__enter__()
        self.home = Path(self._home_cm.__enter__())
        return self

    def __exit__(self, *exc: object) -> None:
        self._home_cm.__exit__(None, None, None)
        self._view_cm.__exit__(None, None, None)

    def raw(self, text: str, rules: list[str] | None = None) -> list[dict[str, Any]]:
        targets = [f"--stdin-filename={self.view / self.relative}", "-"]
        return run_ruff(self.ctx, self.view, self.home, targets, rules or self.rules, stdin=text)

    def classified(self, text: str) -> list[dict[str, Any]]:
        return self.linted(text)[1]

    def linted(self, text: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """ruff's diagnostics of ``text`` and each classified (the fixes need the first)."""
        raw = self.raw(text)
        return raw, [self.classify(text, item) for item in raw]

    def classify(self, text: str, item: dict[str, Any]) -> dict[str, Any]:
        """One raw diagnostic as the model sees it, with its fix kind and a note."""
        code = str(item.get("code") or "invalid-syntax")
        row = int((item.get("location") or {}).get("row", 0))
        kind, note = self._fix_kind(text, code, row, item)
        return {
            "code": code,
            "line": row,
            "message": item.get("message", ""),
            "fix": kind,
            "note": note,
        }

    def _fix_kind(
        self, text: str, code: str, row: int, item: dict[str, Any]
    ) -> tuple[FixKind, str]:
        if code == "F401" and used_by_examples(text, str(item.get("message", ""))):
            return "manual", (
                "a docstring example uses the import: removing it would break the doctest"
            )
        if fix_allowed(item, unsafe=False):
            return "ruff_safe", "ruff's safe fix"
        if code in REWRITE_CODES:
            try:
                return "rewrite", rewrite(text, code, row).description
            except RewriteRefused as exc:
                return "manual", str(exc)
        if fix_allowed(item, unsafe=True):
            if self.unsafe:
                return "ruff_unsafe", "ruff's unsafe fix (verified before it is written)"
            return "manual", "only an unsafe fix exists and options.unsafe_fixes is off"
        return "manual", "no automatic fix exists for this rule"


_EXAMPLE_CODE = re.compile(r"^[ \t]*(?:>>>|\.\.\.)[ \t](.*)$", re.MULTILINE)
_IMPORTED = re.compile(r"`([\w.]+)`")


def used_by_examples(text: str, message: str) -> bool:
    """Whether the module's docstring examples (``>>>`` and ``...`` lines, which doctest
    runs with the module's globals) use the import an F401 ``message`` names: ruff does not
    read them, so its fix would break the doctest."""
    found = _IMPORTED.search(message)
    if found is None:
        return False
    parts = found.group(1).split(".")
    code = "\n".join(match.group(1) for match in _EXAMPLE_CODE.finditer(text))
    return any(re.search(rf"(?<![\w.]){re.escape(name)}\b", code) for name in {parts[0], parts[-1]})


def verified_fix(
    linter: Linter,
    rule: str,
    row: int,
    before: str,
    after: str,
    raw_before: list[dict[str, Any]],
) -> list[dict[str, Any]]:
    """ruff's diagnostics of ``after``, once it is shown to be a clean fix (else raise)."""
    where = f"{rule} on line {row}"
    if after == before:
        raise ToolError("TOOL_303", f"the fix for {where} changed nothing", "fix another issue")
    broken = syntax_error(after)
    if broken is not None:
        raise ToolError(
            "TOOL_305",
            f"the fix for {where} would leave a syntax error ({broken}); nothing was written",
            "fix another issue or submit",
        )
    if len(_SUPPRESSION.findall(after)) > len(_SUPPRESSION.findall(before)):
        raise ToolError(
            "TOOL_307", f"the fix for {where} would add a suppression comment", "fix another issue"
        )
    raw_after = linter.raw(after)
    added = Counter(map(_identity, raw_after)) - Counter(map(_identity, raw_before))
    if added:
        listed = ", ".join(f"{code} ({message})" for code, message in sorted(added))
        raise ToolError(
            "TOOL_307",
            f"the fix for {where} would add {listed}; nothing was written",
            "fix another issue or submit",
        )
    count_before = sum(1 for item in raw_before if item.get("code") == rule)
    count_after = sum(1 for item in raw_after if item.get("code") == rule)
    if count_after >= count_before:
        raise ToolError(
            "TOOL_307",
            f"the fix for {where} did not remove it; nothing was written",
            "fix another issue or submit",
        )
    return raw_after


def _identity(item: dict[str, Any]) -> tuple[str, str]:
    """A diagnostic without its position, so line shifts do not make it new."""
    message = _LINE_NUMBER.sub("line N", str(item.get("message", "")))
    return str(item.get("code") or "invalid-syntax"), message


def _report(relative: str, issues: list[dict[str, Any]]) -> dict[str, Any]:
    fixable = [issue for issue in issues if issue["fix"] in FIXABLE]
    return {
        "path": relative,
        "issues": issues,
        "count": len(issues),
        "fixable": len(fixable),
        "choices": {
            "code": sorted({issue["code"] for issue in fixable}),
            "line": sorted({issue["line"] for issue in fixable}),
        },
    }


def _not_reported(rule: str, row: int, issues: list[dict[str, Any]]) -> ToolError:
    lines = sorted({issue["line"] for issue in issues if issue["code"] == rule})
    if lines:
        hint = f"{rule} is reported on line(s) {', '.join(map(str, lines))}"
    elif issues:
        on_line = sorted({issue["code"] for issue in issues if issue["line"] == row})
        hint = (
            f"line {row} has {', '.join(on_line)}"
            if on_line
            else "issues: " + ", ".join(f"{i['code']} line {i['line']}" for i in issues[:10])
        )
    else:
        hint = "the file has no issues left; submit"
    return ToolError("TOOL_302", f"no {rule} on line {row}", hint)
