"""Expert policies: what a careful engineer calls next, decided from the conversation so far.

One deterministic policy per bundled agent (lint, docstring, test, sample_data). A policy
reads only what the model would read, the tool results already in ``request.messages``
(their ``summary`` above all, since the runner may trim older results to it), plus the
episode's real material the model is meant to learn to produce: the original docstring's
summary line for ``docstring``, argument lists from real calls for ``test`` and
``sample_data``. It follows the agent's own system prompt step by step, recovers the way
the prompt says when a tool reports a failure, and submits when the tools say nothing is
left or when the runner allows nothing but ``submit_result``.

A policy that meets a state it has no sensible answer for raises :class:`ExpertError`:
the episode is dropped rather than recorded with a guess.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from remora.contracts import SUBMIT_TOOL
from remora.model.base import ModelRequest, ToolCall

Expert = Callable[[ModelRequest], ToolCall]
"""A policy: the next call for a request."""

MAX_CASES = 6
"""At most this many argument lists per proposal (the tools' ``maxItems``)."""
MAX_CASE_CHARS = 120
"""At most this long an argument list (the tools' ``items.maxLength``)."""
MAX_SUMMARY_CHARS = 100
"""At most this long a docstring summary (``write_docstring``'s ``maxLength``)."""


class ExpertError(Exception):
    """The policy has no sensible next call; the episode is dropped with this reason."""


@dataclass(frozen=True)
class Seen:
    """One tool response in the conversation, with the arguments of the call it answers."""

    tool: str
    arguments: dict[str, Any]
    outcome: str
    summary: str
    result: Any = None


def seen_results(request: ModelRequest) -> list[Seen]:
    """The tool responses of the conversation, in order (trimmed ones keep their summary)."""
    calls: dict[str, ToolCall] = {}
    found: list[Seen] = []
    for message in request.messages:
        if message.role == "assistant":
            calls.update({call.id: call for call in message.tool_calls})
        if message.role != "tool":
            continue
        try:
            data: Any = json.loads(message.content)
        except ValueError:
            data = {}
        response = data.get("response", {}) if isinstance(data, dict) else {}
        response = response if isinstance(response, dict) else {}
        made = calls.get(message.tool_call_id or "")
        found.append(
            Seen(
                tool=str(data.get("name") or message.name or ""),
                arguments=dict(made.arguments) if made is not None else {},
                outcome=str(response.get("outcome", "error")),
                summary=str(response.get("summary", "")),
                result=response.get("result"),
            )
        )
    return found


def allowed_names(request: ModelRequest) -> list[str]:
    """The tools the runner lets the model call this turn."""
    return [spec.name for spec in request.allowed_specs()]


def call(name: str, /, **arguments: Any) -> ToolCall:
    return ToolCall(name=name, arguments=arguments)


class MistakenCall(ToolCall):
    """A call an expert makes wrong on purpose, so the episode shows the recovery: the
    call stays in the conversation, but is never a training target itself."""


def _choose(request: ModelRequest, wanted: ToolCall, submit: Callable[[], ToolCall]) -> ToolCall:
    """``wanted`` when the runner allows it; ``submit`` when only submitting is left."""
    allowed = allowed_names(request)
    if wanted.name in allowed:
        return wanted
    if SUBMIT_TOOL in allowed:
        return submit()
    raise ExpertError(f"{wanted.name} is not allowed this turn ({', '.join(allowed)})")


def _join(items: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


# --- lint --------------------------------------------------------------------------------


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
        return "Fixed " + _join([f"{code} on line {line}" for code, line in fixed]) + "."
    counts: dict[str, int] = {}
    for code, _ in fixed:
        counts[code] = counts.get(code, 0) + 1
    listed = _join([f"{code} x{count}" for code, count in counts.items()])
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
            return _choose(request, submit(), submit)
        issue = todo[0]
        for name, value in (("code", issue.code), ("line", issue.line)):
            allowed = request.choices.get(name)
            if allowed is not None and value not in allowed:
                raise ExpertError(f"{name}={value!r} is not among the reported choices")
        wrong = self._wrong_pair(listed) if len(seen) == 1 else None
        if wrong is not None and "apply_fix" in allowed_names(request):
            return wrong
        return _choose(request, call("apply_fix", code=issue.code, line=issue.line), submit)

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


# --- docstring ---------------------------------------------------------------------------

_THIRD_PERSON = re.compile(r"^([A-Z][a-z]+?)(ies|sses|shes|ches|xes|zes|s)\b")
_KEEP_S = frozenset({"This", "Is", "Has", "Was", "Does", "Its", "As", "Always", "Thus"})
_NOT_A_VERB = ("us", "ss", "is", "as", "os", "ys")
"""Endings of words with an ``s`` that is not a verb's third person (Status, Alias)."""


def imperative(summary: str) -> str:
    """``Returns the x.`` -> ``Return the x.``: the mood the agent's prompt asks for."""
    found = _THIRD_PERSON.match(summary)
    if not found or found.group(0) in _KEEP_S or found.group(0).endswith(_NOT_A_VERB):
        return summary
    stem, ending = found.group(1), found.group(2)
    word = {"ies": stem + "y", "s": stem}.get(ending, stem + ending[:-2])
    return word + summary[found.end() :]


def revise_summary(summary: str, problems: str) -> str:
    """The summary with what the check complained about fixed (the same text if nothing
    in it can be fixed by rewording the summary)."""
    text = " ".join(summary.split())
    if "D401" in problems or "imperative" in problems:
        text = imperative(text)
    if text[:1].islower() and ("D403" in problems or "capitaliz" in problems):
        text = text[:1].upper() + text[1:]
    if not text.endswith((".", "!", "?")) and re.search(r"D400|D415|period|punctuation", problems):
        text += "."
    return text[:MAX_SUMMARY_CHARS]


def name_summary(name: str) -> str:
    """``median_low`` -> ``Median low.``, ``NormalDist`` -> ``Normal dist.``: a summary
    that only repeats the name, the mistake the tool is there to refuse."""
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name).replace("_", " ").split()
    text = " ".join(words).lower()
    return text[:1].upper() + text[1:] + "."


@dataclass(frozen=True)
class DocstringExpert:
    """Read the signature, write ``summary`` (the author's own first line), check it,
    reword it for each problem the check reports, submit.

    With ``mistake``, the first summary only repeats the name; the tool refuses it and
    the author's summary follows.
    """

    summary: str
    qualname: str
    mistake: bool = False
    max_rewrites: int = 2

    def __call__(self, request: ModelRequest) -> ToolCall:
        seen = seen_results(request)
        writes = [s for s in seen if s.tool == "write_docstring"]
        tried = [str(s.arguments.get("summary", "")) for s in writes]
        own = [text for text in tried if text != self.wrong_summary()]
        current = own[-1] if own else self.summary

        def submit() -> ToolCall:
            return call(SUBMIT_TOOL, summary=f"Documented {self.qualname}: {current}")

        if not seen:
            return call("read_signature")
        last = seen[-1]
        if last.tool in ("read_signature", "read_current_docstring") and not writes:
            if self.mistake:
                return MistakenCall(
                    name="write_docstring", arguments={"summary": self.wrong_summary()}
                )
            return _choose(request, call("write_docstring", summary=self.summary), submit)
        if last.tool == "write_docstring" and last.outcome == "success":
            if not own:
                raise ExpertError("the name-only summary was not refused")
            return _choose(request, call("check_docstring"), submit)
        if last.tool in ("write_docstring", "check_docstring"):
            if last.tool == "check_docstring" and last.summary.startswith("The docstring is clean"):
                return _choose(request, submit(), submit)
            better = revise_summary(current, last.summary) if own else self.summary
            if better in tried or len(writes) > self.max_rewrites:
                raise ExpertError(f"no better summary for: {last.summary[:160]}")
            return _choose(request, call("write_docstring", summary=better), submit)
        return _choose(request, submit(), submit)

    def wrong_summary(self) -> str:
        return name_summary(self.qualname.rsplit(".", 1)[-1])


# --- test and sample_data ----------------------------------------------------------------


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
            return _choose(request, call("propose_inputs", cases=batches[0]), submit)
        if last.tool == "propose_inputs" and last.outcome != "success":
            if len(proposals) >= len(batches):
                raise ExpertError("no argument list gave a usable behaviour")
            return _choose(request, call("propose_inputs", cases=batches[len(proposals)]), submit)
        follows = {"propose_inputs": "write_tests", "write_tests": "run_tests"}
        if last.tool in follows and last.outcome == "success":
            return _choose(request, call(follows[last.tool]), submit)
        if last.tool == "run_tests" and last.outcome == "success":
            return _choose(request, submit(), submit)
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
            return _choose(request, call("propose_fixtures", fixtures=batches[0]), submit)
        if last.tool == "validate_fixtures" and last.outcome != "success":
            if len(proposals) >= len(batches):
                raise ExpertError("no fixture calls the function without an argument error")
            batch = batches[len(proposals)]
            return _choose(request, call("propose_fixtures", fixtures=batch), submit)
        follows = {
            "propose_fixtures": "validate_fixtures",
            "validate_fixtures": "write_fixture_file",
        }
        if last.tool in follows and last.outcome == "success":
            return _choose(request, call(follows[last.tool]), submit)
        if last.tool == "write_fixture_file" and last.outcome == "success":
            return _choose(request, submit(), submit)
        raise ExpertError(f"{last.tool} failed: {last.summary[:160]}")
