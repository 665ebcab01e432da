"""The lint expert: rewrite an injected issue's lines back to the code the authors wrote.

The planner (:mod:`.corpus`) injects one issue no tool may fix into real code and knows
the lines it changed. When the host asks about that issue, the expert answers with the
original text of the lines shown; asked about any other issue (one it did not inject, so
it has no author's answer for), it has no sensible call and the episode is dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from remora.model.base import ModelRequest, ToolCall
from remora.operations.experts import ExpertError, call, seen_results

_ASKED = re.compile(r"Issue (?P<code>[A-Z]+\d+) on line (?P<line>\d+):")
_SHOWN = re.compile(r"^Lines? (?P<start>\d+)(?:-(?P<end>\d+))?:$", re.MULTILINE)
REWRITE_TOOL = "rewrite_lines"


@dataclass(frozen=True)
class Asked:
    """The issue a tool result asks about, and the lines it shows (1-based, inclusive)."""

    code: str
    line: int
    start: int
    end: int


def asked_issue(summary: str) -> Asked | None:
    """The issue and lines a ``show_issue``/``rewrite_lines`` result asks about, if any."""
    issue, shown = _ASKED.search(summary), _SHOWN.search(summary)
    if issue is None or shown is None:
        return None
    start = int(shown["start"])
    return Asked(issue["code"], int(issue["line"]), start, int(shown["end"] or start))


@dataclass(frozen=True)
class ResidueExpert:
    """Answer the issue injected at lines ``first``-``last`` of the episode's text with the
    original text; ``delta`` is how many lines the injection added (negative: removed),
    so shown lines ``s``-``e`` holding the injected ones were ``s``-``e - delta`` before."""

    code: str
    original: str
    first: int
    last: int
    delta: int

    def __call__(self, request: ModelRequest) -> ToolCall:
        seen = [s for s in seen_results(request) if s.summary]
        asked = asked_issue(seen[-1].summary) if seen else None
        if asked is None:
            raise ExpertError("no issue is asked about")
        if asked.code != self.code or not asked.start <= self.first <= self.last <= asked.end:
            raise ExpertError(
                f"asked about {asked.code} on line {asked.line}, not the injected {self.code}"
            )
        if any(s.tool == REWRITE_TOOL for s in seen):
            raise ExpertError("the authors' lines were not kept")
        lines = self.original.splitlines()[asked.start - 1 : asked.end - self.delta]
        return call(REWRITE_TOOL, code=asked.code, line=asked.line, text="\n".join(lines))
