"""Several answers at one decision, screened by the host and chosen by agreement.

A small model's one greedy answer can be its one bad answer. Where the agent's tool for a
decision has a host screen (the checks its real call would run, without writing), the loop
asks the backend for the greedy answer and samples of it in one call, screens each valid
call, and keeps the survivor that agrees most with the other survivors: minimum Bayes risk
under a cheap word-overlap similarity, so one lucky or unlucky sample does not decide.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

_WORD = re.compile(r"[a-z0-9]+")
_FUNCTION_WORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "in",
        "on",
        "into",
        "to",
        "for",
        "from",
        "by",
        "with",
        "and",
        "or",
        "as",
        "at",
        "it",
        "its",
        "this",
        "that",
        "is",
        "are",
        "be",
    ]
)
"""Words that make two answers look alike without saying the same thing."""


def call_words(arguments: dict[str, Any]) -> frozenset[str]:
    """The lower-case words of a call's text arguments but function words: what two answers
    are compared by."""
    words: set[str] = set()
    for value in arguments.values():
        if isinstance(value, str):
            words.update(_WORD.findall(value.lower()))
    return frozenset(words - _FUNCTION_WORDS)


def similarity(a: frozenset[str], b: frozenset[str]) -> float:
    """Jaccard overlap of two word sets (1.0 for two empty ones)."""
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def most_agreed(answers: Sequence[frozenset[str]]) -> int:
    """The index of the answer with the highest total similarity to the others (minimum
    Bayes risk); ties go to the earliest, the greedy answer first."""
    if not answers:
        raise ValueError("no answers to choose from")
    scores = [
        sum(similarity(answer, other) for j, other in enumerate(answers) if j != i)
        for i, answer in enumerate(answers)
    ]
    best = max(scores)
    return scores.index(best)
