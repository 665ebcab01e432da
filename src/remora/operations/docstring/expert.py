"""The docstring expert: write the original summary (made imperative), describe each item
the host asks for in the author's own words, revise the summary on the checker's
problems; stop when the author described nothing the host asks for."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from remora.contracts import SUBMIT_TOOL
from remora.model.base import ModelRequest, ToolCall
from remora.operations.docstring._format import imperative, name_summary, parse_docstring
from remora.operations.docstring.docstrings import RETURN_KEY, YIELD_KEY
from remora.operations.experts import ExpertError, MistakenCall, call, choose, seen_results

MAX_SUMMARY_CHARS = 100
"""At most this long a docstring summary (``write_docstring``'s ``maxLength``)."""


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


def original_descriptions(docstring: str) -> dict[str, str]:
    """The author's descriptions, keyed as the host asks for them: parameter names,
    ``return``, ``yield`` and exception names."""
    parsed = parse_docstring(docstring)
    found = {name.lstrip("*"): text for name, text in parsed.params.items() if text}
    if parsed.returns:
        found[RETURN_KEY] = parsed.returns
    if parsed.yields:
        found[YIELD_KEY] = parsed.yields
    found.update({name: text for name, text in parsed.raises.items() if text})
    return {key: " ".join(text.split()) for key, text in found.items()}


@dataclass(frozen=True)
class DocstringExpert:
    """Write ``summary`` (the author's own first line), then describe each item the host
    asks for with the author's description of it, reword the summary for each problem the
    check reports; submit when the author left the asked item undescribed or the host
    refused the author's description of it.

    With ``mistake``, the first summary only repeats the name; the tool refuses it and
    the author's summary follows.
    """

    summary: str
    qualname: str
    descriptions: Mapping[str, str] = field(default_factory=dict)
    mistake: bool = False
    max_rewrites: int = 2

    def __call__(self, request: ModelRequest) -> ToolCall:
        seen = seen_results(request)
        writes = [s for s in seen if s.tool == "write_docstring"]
        tried = [str(s.arguments.get("summary", "")) for s in writes]
        own = [text for text in tried if text != self.wrong_summary()]
        current = own[-1] if own else self.summary

        def submit() -> ToolCall:
            return call(SUBMIT_TOOL)  # the host says what was done

        if not writes:
            if self.mistake:
                return MistakenCall(
                    name="write_docstring", arguments={"summary": self.wrong_summary()}
                )
            return choose(request, call("write_docstring", summary=self.summary), submit)
        if not own:
            if writes[-1].outcome == "success":
                raise ExpertError("the name-only summary was not refused")
            return choose(request, call("write_docstring", summary=self.summary), submit)
        offered = request.allowed_tools or ()
        asked = request.choices.get("item") if "describe" in offered else None
        if asked:
            item = str(asked[0])
            text = self.descriptions.get(item)
            # The author's words the host refused once are not offered again: the item is
            # left for the person (a repeat would teach the model to insist).
            refused = any(
                s.tool == "describe"
                and s.arguments.get("item") == item
                and "Not written" in s.summary
                for s in seen
            )
            if text is None or refused:
                return choose(request, submit(), submit)
            return choose(request, call("describe", item=item, text=text), submit)
        last = seen[-1]
        if last.tool in ("write_docstring", "describe") and "Problems:" in last.summary:
            better = revise_summary(current, last.summary)
            if better in tried or len(writes) > self.max_rewrites:
                raise ExpertError(f"no better summary for: {last.summary[:160]}")
            return choose(request, call("write_docstring", summary=better), submit)
        if last.tool == "write_docstring" and last.outcome != "success":
            better = revise_summary(current, last.summary) if own else self.summary
            if better in tried or len(writes) > self.max_rewrites:
                raise ExpertError(f"no better summary for: {last.summary[:160]}")
            return choose(request, call("write_docstring", summary=better), submit)
        return choose(request, submit(), submit)

    def wrong_summary(self) -> str:
        return name_summary(self.qualname.rsplit(".", 1)[-1])
