"""python_signature on typed and untyped code, whole files and bare node text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from remora.errors import ToolError
from remora.tools.capabilities import CapabilityContext
from remora.tools.capabilities.signature import python_signature
from tests.stores import capability_context

SOURCE = '''
import functools


def plain(a, b=2, *args, c, d="x", **kw):
    def inner():
        raise KeyError("nested, not ours")
    if a:
        raise ValueError("a must be falsy")
    try:
        return a + b
    except (TypeError, OverflowError):
        raise
    raise errors.Custom


class Shape:
    """A shape."""

    def __init__(self, sides: int, /, name: str = "poly") -> None:
        self.sides = sides

    @functools.cache
    async def area(self, scale: float = 1.0) -> "float | None":
        return None

    @staticmethod
    def make(kind: dict[str,
                        int]) -> list[int]:
        yield 1

    @classmethod
    def build(cls, n):
        return cls(n)

    @property
    def label(self) -> str:
        return "x"
'''


@pytest.fixture
def ctx(tmp_path: Path) -> CapabilityContext:
    return capability_context(tmp_path)


def _params(info: dict[str, Any]) -> list[tuple[str, str, str | None, str | None]]:
    return [(p["name"], p["kind"], p["annotation"], p["default"]) for p in info["params"]]


def test_untyped_function_params_and_raises(ctx: CapabilityContext) -> None:
    info = python_signature(ctx, SOURCE, "plain")
    assert _params(info) == [
        ("a", "positional_or_keyword", None, None),
        ("b", "positional_or_keyword", None, "2"),
        ("args", "var_positional", None, None),
        ("c", "keyword_only", None, None),
        ("d", "keyword_only", None, '"x"'),
        ("kw", "var_keyword", None, None),
    ]
    assert info["raises"] == ["ValueError", "TypeError", "OverflowError", "errors.Custom"]
    assert info["returns"] is None and info["returns_value"] is True
    assert (info["is_async"], info["is_method"], info["kind"]) == (False, False, "function")


def test_methods_of_each_kind(ctx: CapabilityContext) -> None:
    area = python_signature(ctx, SOURCE, "Shape.area")
    assert _params(area) == [("scale", "positional_or_keyword", "float", "1.0")]
    assert area["returns"] == '"float | None"'
    assert (area["is_async"], area["method_kind"]) == (True, "instance")
    assert area["decorators"] == ["@functools.cache"]
    make = python_signature(ctx, SOURCE, "Shape.make")
    assert make["method_kind"] == "static"
    assert _params(make) == [("kind", "positional_or_keyword", "dict[str, int]", None)]
    assert make["is_generator"] is True
    assert python_signature(ctx, SOURCE, "Shape.build")["method_kind"] == "class"
    assert python_signature(ctx, SOURCE, "Shape.label")["method_kind"] == "property"


def test_class_reports_init_params(ctx: CapabilityContext) -> None:
    info = python_signature(ctx, SOURCE, "Shape")
    assert info["kind"] == "class"
    assert _params(info) == [
        ("sides", "positional_only", "int", None),
        ("name", "positional_or_keyword", "str", '"poly"'),
    ]


def test_bare_method_text_is_enough(ctx: CapabilityContext) -> None:
    text = (
        "    def grow(self, by: int = 1) -> None:\n"
        "        if by < 0:\n"
        "            raise ValueError\n"
    )
    info = python_signature(ctx, text, "Circle.grow")
    assert info["is_method"] is True and info["method_kind"] == "instance"
    assert _params(info) == [("by", "positional_or_keyword", "int", "1")]
    assert info["raises"] == ["ValueError"]
    assert python_signature(ctx, "def only(x):\n    return x\n")["name"] == "only"


def test_errors_name_the_problem(ctx: CapabilityContext) -> None:
    with pytest.raises(ToolError) as info:
        python_signature(ctx, SOURCE, "Shape.aera")
    assert info.value.code == "TOOL_105" and "Shape.area" in (info.value.hint or "")
    with pytest.raises(ToolError) as info:
        python_signature(ctx, "def broken(:\n    pass\n", "broken")
    assert info.value.code == "TOOL_106" and "line 1" in info.value.message
    with pytest.raises(ToolError) as info:
        python_signature(ctx, SOURCE)
    assert info.value.code == "TOOL_105"
