"""Argument values from a sandboxed script, coerced or refused with one code.

Scripts pass what a small model produced; ``"3"`` for a line number is common and harmless,
``"three"`` is not. Codes: TOOL_104 an argument has an unusable value.
"""

from __future__ import annotations

from typing import Any

from remora.errors import ToolError


def as_int(value: Any, name: str) -> int:
    """``value`` as an int (``3``, ``"3"``, ``3.0``) or TOOL_104."""
    number = _number(value, name, "a whole number")
    if not number.is_integer():
        raise _bad(name, value, "a whole number")
    return int(number)


def as_float(value: Any, name: str) -> float:
    """``value`` as a positive float or TOOL_104."""
    number = _number(value, name, "a number of seconds")
    if not number > 0:
        raise _bad(name, value, "a positive number of seconds")
    return number


def _number(value: Any, name: str, wanted: str) -> float:
    """``float(value)`` for anything but a bool, else TOOL_104 asking for ``wanted``."""
    if isinstance(value, bool):
        raise _bad(name, value, wanted)
    try:
        return float(value)
    except (TypeError, ValueError):
        raise _bad(name, value, wanted) from None


def as_text(value: Any, name: str) -> str:
    """``value`` if it is a string, else TOOL_104."""
    if not isinstance(value, str):
        raise _bad(name, value, "text")
    return value


def _bad(name: str, value: Any, wanted: str) -> ToolError:
    shown = repr(value)
    shown = shown if len(shown) <= 40 else shown[:40] + "..."
    return ToolError("TOOL_104", f"'{name}' must be {wanted}, got {shown}", f"pass {wanted}")
