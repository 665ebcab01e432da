"""Fit a node's text into the first user message: whole when it fits, else outlined.

The rule for the node's share of the prompt (:func:`node_budget`): from the prompt budget
(``model.context_size - model.max_tokens``) take away what every request carries anyway,
the system prompt, the tool catalog and the node-context template rendered without the
node text; the node text may use **half of what is left**. The other half stays free for
the turns of history (the model's calls, tool results, guard notes), which the runner
trims to fit but can never make room for by dropping the node.

A node over its budget is shown by :func:`fit_node_text` as a header saying so and (for an
agent that has it) naming the ``read_lines`` tool with the file path and the line range to
call it with, then the outline of its definitions (:mod:`remora.discovery.outline`), then
as many of its leading lines, numbered, as still fit. A job therefore never fails for the
size of its node.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from remora.discovery.outline import number_lines, outline_entries
from remora.runner.history import TokenCounter, estimate_tokens
from remora.tools.capabilities.files import MAX_READ_LINES

READ_TOOL = "read_lines"


@dataclass(frozen=True)
class FittedText:
    """What the model reads of a node's text, and whether it was cut to fit.

    ``text`` is the original when ``cut`` is false. ``shown_lines`` counts the node's
    leading lines shown verbatim, ``outline_lines`` the outline lines kept.
    """

    text: str
    cut: bool
    tokens: int
    """Tokens of the node's whole text."""
    budget_tokens: int
    total_lines: int
    shown_lines: int
    outline_lines: int = 0

    def describe(self) -> dict[str, int]:
        """The numbers a result records about an outlined node."""
        return {
            "node_tokens": self.tokens,
            "budget_tokens": self.budget_tokens,
            "total_lines": self.total_lines,
            "shown_lines": self.shown_lines,
            "outline_lines": self.outline_lines,
        }


def node_budget(prompt_budget: int, *, fixed_tokens: int) -> int:
    """Tokens the node text may take: half of ``prompt_budget`` minus ``fixed_tokens``.

    ``fixed_tokens`` is what every request carries besides the node text (system prompt,
    tool catalog, the node-context template without the node); never below zero.
    """
    return max(0, (prompt_budget - fixed_tokens) // 2)


def fit_node_text(
    text: str,
    *,
    path: str,
    start_line: int,
    budget_tokens: int,
    count_tokens: TokenCounter | None = None,
    read_tool: str | None = READ_TOOL,
) -> FittedText:
    """``text`` unchanged when it fits ``budget_tokens``, else outline plus leading lines.

    The outline comes first: leading lines are shown only once the whole outline fits.

    ``path`` and ``start_line`` locate the node in its file, so the outline's and the
    lines' numbers are file line numbers the ``read_lines`` tool accepts. Tokens are
    counted with ``count_tokens`` when given, else with the runner's chars/4 estimate.
    The cut text is within the budget unless even its header is not (a tiny budget).
    The header names ``read_tool`` to read the rest, unless it is None (an agent without
    one).
    """
    count = count_tokens or estimate_tokens
    tokens = count(text)
    lines = text.splitlines()
    if tokens <= budget_tokens:
        return FittedText(text, False, tokens, budget_tokens, len(lines), len(lines))
    last_line = start_line + max(len(lines), 1) - 1
    entries = outline_entries(text, start_line)
    numbered = number_lines(lines, start_line)
    view = _View(path, start_line, last_line, tokens, budget_tokens, entries, numbered, read_tool)

    def fits(outlined: int, shown: int) -> bool:
        return count(view.render(outlined, shown)) <= budget_tokens

    outlined = _largest(len(entries or ()), lambda k: fits(k, 0))
    whole_outline = outlined == len(entries or ())
    shown = _largest(len(numbered), lambda k: fits(outlined, k)) if whole_outline else 0
    return FittedText(
        view.render(outlined, shown),
        True,
        tokens,
        budget_tokens,
        len(lines),
        shown,
        outlined,
    )


def _largest(limit: int, fits: Callable[[int], bool]) -> int:
    """The largest ``k`` in ``0..limit`` with ``fits(k)`` (0 if none), by bisection."""
    low, high = 0, limit
    while low < high:
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    return low


@dataclass(frozen=True)
class _View:
    path: str
    first: int
    last: int
    tokens: int
    budget: int
    entries: Sequence[str] | None
    numbered: Sequence[str]
    read_tool: str | None

    def render(self, outlined: int, shown: int) -> str:
        """The cut text with the first ``outlined`` outline lines and ``shown`` lines."""
        parts = [*self._header(shown)]
        if self.entries is not None:
            parts.append("# Outline (line| definition  # first docstring line):")
            parts.extend(self.entries[:outlined])
            hidden = len(self.entries) - outlined
            if hidden:
                parts.append(f"# ... {hidden} more outline line(s) not shown")
        if shown:
            parts.append(f"# Lines {self.first}-{self.first + shown - 1}:")
            parts.extend(self.numbered[:shown])
        if shown < len(self.numbered):
            parts.append(f"# ... lines {self.first + shown}-{self.last} not shown")
        return "\n".join(parts)

    def _header(self, shown: int) -> list[str]:
        what = "an outline of its definitions" if self.entries is not None else "no outline"
        lines = f"lines {self.first}-{self.first + shown - 1}" if shown else "none of its lines"
        if self.entries is None:
            what += " (it does not parse as Python)"
        start = min(self.first + shown, self.last)
        end = min(start + MAX_READ_LINES - 1, self.last)
        note = (
            f"# NOTE: too large to show whole (lines {self.first}-{self.last}, ~{self.tokens} "
            f"tokens; room for ~{self.budget}), so it is outlined: {what}, then {lines}."
        )
        if self.read_tool is None:
            return [note]
        return [
            note,
            f'# To read more call {self.read_tool}(path="{self.path}", start={start}, '
            f"end={end}); any range within lines {self.first}-{self.last}, "
            f"at most {MAX_READ_LINES} lines per call.",
        ]
