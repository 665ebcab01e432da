"""Jump-forward decoding: the text a call grammar forces next, appended without sampling.

Much of a FunctionGemma call is fixed once the model has chosen the tool: the rest of the
tool's name, ``{``, the required keys, ``<escape>`` delimiters, ``}`` and the end tag.
:class:`GrammarCursor` follows the output through the same grammar tree the GBNF is
rendered from (:class:`~remora.model.grammar.CallGrammar`) and reports the longest text
the grammar admits as the only continuation; the backend appends its tokens and evaluates
them in one batch, at prompt speed, instead of one forward pass per sampled token.

The cursor is a small nondeterministic matcher: a state is the stack of grammar nodes
still to match, and the cursor holds every state the text so far can be in. Text is
forced only while every state agrees on one next character and none may end there. If
the states grow past a bound, or the text leaves the grammar, the cursor gives up and
forces nothing more: jump-forward is an optimization, the grammar sampler stays the
authority on what is valid.
"""

from __future__ import annotations

from collections.abc import Iterable

from remora.model.grammar import Alt, CallGrammar, Chars, Lit, Node, Ref, Repeat, Seq

__all__ = ["GrammarCursor"]

MAX_STATES = 512
"""States followed at once before the cursor gives up (free text and long strings stay
far below this; an explosion means forcing would not pay)."""

_State = tuple[Node, ...]


class GrammarCursor:
    """Where a partial output stands in a call grammar; see the module docstring."""

    def __init__(self, grammar: CallGrammar, max_states: int = MAX_STATES) -> None:
        self._rules = grammar.rules
        self._max_states = max_states
        self._states: set[_State] | None = self._closure([(Ref(grammar.root),)])

    @property
    def lost(self) -> bool:
        """Whether the cursor gave up (it then forces nothing)."""
        return self._states is None

    def feed(self, text: str) -> None:
        """Advance over ``text``, which the model (or a forced run) produced."""
        for char in text:
            if self._states is None:
                return
            self._states = self._step(self._states, char)

    def forced(self, limit: int = 64) -> str:
        """The text every continuation starts with, at most ``limit`` characters."""
        states = self._states
        out: list[str] = []
        while states is not None and len(out) < limit:
            char = _only_next(states)
            if char is None:
                break
            out.append(char)
            states = self._step(states, char)
        return "".join(out)

    def _step(self, states: set[_State], char: str) -> set[_State] | None:
        following: list[_State] = []
        for stack in states:
            if not stack:
                continue
            head, rest = stack[0], stack[1:]
            if isinstance(head, Lit):
                if head.text[0] == char:
                    following.append((Lit(head.text[1:]), *rest) if len(head.text) > 1 else rest)
            elif isinstance(head, Chars) and _in_class(char, head):
                following.append(rest)
        return self._closure(following) if following else None

    def _closure(self, stacks: Iterable[_State]) -> set[_State] | None:
        """The stacks reachable without consuming text, each headed by a Lit or Chars
        (or empty: the output may end here); None past ``max_states``."""
        done: set[_State] = set()
        seen: set[_State] = set()
        pending = list(stacks)
        while pending:
            stack = pending.pop()
            if stack in seen:
                continue
            seen.add(stack)
            if not stack:
                done.add(stack)
                continue
            head, rest = stack[0], stack[1:]
            if isinstance(head, Lit):
                if head.text:
                    done.add(stack)
                else:
                    pending.append(rest)
            elif isinstance(head, Chars):
                done.add(stack)
            elif isinstance(head, Ref):
                pending.append((self._rules[head.name], *rest))
            elif isinstance(head, Seq):
                pending.append((*head.items, *rest))
            elif isinstance(head, Alt):
                pending.extend((option, *rest) for option in head.options)
            else:
                pending.extend(_unroll(head, rest))
            if len(done) > self._max_states or len(seen) > 8 * self._max_states:
                return None
        return done


def _unroll(node: Repeat, rest: _State) -> list[_State]:
    """One step of a repetition: stop here (when allowed) or match one more item."""
    if node.max == 0:
        return [rest]
    more = Repeat(node.item, max(node.min - 1, 0), None if node.max is None else node.max - 1)
    once: _State = (node.item, more, *rest)
    return [once] if node.min > 0 else [rest, once]


def _only_next(states: set[_State]) -> str | None:
    """The one character every state continues with, or None (a choice, or the end)."""
    char: str | None = None
    for stack in states:
        if not stack:
            return None
        head = stack[0]
        if isinstance(head, Lit):
            candidate = head.text[0]
        elif isinstance(head, Chars) and not head.negated and len(head.ranges) == 1:
            low, high = head.ranges[0]
            if low != high:
                return None
            candidate = low
        else:
            return None
        if char is None:
            char = candidate
        elif candidate != char:
            return None
    return char


def _in_class(char: str, node: Chars) -> bool:
    inside = any(low <= char <= high for low, high in node.ranges)
    return inside != node.negated
