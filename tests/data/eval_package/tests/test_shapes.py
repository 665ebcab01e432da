import pytest

from shapes import area, clamp, first, parse_pair, perimeter, slug, word_counts


def test_clamp():
    assert clamp(5, 0, 3) == 3
    assert clamp(-1, 0, 3) == 0
    with pytest.raises(ValueError):
        clamp(1, 2, 0)


def test_area_and_perimeter():
    assert area(2) == 4
    assert area(2, 3) == 6
    assert perimeter([1, 2, 3]) == 6


def test_text():
    assert slug("Hello, World!") == "hello-world"
    assert word_counts(["a", "A", "b"]) == {"a": 2, "b": 1}
    assert first([], default=0) == 0
    assert parse_pair(" a = b ") == ("a", "b")
