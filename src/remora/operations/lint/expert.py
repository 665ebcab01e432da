"""The lint expert: run the linter, fix what it lists one fix at a time, submit what the
tools confirmed."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from remora.contracts import SUBMIT_TOOL
from remora.model.base import ModelRequest, ToolCall
from remora.operations.experts import (
    ExpertError,
    MistakenCall,
    allowed_names,
    call,
    choose,
    join_words,
    seen_results,
)

_ISSUE = re.compile(r"line (\d+) ([A-Z]+[0-9]+) \((ruff_safe|ruff_unsafe|rewrite|manual)\)")
_FIXED = re.compile(r"^Fixed ([A-Z]+[0-9]+) on line (\d+)")


@dataclass(frozen=True)
class Issue:
    """One issue as a lint result lists it."""

    line: int
    code: str
    fix: str


def listed_issues(text: str) -> list[Issue]:
    """The fixable issues a ``run_linter`` or ``apply_fix`` summary lists, in its order."""
    return [
        Issue(int(found.group(1)), found.group(2), found.group(3))
        for found in _ISSUE.finditer(text)
        if found.group(3) != "manual"
    ]


def lint_summary(fixed: Sequence[tuple[str, int]]) -> str:
    """One sentence naming what was fixed, from the fixes the tools confirmed."""
    if not fixed:
        return "No issue could be fixed."
    if len(fixed) <= 3:
        return "Fixed " + join_words([f"{code} on line {line}" for code, line in fixed]) + "."
    counts: dict[str, int] = {}
    for code, _ in fixed:
        counts[code] = counts.get(code, 0) + 1
    listed = join_words([f"{code} x{count}" for code, count in counts.items()])
    return f"Fixed {len(fixed)} issues: {listed}."


@dataclass(frozen=True)
class LintExpert:
    """Lint, fix the first fixable issue listed until none is left, skipping fixes that
    failed (they stay on top of the list, which runs from the last line up), then submit.

    With ``mistake``, the first fix names a code reported on several lines with the line
    of another issue (a pairing the call grammar's choices allow): the tool refuses it,
    and the expert goes on as the prompt says.
    """

    mistake: bool = False

    def __call__(self, request: ModelRequest) -> ToolCall:
        seen = seen_results(request)
        if not seen:
            return call("run_linter")
        listed: list[Issue] = []
        failed: list[Issue] = []
        fixed: list[tuple[str, int]] = []
        for result in seen:
            if result.tool == "run_linter" and result.outcome == "success":
                listed, failed = listed_issues(result.summary), []
            elif result.tool == "apply_fix" and result.outcome == "success":
                done = _FIXED.match(result.summary)
                if done:
                    fixed.append((done.group(1), int(done.group(2))))
                still = result.summary.split("Still fixable:", 1)
                listed = listed_issues(still[1]) if len(still) == 2 else []
                # Failed issues keep their order at the top of the list; lines may move.
                kept: list[Issue] = []
                for issue in failed:
                    if len(kept) < len(listed) and listed[len(kept)].code == issue.code:
                        kept.append(listed[len(kept)])
                failed = kept
            elif result.tool == "apply_fix":
                code, line = result.arguments.get("code"), result.arguments.get("line")
                tried = [i for i in listed if (i.code, i.line) == (code, line)]
                failed.extend(tried[:1])

        def submit() -> ToolCall:
            return call(SUBMIT_TOOL, summary=lint_summary(fixed))

        todo = [issue for issue in listed if issue not in failed]
        if not todo:
            return choose(request, submit(), submit)
        issue = todo[0]
        for name, value in (("code", issue.code), ("line", issue.line)):
            allowed = request.choices.get(name)
            if allowed is not None and value not in allowed:
                raise ExpertError(f"{name}={value!r} is not among the reported choices")
        wrong = self._wrong_pair(listed) if len(seen) == 1 else None
        if wrong is not None and "apply_fix" in allowed_names(request):
            return wrong
        return choose(request, call("apply_fix", code=issue.code, line=issue.line), submit)

    def _wrong_pair(self, listed: Sequence[Issue]) -> ToolCall | None:
        """A code reported on several lines, paired with a line where it is not: the
        host corrects the line of a code reported once, so only this pairing is refused."""
        if not self.mistake:
            return None
        codes = [issue.code for issue in listed]
        for code in dict.fromkeys(c for c in codes if codes.count(c) > 1):
            taken = {issue.line for issue in listed if issue.code == code}
            line = next((i.line for i in listed if i.line not in taken), None)
            if line is not None:
                return MistakenCall(name="apply_fix", arguments={"code": code, "line": line})
        return None


lint_expert = LintExpert()
"""The lint policy without mistakes."""
