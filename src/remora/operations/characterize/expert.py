"""The test and sample_data experts: propose real argument lists the host did not show,
write, run, submit."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from remora.contracts import SUBMIT_TOOL
from remora.model.base import ModelRequest, ToolCall
from remora.operations.experts import ExpertError, Seen, call, choose, seen_results

MAX_CASES = 6
"""At most this many argument lists per proposal (the tools' ``maxItems``)."""
MAX_CASE_CHARS = 120
"""At most this long an argument list (the tools' ``items.maxLength``)."""


def case_batches(cases: Sequence[str], known: Sequence[str] = ()) -> list[list[str]]:
    """The cases a proposal may carry, in batches of at most :data:`MAX_CASES`, leaving
    out those in ``known`` (the host already runs what it showed)."""
    usable = [
        case
        for case in dict.fromkeys(cases)
        if 0 < len(case) <= MAX_CASE_CHARS and case not in known
    ]
    return [usable[i : i + MAX_CASES] for i in range(0, len(usable), MAX_CASES)]


def shown_cases(seen: Sequence[Seen]) -> list[str]:
    """The argument lists ``analyze_signature`` showed as already found by the host."""
    for result in seen:
        if result.tool != "analyze_signature":
            continue
        if isinstance(result.result, dict) and isinstance(result.result.get("cases"), list):
            return [str(case) for case in result.result["cases"]]
        found = re.search(r"found, e\.g\. (.*?)(?:\.\s|\n|$)", result.summary)
        return found.group(1).split(" | ") if found else []
    return []


_PASSED = re.compile(r"(\d+) test\(s\) pass twice")
_WROTE = re.compile(r"Wrote (\d+) fixture\(s\)")


@dataclass
class TestExpert:
    """Analyze, propose real argument lists (another batch if none gave a behaviour),
    write the tests, run them, submit."""

    __test__ = False  # not a pytest class, whatever its name

    cases: Sequence[str]
    qualname: str

    def __call__(self, request: ModelRequest) -> ToolCall:
        seen = seen_results(request)
        batches = case_batches(self.cases, shown_cases(seen))
        proposals = [s for s in seen if s.tool == "propose_inputs"]
        passed = [s for s in seen if s.tool == "run_tests"]

        def submit() -> ToolCall:
            found = _PASSED.search(passed[-1].summary) if passed else None
            count = found.group(1) if found else "no"
            return call(
                SUBMIT_TOOL,
                summary=f"{count} characterization test(s) of {self.qualname} pass twice.",
            )

        if not seen:
            return call("analyze_signature")
        if not batches:
            raise ExpertError("every real argument list is among those the host found")
        last = seen[-1]
        if last.tool in ("analyze_signature", "read_existing_tests") and not proposals:
            return choose(request, call("propose_inputs", cases=batches[0]), submit)
        if last.tool == "propose_inputs" and last.outcome != "success":
            if len(proposals) >= len(batches):
                raise ExpertError("no argument list gave a usable behaviour")
            return choose(request, call("propose_inputs", cases=batches[len(proposals)]), submit)
        follows = {"propose_inputs": "write_tests", "write_tests": "run_tests"}
        if last.tool in follows and last.outcome == "success":
            return choose(request, call(follows[last.tool]), submit)
        if last.tool == "run_tests" and last.outcome == "success":
            return choose(request, submit(), submit)
        raise ExpertError(f"{last.tool} failed: {last.summary[:160]}")


@dataclass
class SampleDataExpert:
    """Analyze, propose real argument lists as fixtures, validate them (another batch if
    none calls the function cleanly), write the fixture file, submit."""

    cases: Sequence[str]
    qualname: str

    def __call__(self, request: ModelRequest) -> ToolCall:
        seen = seen_results(request)
        batches = case_batches(self.cases, shown_cases(seen))
        proposals = [s for s in seen if s.tool == "propose_fixtures"]
        written = [s for s in seen if s.tool == "write_fixture_file"]

        def submit() -> ToolCall:
            found = _WROTE.search(written[-1].summary) if written else None
            count = found.group(1) if found else "no"
            return call(
                SUBMIT_TOOL,
                summary=f"{count} fixture(s) of {self.qualname} with their observed results.",
            )

        if not seen:
            return call("analyze_signature")
        if not batches:
            raise ExpertError("every real argument list is among those the host found")
        last = seen[-1]
        if last.tool == "analyze_signature" and not proposals:
            return choose(request, call("propose_fixtures", fixtures=batches[0]), submit)
        if last.tool == "validate_fixtures" and last.outcome != "success":
            if len(proposals) >= len(batches):
                raise ExpertError("no fixture calls the function without an argument error")
            batch = batches[len(proposals)]
            return choose(request, call("propose_fixtures", fixtures=batch), submit)
        follows = {
            "propose_fixtures": "validate_fixtures",
            "validate_fixtures": "write_fixture_file",
        }
        if last.tool in follows and last.outcome == "success":
            return choose(request, call(follows[last.tool]), submit)
        if last.tool == "write_fixture_file" and last.outcome == "success":
            return choose(request, submit(), submit)
        raise ExpertError(f"{last.tool} failed: {last.summary[:160]}")
