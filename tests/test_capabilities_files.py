"""File capabilities against the overlay: reads, line ranges, writes, listing, search, nodes."""

from __future__ import annotations

from pathlib import Path

import pytest

from remora.errors import ToolError
from remora.tools.capabilities import CapabilityContext
from remora.tools.capabilities.files import (
    MAX_LINE_CHARS,
    MAX_READ_LINES,
    file_exists,
    list_dir,
    node_source,
    read_file,
    read_lines,
    search_content,
    write_file,
)
from tests.stores import capability_context, write_tree

MODULE = '''"""Shapes."""


class Circle:
    def area(self):
        return 3 * self.r**2

    def grow(self, by):
        self.r += by


def helper():
    return Circle()
'''


@pytest.fixture
def ctx(tmp_path: Path) -> CapabilityContext:
    root = write_tree(
        tmp_path / "proj",
        {
            "shapes.py": MODULE,
            "pkg/__init__.py": "",
            "pkg/utils.py": "def util():\n    return 'needle'\n",
            "data.bin": b"\x00\x01\x02binary",
            "latin.txt": "caf\xe9".encode("latin-1"),
            ".hidden/secret.py": "needle = 1\n",
        },
    )
    system = {"file_path": "shapes.py", "qualname": "Circle.grow", "node_type": "method"}
    return capability_context(root, system)


def test_read_file_returns_text(ctx: CapabilityContext) -> None:
    assert read_file(ctx, "shapes.py") == MODULE
    assert read_file(ctx, "./pkg//utils.py").startswith("def util")


def test_read_missing_file_names_nearby_files(ctx: CapabilityContext) -> None:
    with pytest.raises(ToolError) as info:
        read_file(ctx, "shape.py")
    assert info.value.code == "TOOL_101"
    assert "shapes.py" in (info.value.hint or "")
    with pytest.raises(ToolError) as info:
        read_file(ctx, "pkg/util.py")
    assert "pkg/utils.py" in (info.value.hint or "")


def test_read_rejects_binary_non_utf8_and_directories(ctx: CapabilityContext) -> None:
    for path, code in (("data.bin", "TOOL_102"), ("latin.txt", "TOOL_102"), ("pkg", "TOOL_103")):
        with pytest.raises(ToolError) as info:
            read_file(ctx, path)
        assert info.value.code == code, path


def test_read_lines_numbers_a_range(ctx: CapabilityContext) -> None:
    result = read_lines(ctx, "shapes.py", 4, 6)
    assert result == {
        "path": "shapes.py",
        "start": 4,
        "end": 6,
        "total_lines": 13,
        "text": "4| class Circle:\n5|     def area(self):\n6|         return 3 * self.r**2",
        "next_start": None,
    }
    whole = read_lines(ctx, "./shapes.py", "1", 999)
    assert (whole["start"], whole["end"], whole["next_start"]) == (1, 13, None)
    assert whole["text"].splitlines()[-1] == "13|     return Circle()"
    write_file(ctx, "shapes.py", MODULE.replace("def helper", "def helper2"))
    assert read_lines(ctx, "shapes.py", 12, 12)["text"] == "12| def helper2():"


def test_read_lines_is_bounded(ctx: CapabilityContext) -> None:
    long_line = "y = '" + "z" * (MAX_LINE_CHARS + 50) + "'"
    body = "".join(f"x{number} = {number}\n" for number in range(1, 500)) + long_line + "\n"
    write_file(ctx, "big.py", body)
    first = read_lines(ctx, "big.py", 1, 500)
    assert first["end"] == MAX_READ_LINES
    assert first["next_start"] == MAX_READ_LINES + 1
    assert len(first["text"].splitlines()) == MAX_READ_LINES
    assert first["text"].splitlines()[0] == "  1| x1 = 1"
    rest = read_lines(ctx, "big.py", 450, 500)
    assert (rest["end"], rest["next_start"]) == (500, None)
    assert rest["text"].endswith("... (56 more characters)")
    assert len(rest["text"].splitlines()[-1]) < MAX_LINE_CHARS + 60


def test_read_lines_rejects_bad_ranges(ctx: CapabilityContext) -> None:
    for start, end, words in ((0, 3, "at least 1"), (5, 4, "before start"), (14, 20, "past")):
        with pytest.raises(ToolError) as info:
            read_lines(ctx, "shapes.py", start, end)
        assert info.value.code == "TOOL_107", (start, end)
        assert words in info.value.message
    with pytest.raises(ToolError) as info:
        read_lines(ctx, "shapes.py", 14, 20)
    assert "1 to 13" in (info.value.hint or "")
    with pytest.raises(ToolError) as info:
        read_lines(ctx, "shapes.py", "one", 3)
    assert info.value.code == "TOOL_104"
    with pytest.raises(ToolError) as info:
        read_lines(ctx, "pkg/__init__.py", 1, 1)
    assert info.value.code == "TOOL_107" and info.value.hint == "the file is empty"
    for path, code in (("shape.py", "TOOL_101"), ("data.bin", "TOOL_102"), ("pkg", "TOOL_103")):
        with pytest.raises(ToolError) as info:
            read_lines(ctx, path, 1, 2)
        assert info.value.code == code, path


def test_write_file_stays_in_workspace(ctx: CapabilityContext) -> None:
    result = write_file(ctx, "pkg/new.py", "def f(:\n")
    assert result["created"] is True
    assert result["syntax_error"] is not None and "line 1" in result["syntax_error"]
    assert read_file(ctx, "pkg/new.py") == "def f(:\n"
    assert not (ctx.store.root / "pkg/new.py").exists()
    again = write_file(ctx, "shapes.py", "x = 1\n")
    assert again["created"] is False and again["syntax_error"] is None
    assert (ctx.store.root / "shapes.py").read_text() == MODULE
    with pytest.raises(ToolError) as info:
        write_file(ctx, "pkg", "x")
    assert info.value.code == "TOOL_103"


def test_file_exists_and_list_dir_see_edits(ctx: CapabilityContext) -> None:
    write_file(ctx, "pkg/extra.py", "")
    ctx.store.delete("pkg/utils.py")
    assert file_exists(ctx, "pkg/extra.py") is True
    assert file_exists(ctx, "pkg/utils.py") is False
    assert file_exists(ctx, "pkg") is True
    assert list_dir(ctx) == [".hidden/", "data.bin", "latin.txt", "pkg/", "shapes.py"]
    assert list_dir(ctx, "pkg") == ["__init__.py", "extra.py"]
    with pytest.raises(ToolError) as info:
        list_dir(ctx, "shapes.py")
    assert info.value.code == "TOOL_103"
    with pytest.raises(ToolError) as info:
        list_dir(ctx, "pkgs")
    assert info.value.code == "TOOL_101" and "pkg/" in (info.value.hint or "")


def test_search_content_regex_literal_and_limits(ctx: CapabilityContext) -> None:
    found = search_content(ctx, r"def \w+\(self")
    assert [(m["path"], m["line"]) for m in found["matches"]] == [
        ("shapes.py", 5),
        ("shapes.py", 8),
    ]
    assert found["mode"] == "regex"
    literal = search_content(ctx, "self.r**2", regex=False)
    assert [m["line"] for m in literal["matches"]] == [6]
    broken = search_content(ctx, "area(", path="shapes.py")
    assert broken["mode"].startswith("literal") and broken["matches"][0]["line"] == 5
    hidden = search_content(ctx, "needle")
    assert [m["path"] for m in hidden["matches"]] == ["pkg/utils.py"]
    limited = search_content(ctx, "e", max_results=2)
    assert len(limited["matches"]) == 2 and limited["truncated"] is True
    with pytest.raises(ToolError):
        search_content(ctx, "")


def test_search_sees_workspace_writes(ctx: CapabilityContext) -> None:
    write_file(ctx, "pkg/utils.py", "nothing here\n")
    write_file(ctx, "pkg/more.py", "x = 'needle'\n")
    found = search_content(ctx, "needle", path="pkg")
    assert [(m["path"], m["line"]) for m in found["matches"]] == [("pkg/more.py", 1)]


def test_node_source_defaults_to_job_node(ctx: CapabilityContext) -> None:
    node = node_source(ctx)
    assert node["qualname"] == "Circle.grow"
    assert node["node_type"] == "method"
    assert node["text"] == "    def grow(self, by):\n        self.r += by"
    assert (node["start_line"], node["end_line"]) == (8, 9)


def test_node_source_relocates_after_edit(ctx: CapabilityContext) -> None:
    edited = MODULE.replace("class Circle:\n", "import math\n\n\nclass Circle:\n    pi = 3\n\n")
    write_file(ctx, "shapes.py", edited)
    node = node_source(ctx)
    assert node["start_line"] == 13
    assert node["text"].startswith("    def grow(self, by):")
    whole = node_source(ctx, path="pkg/utils.py")
    assert whole["node_type"] == "file" and "needle" in whole["text"]
    with pytest.raises(ToolError) as info:
        node_source(ctx, qualname="Circle.grw")
    assert info.value.code == "TOOL_105" and "Circle.grow" in (info.value.hint or "")
