"""The test and sample_data experts: propose real argument lists; the host does the rest."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from remora.contracts import SUBMIT_TOOL
from remora.model.base import ModelRequest, ToolCall
from remora.operations.experts import ExpertError, call, choose, seen_results

MAX_CASES = 6
"""At most this many argument lists per proposal (the tools' ``maxItems``)."""
MAX_CASE_CHARS = 120
"""At most this long an argument list (the tools' ``items.maxLength``)."""


def case_batches(cases: Sequence[str], known: Sequence[str] = ()) -> list[list[str]]:
    """The cases a proposal may carry, in batches of at most :data:`MAX_CASES`, leaving
    out those in ``known``."""
    usable = [
        case
        for case in dict.fromkeys(cases)
        if 0 < len(case) <= MAX_CASE_CHARS and case not in known
    ]
    return [usable[i : i + MAX_CASES] for i in range(0, len(usable), MAX_CASES)]


_PASSED = re.compile(r"(\d+) test\(s\) pass twice")


@dataclass
class TestExpert:
    """Propose real argument lists (the host already ran its own and shows what they left
    uncovered), another batch while the tests' coverage grows or when none gave a
    behaviour; the host writes, runs and submits."""

    __test__ = False  # not a pytest class, whatever its name

    cases: Sequence[str]
    qualname: str

    def __call__(self, request: ModelRequest) -> ToolCall:
        seen = seen_results(request)
        batches = case_batches(self.cases)
        proposals = [s for s in seen if s.tool == "propose_inputs"]

        def submit() -> ToolCall:
            return call(SUBMIT_TOOL)  # the host says what was done

        if not batches:
            raise ExpertError("no real argument list to propose")
        if not proposals:
            return choose(request, call("propose_inputs", cases=batches[0]), submit)
        last = seen[-1]
        if last.outcome != "success" and last.tool != "propose_inputs":
            raise ExpertError(f"{last.tool} failed: {last.summary[:160]}")
        if len(proposals) >= len(batches):
            if last.tool == "propose_inputs" and last.outcome != "success":
                raise ExpertError("no argument list gave a usable behaviour")
            return choose(request, submit(), submit)
        return choose(request, call("propose_inputs", cases=batches[len(proposals)]), submit)


@dataclass
class SampleDataExpert:
    """Propose real argument lists as fixtures (another batch if none calls the function
    cleanly); the host validates, writes the fixture file and submits."""

    cases: Sequence[str]
    qualname: str

    def __call__(self, request: ModelRequest) -> ToolCall:
        seen = seen_results(request)
        batches = case_batches(self.cases)
        proposals = [s for s in seen if s.tool == "propose_fixtures"]

        def submit() -> ToolCall:
            return call(SUBMIT_TOOL)  # the host says what was done

        if not batches:
            raise ExpertError("no real argument list to propose")
        if not proposals:
            return choose(request, call("propose_fixtures", fixtures=batches[0]), submit)
        if len(proposals) >= len(batches):
            raise ExpertError("no fixture calls the function without an argument error")
        return choose(request, call("propose_fixtures", fixtures=batches[len(proposals)]), submit)
