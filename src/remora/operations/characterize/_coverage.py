"""Line and branch coverage of one function, from a coverage.py JSON report.

coverage.py measures whole files; a characterization test is judged on the function it was
written for, so the report is cut down to the function's own lines: its body (the ``def``
line runs at import and says nothing about the tests), and the branches that start there.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from remora import pyast
from remora.tools.capabilities.pysource import find_definition


class FunctionCoverage(BaseModel):
    """Covered and total statements and branches of one function."""

    lines_covered: int
    lines_total: int
    branches_covered: int
    branches_total: int
    missing_lines: list[int] = []
    missing_branches: list[tuple[int, int]] = []
    """Branches never taken, as (from line, to line); a negative target leaves the function."""

    @property
    def complete(self) -> bool:
        """Every line ran and every branch was taken."""
        return self.lines_covered == self.lines_total and not self.missing_branches

    @property
    def line_rate(self) -> float:
        return self.lines_covered / self.lines_total if self.lines_total else 0.0

    @property
    def branch_rate(self) -> float:
        """Covered share of the branches; a function without branches counts as fully covered
        when its lines ran, as coverage.py's own combined figure does."""
        if not self.branches_total:
            return 1.0 if self.lines_covered else 0.0
        return self.branches_covered / self.branches_total

    def summary(self) -> str:
        lines = f"lines {self.lines_covered}/{self.lines_total} ({self.line_rate:.0%})"
        if not self.branches_total:
            return lines + ", no branches"
        return lines + (
            f", branches {self.branches_covered}/{self.branches_total} ({self.branch_rate:.0%})"
        )


@dataclass(frozen=True)
class FunctionSpan:
    """The lines of a function's body: from its first statement to its last line."""

    first: int
    last: int

    def __contains__(self, line: object) -> bool:
        return isinstance(line, int) and self.first <= line <= self.last


def function_span(source: str, qualname: str) -> FunctionSpan:
    """The body span of ``qualname`` (``Class.method`` included); ValueError if absent."""
    located = find_definition(pyast.parse(source), qualname)
    if located is None:
        raise ValueError(f"{qualname!r} is not defined in this module")
    found = located.node
    if isinstance(found, ast.ClassDef):
        raise ValueError(f"{qualname!r} names a class, not a function")
    first = found.body[0]
    is_docstring = (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
        and len(found.body) > 1
    )
    start = found.body[1] if is_docstring else first
    return FunctionSpan(start.lineno, found.end_lineno or start.lineno)


def function_coverage(file_report: Mapping[str, Any], span: FunctionSpan) -> FunctionCoverage:
    """Coverage of ``span`` from one file's entry of ``coverage json`` (run with ``--branch``)."""
    executed = [line for line in file_report.get("executed_lines", []) if line in span]
    missing = [line for line in file_report.get("missing_lines", []) if line in span]
    taken = [arc for arc in file_report.get("executed_branches", []) if arc[0] in span]
    not_taken = [arc for arc in file_report.get("missing_branches", []) if arc[0] in span]
    return FunctionCoverage(
        lines_covered=len(executed),
        lines_total=len(executed) + len(missing),
        branches_covered=len(taken),
        branches_total=len(taken) + len(not_taken),
        missing_lines=missing,
        missing_branches=[(int(arc[0]), int(arc[1])) for arc in not_taken],
    )


def file_entry(report: Mapping[str, Any], path_suffix: str) -> Mapping[str, Any]:
    """The entry of ``report['files']`` whose path ends with ``path_suffix`` (empty if none ran)."""
    files: Mapping[str, Any] = report.get("files", {})
    suffix = path_suffix.replace("\\", "/").lstrip("/")
    for name, entry in files.items():
        normalized = name.replace("\\", "/")
        if normalized == suffix or normalized.endswith("/" + suffix):
            return entry  # type: ignore[no-any-return]
    return {}
