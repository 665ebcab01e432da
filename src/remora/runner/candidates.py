"""Several answers at one decision, screened by the host and chosen by agreement.

A small model's one greedy answer can be one the host refuses. Where the agent's tool for a
decision has a host screen (the checks its real call would run, without writing), the loop
asks the backend for the greedy answer and samples of it in one call and screens each valid
call. The greedy answer is used when it passes; otherwise the passing sample that agrees
most with the other passing ones (minimum Bayes risk under a cheap word-overlap
similarity), when another supports it, so one lucky or unlucky sample does not decide.
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


SUPPORT = 0.25
"""The least word overlap with another accepted sample that makes a sample's answer more
than one draw's luck."""


def choose(accepted: Sequence[frozenset[str] | None]) -> int | None:
    """Which answer to use: ``accepted`` holds each answer's words when the host's screen
    accepted it, else None; the first is the greedy answer.

    The greedy answer when it is accepted (read on real packages, it was the best accepted
    answer far more often than the most agreed-on one: samples of a small model share
    filler words more than meaning). Otherwise the accepted sample that agrees most with the
    other accepted ones (:func:`most_agreed`), when another one supports it (word overlap
    of at least :data:`SUPPORT`): a lone sample is one draw's luck. None when no answer is
    chosen."""
    if accepted and accepted[0] is not None:
        return 0
    samples = [(index, words) for index, words in enumerate(accepted) if words is not None]
    if len(samples) < 2:
        return None
    best = most_agreed([words for _, words in samples])
    chosen = samples[best][1]
    support = max(similarity(chosen, words) for i, (_, words) in enumerate(samples) if i != best)
    return samples[best][0] if support >= SUPPORT else None


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
