"""Small geometry and text helpers."""

from shapes.geometry import area, clamp, perimeter, scale
from shapes.text import first, join_words, parse_pair, slug, word_counts

__all__ = [
    "area",
    "clamp",
    "first",
    "join_words",
    "parse_pair",
    "perimeter",
    "scale",
    "slug",
    "word_counts",
]
