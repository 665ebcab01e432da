"""Printing strings the user's project or a model controls without letting them act.

File names may hold anything but ``/`` and NUL on Linux, and summaries, errors and diffs
carry model output and file contents. Printed as they are, ``[bold red]`` or
``[link=...]`` in a name is Rich markup (the name is restyled or turned into a link and
the brackets vanish), an ``ESC [`` sequence or a C1 control is obeyed by the terminal,
and a lone surrogate (a non-UTF-8 name) makes the write fail. Rich's ``Text`` silently
drops BEL, BS, VT, FF and CR (so ``a\\rb`` prints as ``ab``) but passes ESC, NUL, DEL and
C1 through. Every such string the CLI prints goes through :func:`shown` (as markup) or
:func:`visible` (as plain text): markup is escaped, control, bidi-override and
surrogate characters become Python-style escapes (``\\x1b``, ``\\r``, ``\\u202e``,
``\\xff`` for an undecodable byte), and everything else is left as written so the name
stays recognisable. The consoles are built with ``emoji=False`` for the same reason.
Machine output (``--format json``, a diff on a pipe) is left exact.
"""

from __future__ import annotations

from rich.markup import escape

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_BIDI = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
_SEPARATORS = (0x2028, 0x2029)


def _escape_for(code: int) -> str:
    char = chr(code)
    if char in _NAMED:
        return _NAMED[char]
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8, kept by surrogateescape
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


_CONTROLS = (
    *range(0x00, 0x20),
    *range(0x7F, 0xA0),
    *_BIDI,
    *_SEPARATORS,
    *range(0xD800, 0xE000),
)
_SINGLE_LINE = {code: _escape_for(code) for code in _CONTROLS}
_MULTILINE = {code: text for code, text in _SINGLE_LINE.items() if chr(code) not in "\n\t"}


def visible(text: str, *, multiline: bool = False) -> str:
    """``text`` with every control character shown as an escape; ``multiline`` keeps
    newlines and tabs (diffs, summaries), otherwise they are escaped too (names, paths)."""
    return text.translate(_MULTILINE if multiline else _SINGLE_LINE)


def shown(value: object, *, multiline: bool = False) -> str:
    """``value`` as Rich markup that prints exactly as :func:`visible` text: for f-strings
    mixed with the CLI's own markup, table cells, titles and prompts. (A trailing backslash
    is doubled, as Rich's escape does, so a closing tag after it still closes; with no tag
    after it, it shows doubled.)"""
    return escape(visible(str(value), multiline=multiline))
