"""The docstring expert: read the signature, write the original summary (made
imperative), revise on the checker's problems, submit."""

from __future__ import annotations

import re
from dataclasses import dataclass

from remora.contracts import SUBMIT_TOOL
from remora.model.base import ModelRequest, ToolCall
from remora.operations.docstring._format import name_summary
from remora.operations.experts import ExpertError, MistakenCall, call, choose, seen_results

MAX_SUMMARY_CHARS = 100
"""At most this long a docstring summary (``write_docstring``'s ``maxLength``)."""


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
            return choose(request, call("write_docstring", summary=self.summary), submit)
        if last.tool == "write_docstring" and last.outcome == "success":
            if not own:
                raise ExpertError("the name-only summary was not refused")
            return choose(request, call("check_docstring"), submit)
        if last.tool in ("write_docstring", "check_docstring"):
            if last.tool == "check_docstring" and last.summary.startswith("The docstring is clean"):
                return choose(request, submit(), submit)
            better = revise_summary(current, last.summary) if own else self.summary
            if better in tried or len(writes) > self.max_rewrites:
                raise ExpertError(f"no better summary for: {last.summary[:160]}")
            return choose(request, call("write_docstring", summary=better), submit)
        return choose(request, submit(), submit)

    def wrong_summary(self) -> str:
        return name_summary(self.qualname.rsplit(".", 1)[-1])
