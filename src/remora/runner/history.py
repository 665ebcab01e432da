"""The conversation sent to the model, kept within the context budget.

Every turn sends the whole conversation: the system prompt (rendered once), the node
context, then one group per turn (the model's message, the tool results it got back,
and at most one user note with guard instructions). When the conversation outgrows the
budget, trimming is monotone, so the prompt prefix stays stable for KV-cache reuse:

1. older tool results are replaced by their ``summary`` (oldest first);
2. then the oldest turn groups are dropped whole, so a call never loses its result;
3. last, the latest group's results are summarized too.

The system prompt and the node context are never dropped.

No tool result is shown longer than ``max_result_chars`` (``tools.max_result_chars``): a
longer one is replaced by its outcome, its summary and error cut to a quarter of the cap
each, the start of its result as JSON text, and a ``cut`` note telling the model so.

Tokens are counted with the model's tokenizer when the caller passes ``count_tokens``;
otherwise with an estimate of one token per four characters (rounded up), which is
close for English prose and code with Gemma's tokenizer and errs towards trimming early.
Every message also costs ``MESSAGE_OVERHEAD`` tokens for its turn markers.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from remora.model.base import Message
from remora.tools.result import ToolResult, cut_text

MESSAGE_OVERHEAD = 4
DEFAULT_MAX_RESULT_CHARS = 16_000

TokenCounter = Callable[[str], int]


def estimate_tokens(text: str) -> int:
    """The documented fallback: one token per four characters, rounded up."""
    return (len(text) + 3) // 4


def tool_message(
    name: str, call_id: str, result: ToolResult, max_chars: int = DEFAULT_MAX_RESULT_CHARS
) -> Message:
    """A tool result as the model reads it: ``{"name", "response"}`` JSON, errors included,
    cut to ``max_chars`` as the module docstring says."""
    content = json.dumps(result.for_model(name), ensure_ascii=False, default=str)
    if len(content) > max_chars:
        response: dict[str, Any] = {
            "outcome": result.outcome,
            "summary": cut_text(result.summary, max_chars // 4),
        }
        if result.error:
            response["error"] = cut_text(result.error, max_chars // 4)
        if result.result is not None:
            shown = json.dumps(result.result, ensure_ascii=False, default=str)
            response["result"] = cut_text(shown, max_chars // 3)
        response["cut"] = (
            f"this result was {len(content)} characters, more than the {max_chars} shown; "
            "ask for less, e.g. a narrower range, path or pattern"
        )
        content = json.dumps({"name": name, "response": response}, ensure_ascii=False)
    return Message(role="tool", content=content, name=name, tool_call_id=call_id)


def summary_message(
    name: str, call_id: str, result: ToolResult, max_chars: int = DEFAULT_MAX_RESULT_CHARS
) -> Message:
    """The short form of a tool result kept when the history outgrows the budget."""
    summary = cut_text(result.summary, max_chars // 4)
    response: dict[str, Any] = {"outcome": result.outcome, "summary": summary}
    if result.error and result.error != result.summary:
        response["error"] = cut_text(result.error, max_chars // 4)
    response["trimmed"] = True
    content = json.dumps({"name": name, "response": response}, ensure_ascii=False)
    return Message(role="tool", content=content, name=name, tool_call_id=call_id)


@dataclass
class _Entry:
    message: Message
    tokens: int
    result: ToolResult | None = None
    summarized: bool = False


@dataclass
class _Group:
    entries: list[_Entry] = field(default_factory=list)
    note: _Entry | None = None

    def all(self) -> Iterator[_Entry]:
        yield from self.entries
        if self.note is not None:
            yield self.note

    @property
    def tokens(self) -> int:
        return sum(entry.tokens for entry in self.all())


class History:
    """System prompt, node context and the turns since, rendered within a token budget."""

    def __init__(
        self,
        system_prompt: str,
        node_context: str,
        *,
        budget: int,
        count_tokens: TokenCounter | None = None,
        max_result_chars: int = DEFAULT_MAX_RESULT_CHARS,
    ) -> None:
        self._count = count_tokens or estimate_tokens
        self.budget = budget
        self.max_result_chars = max_result_chars
        self.system = Message(role="system", content=system_prompt)
        self.node = Message(role="user", content=node_context)
        self._fixed_tokens = self._measure(self.system) + self._measure(self.node)
        self._groups: list[_Group] = []
        self._first = 0
        self._total = self._fixed_tokens
        self.trimmed = 0

    @property
    def total_tokens(self) -> int:
        """Estimated tokens of what ``render`` would send now."""
        return self._total

    def _measure(self, message: Message) -> int:
        tokens = MESSAGE_OVERHEAD + (self._count(message.content) if message.content else 0)
        for call in message.tool_calls:
            arguments = json.dumps(call.arguments, ensure_ascii=False, default=str)
            tokens += self._count(call.name) + self._count(arguments) + 2
        return tokens

    def _add(self, group: _Group, message: Message, result: ToolResult | None = None) -> None:
        entry = _Entry(message, self._measure(message), result)
        group.entries.append(entry)
        self._total += entry.tokens

    def start_turn(self, assistant: Message) -> None:
        """Open a group for a model turn with the model's own message."""
        group = _Group()
        self._groups.append(group)
        self._add(group, assistant)

    def add_tool_result(self, name: str, call_id: str, result: ToolResult) -> None:
        """Append a tool's response to the current turn."""
        if not self._groups:
            raise ValueError("a tool result needs a model turn before it")
        message = tool_message(name, call_id, result, self.max_result_chars)
        self._add(self._groups[-1], message, result)

    def add_note(self, text: str) -> None:
        """Add a guard instruction as a user message after the current turn (merged per turn)."""
        if not self._groups:
            self._groups.append(_Group())
        group = self._groups[-1]
        if group.note is not None:
            self._total -= group.note.tokens
            text = f"{group.note.message.content}\n{text}"
        message = Message(role="user", content=text)
        group.note = _Entry(message, self._measure(message))
        self._total += group.note.tokens

    def messages(self) -> list[Message]:
        """Everything currently kept, without trimming."""
        result = [self.system, self.node]
        for group in self._groups[self._first :]:
            result.extend(entry.message for entry in group.all())
        return result

    def render(self) -> list[Message]:
        """The messages for the next request, trimmed to the budget if needed."""
        if self._total > self.budget:
            self._trim()
        return self.messages()

    def tighten(self, tokens: int) -> bool:
        """Trim at least ``tokens`` more (what the rendered prompt came out over its budget)
        and keep the budget that low from now on; whether anything was trimmed."""
        before = self._total
        self.budget = min(self.budget, self._total - tokens)
        self._trim()
        return self._total < before

    def _summarize(self, entry: _Entry) -> None:
        if entry.result is None or entry.summarized:
            return
        message = entry.message
        short = summary_message(
            message.name or "", message.tool_call_id or "", entry.result, self.max_result_chars
        )
        tokens = self._measure(short)
        if tokens >= entry.tokens:
            entry.summarized = True
            return
        self._total += tokens - entry.tokens
        entry.message, entry.tokens, entry.summarized = short, tokens, True
        self.trimmed += 1

    def _trim(self) -> None:
        last = len(self._groups) - 1
        for group in self._groups[self._first : last]:
            for entry in group.entries:
                self._summarize(entry)
                if self._total <= self.budget:
                    return
        while self._first < last and self._total > self.budget:
            dropped = self._groups[self._first]
            self._total -= dropped.tokens
            self.trimmed += sum(1 for _ in dropped.all())
            self._first += 1
        if self._total > self.budget and self._groups:
            for entry in self._groups[-1].entries:
                self._summarize(entry)
