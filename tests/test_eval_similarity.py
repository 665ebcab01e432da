"""The summary similarity scores of the docstring evaluation, on hand-computed values."""

from __future__ import annotations

import math

import pytest

from remora.operations.docstring._similarity import rouge_l, sentence_bleu, tokens

CAT = "The cat sat on the mat."
CAT_REFERENCE = "the cat is on the mat"


def test_tokens_are_lowercase_words_and_numbers() -> None:
    assert tokens("Split ``key=value`` text into a pair.") == [
        "split",
        "key",
        "value",
        "text",
        "into",
        "a",
        "pair",
    ]
    assert tokens("merge_with(d1, d2)") == ["merge", "with", "d1", "d2"]
    assert tokens("-- !") == []


def test_rouge_l_is_the_f1_of_the_longest_common_subsequence() -> None:
    # LCS "the cat on the mat": 5 of 6 words on both sides.
    assert rouge_l(CAT, CAT_REFERENCE) == pytest.approx(5 / 6)
    # LCS "merge with": precision 2/2, recall 2/5, F1 = 2 * 1 * 0.4 / 1.4.
    assert rouge_l("Merge with.", "Merge dictionaries with a function.") == pytest.approx(4 / 7)
    # Order matters: "b a" against "a b" shares a subsequence of one word only.
    assert rouge_l("b a", "a b") == pytest.approx(0.5)


def test_rouge_l_bounds() -> None:
    assert rouge_l("Return the sum.", "return the SUM") == 1.0
    assert rouge_l("alpha", "beta") == 0.0
    assert rouge_l("", "beta") == 0.0
    assert rouge_l("beta", "...") == 0.0


def test_bleu_of_the_textbook_pair() -> None:
    # Clipped precisions 5/6, 3/5, 1/4 and 0/3 (smoothed to 0.1/3); equal lengths, no
    # brevity penalty: (5/6 * 3/5 * 1/4 * 1/30) ** (1/4) = (1/240) ** (1/4).
    assert sentence_bleu(CAT, CAT_REFERENCE) == pytest.approx((1 / 240) ** 0.25)


def test_bleu_brevity_penalty_and_effective_order() -> None:
    # Two words, both bigram orders match fully; penalty exp(1 - 6/2).
    assert sentence_bleu("the cat", CAT_REFERENCE) == pytest.approx(math.exp(-2))
    # Identical sentences shorter than four words still score 1.
    assert sentence_bleu("Join words.", "join words") == pytest.approx(1.0)


def test_bleu_clips_repeated_words_and_smooths_empty_orders() -> None:
    # "the the the" vs "the cat": unigrams 1/3 (clipped), bigrams 0.1/2, trigrams 0.1/1.
    assert sentence_bleu("the the the", "the cat") == pytest.approx((1 / 600) ** (1 / 3))
    # Nothing in common: unigrams 0.1/2, bigrams 0.1/1.
    assert sentence_bleu("alpha beta", "gamma delta") == pytest.approx(0.005**0.5)


def test_bleu_bounds() -> None:
    assert sentence_bleu(CAT, CAT.upper()) == pytest.approx(1.0)
    assert sentence_bleu("", CAT) == 0.0
    assert sentence_bleu(CAT, "") == 0.0
