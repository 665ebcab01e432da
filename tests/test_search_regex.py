"""search_content runs on a linear-time engine: no catastrophic backtracking, bounded input."""

from __future__ import annotations

from pathlib import Path

import pytest

from remora.errors import ToolError
from remora.tools.capabilities import CapabilityContext
from remora.tools.capabilities.files import MAX_SEARCH_LINE_CHARS, search_content
from tests.stores import capability_context, write_tree
from tests.support.timed import run_timed


@pytest.fixture
def ctx(tmp_path: Path) -> CapabilityContext:
    root = write_tree(
        tmp_path / "proj",
        {
            "long.txt": "a" * 5000 + "\n" + "a" * 40 + "b\n" + "aaa\n",
            "mod.py": "x = 1\nxx = 2\n",
        },
    )
    return capability_context(root)


def test_catastrophic_pattern_is_linear(ctx: CapabilityContext) -> None:
    found, elapsed = run_timed(lambda: search_content(ctx, "(a+)+$", path="long.txt"))
    assert elapsed < 1.5
    assert found["mode"] == "regex"
    assert [m["line"] for m in found["matches"]] == [1, 3]
    nested, elapsed = run_timed(lambda: search_content(ctx, r"^(a|aa)*c", path="long.txt"))
    assert elapsed < 1.5 and nested["matches"] == []


def test_unsupported_regex_is_a_tool_error(ctx: CapabilityContext) -> None:
    for pattern in (r"(x)\1", r"x(?=x)", r"(?<!x)x", r"(?!x)x"):
        with pytest.raises(ToolError) as info:
            search_content(ctx, pattern)
        assert info.value.code == "TOOL_104", pattern
        assert "lookaround" in (info.value.hint or "") and "regex=False" in (info.value.hint or "")
    literal = search_content(ctx, r"x(?=x)", regex=False)
    assert literal["matches"] == []
    broken = search_content(ctx, "x = (", path="mod.py")
    assert broken["mode"].startswith("literal") and broken["matches"] == []


def test_pattern_length_and_line_length_are_bounded(tmp_path: Path) -> None:
    long_line = "a" * (MAX_SEARCH_LINE_CHARS + 10) + "needle\n"
    ctx = capability_context(write_tree(tmp_path / "p", {"big.txt": long_line + "needle\n"}))
    found = search_content(ctx, "needle")
    assert [m["line"] for m in found["matches"]] == [2]
    assert "1 lines longer" in found["note"]
    with pytest.raises(ToolError) as info:
        search_content(ctx, "a" * 5000)
    assert info.value.code == "TOOL_104"
