"""Text helpers: slugs, counts and pairs."""

import re
import string

_MISSING = object()
_SEPARATOR = re.compile(r"[^a-z0-9]+")


def slug(text):
    """Turn text into a lowercase, dash-separated slug.

    Args:
        text: Any text.

    Returns:
        The slug, without leading or trailing dashes.
    """
    return _SEPARATOR.sub("-", text.lower()).strip("-")


def word_counts(words):
    """Count how often each word occurs, ignoring case.

    Args:
        words: An iterable of words.

    Returns:
        A dict from lowercase word to its count.
    """
    counts = {}
    for word in words:
        key = word.lower()
        if key in counts:
            counts[key] += 1
        else:
            counts[key] = 1
    return counts


def first(items, default=_MISSING):
    """Return the first item of an iterable.

    Args:
        items: Any iterable.
        default: What to return when it is empty.

    Returns:
        The first item, or the default.

    Raises:
        LookupError: If the iterable is empty and no default was given.
    """
    for item in items:
        return item
    if default is _MISSING:
        raise LookupError("no items")
    return default


def join_words(words, sep=" "):
    """Join the words that are not empty.

    Args:
        words: The words.
        sep: What goes between two words.

    Returns:
        The joined text.
    """
    return sep.join(word for word in words if word)


def parse_pair(text):
    """Split ``key=value`` text into a pair.

    Args:
        text: The text to split.

    Returns:
        The key and the value, both stripped.

    Raises:
        ValueError: If the text has no equals sign.
    """
    try:
        key, value = text.split("=", 1)
    except ValueError:
        raise ValueError(f"not a pair: {text!r}") from None
    return key.strip(), value.strip()


def is_printable(text):
    """Tell whether every character of the text is printable ASCII.

    Args:
        text: The text to check.

    Returns:
        True when it is.
    """
    return all(char in string.printable for char in text)
