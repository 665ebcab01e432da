"""ruff_check and ruff_fix against the real ruff on small files in a workspace."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from remora.errors import ToolError
from remora.tools.capabilities import CapabilityContext, ruff
from remora.tools.capabilities.files import read_file, write_file
from remora.tools.capabilities.ruff import ruff_check, ruff_fix
from tests.stores import capability_context, write_tree

CONFIG = """[tool.ruff]
line-length = 60
extend-exclude = ["generated"]

[tool.ruff.lint]
select = ["E", "F"]
"""
MESSY = """import os
import sys
import json

print(sys.argv)
if sys.argv == None:
    x = 1; y = 2
"""


@pytest.fixture
def ctx(tmp_path: Path) -> CapabilityContext:
    root = write_tree(
        tmp_path / "proj",
        {
            "pyproject.toml": CONFIG,
            "messy.py": MESSY,
            "clean.py": "VALUE = 1\n",
            "long.py": "NAME = '" + "x" * 70 + "'\n",
            "generated/gen.py": "import os\n",
            "notes.txt": "text\n",
        },
    )
    return capability_context(root)


def _codes(report: dict[str, Any]) -> list[tuple[str, int]]:
    return [(issue["code"], issue["line"]) for issue in report["issues"]]


def test_check_reports_structured_issues_with_project_config(ctx: CapabilityContext) -> None:
    report = ruff_check(ctx, "messy.py")
    assert _codes(report) == [
        ("F401", 1),
        ("F401", 3),
        ("E711", 6),
        ("E702", 7),
    ]
    first, unsafe, manual = report["issues"][0], report["issues"][2], report["issues"][3]
    assert first["path"] == "messy.py"
    assert (first["col"], first["end_line"], first["end_col"]) == (8, 1, 10)
    assert "os" in first["message"]
    assert (first["fixable"], first["applicability"]) == (True, "safe")
    assert (unsafe["fixable"], unsafe["applicability"]) == (True, "unsafe")
    assert (manual["fixable"], manual["applicability"]) == (False, "none")
    assert report["codes"] == {"E702": 1, "E711": 1, "F401": 2}
    assert report["fixable_count"] == 3
    assert _codes(ruff_check(ctx, "long.py")) == [("E501", 1)]


def test_check_select_and_directory(ctx: CapabilityContext) -> None:
    assert _codes(ruff_check(ctx, "messy.py", select=["F401"])) == [("F401", 1), ("F401", 3)]
    assert _codes(ruff_check(ctx, "messy.py", select="E7")) == [("E711", 6), ("E702", 7)]
    write_file(ctx, "pkg/new.py", "import re\n")
    whole = ruff_check(ctx, "", select=["F401"])
    assert sorted({issue["path"] for issue in whole["issues"]}) == ["messy.py", "pkg/new.py"]
    assert not (ctx.store.root / "pkg").exists()
    assert ruff_check(ctx, "clean.py")["count"] == 0


def test_check_sees_workspace_content_and_syntax_errors(ctx: CapabilityContext) -> None:
    write_file(ctx, "clean.py", "def broken(:\n    pass\n")
    report = ruff_check(ctx, "clean.py")
    assert report["syntax_errors"] >= 1
    assert report["issues"][0]["code"] == "invalid-syntax"
    assert (ctx.store.root / "clean.py").read_text() == "VALUE = 1\n"


def test_check_rejects_bad_input(ctx: CapabilityContext) -> None:
    with pytest.raises(ToolError) as info:
        ruff_check(ctx, "messy.py", select=["--fix"])
    assert info.value.code == "TOOL_306"
    with pytest.raises(ToolError) as info:
        ruff_check(ctx, "mesy.py")
    assert info.value.code == "TOOL_101" and "messy.py" in (info.value.hint or "")


def test_fix_all_occurrences_of_a_code(ctx: CapabilityContext) -> None:
    result = ruff_fix(ctx, "messy.py", "f401")
    assert result["code"] == "F401" and result["fixes_applied"] == 2
    assert read_file(ctx, "messy.py").splitlines()[:2] == ["import sys", ""]
    assert "-import os" in result["diff"] and "-import json" in result["diff"]
    assert result["remaining_for_code"] == 0
    assert result["remaining"] == 2 and result["remaining_codes"] == {"E702": 1, "E711": 1}
    assert (ctx.store.root / "messy.py").read_text() == MESSY


def test_fix_only_the_given_line(ctx: CapabilityContext) -> None:
    result = ruff_fix(ctx, "messy.py", "F401", line=3)
    assert result["fixes_applied"] == 1
    text = read_file(ctx, "messy.py")
    assert text.startswith("import os\nimport sys\n\n")
    assert "json" not in text
    assert result["remaining_for_code"] == 1


def test_unsafe_fix_needs_consent_and_handles_unicode(ctx: CapabilityContext) -> None:
    write_file(ctx, "uni.py", 'import sys\n\nif "ééé" and sys.argv == None:\n    pass\n')
    with pytest.raises(ToolError) as info:
        ruff_fix(ctx, "uni.py", "E711")
    assert info.value.code == "TOOL_304" and "unsafe" in (info.value.hint or "")
    result = ruff_fix(ctx, "uni.py", "E711", unsafe=True)
    assert read_file(ctx, "uni.py").splitlines()[2] == 'if "ééé" and sys.argv is None:'
    assert result["remaining"] == 0


def test_fix_keeps_crlf_line_endings(ctx: CapabilityContext) -> None:
    ctx.store.write("crlf.py", b"import os\r\nimport sys\r\n\r\nprint(sys.path)\r\n")
    ruff_fix(ctx, "crlf.py", "F401")
    assert ctx.store.read("crlf.py") == b"import sys\r\n\r\nprint(sys.path)\r\n"


def test_fix_errors_say_what_to_do(ctx: CapabilityContext) -> None:
    with pytest.raises(ToolError) as info:
        ruff_fix(ctx, "messy.py", "E702")
    assert info.value.code == "TOOL_303"
    with pytest.raises(ToolError) as info:
        ruff_fix(ctx, "messy.py", "F841")
    assert info.value.code == "TOOL_302" and "E702" in (info.value.hint or "")
    with pytest.raises(ToolError) as info:
        ruff_fix(ctx, "messy.py", "F401", line=2)
    assert info.value.code == "TOOL_302" and "1, 3" in (info.value.hint or "")
    for path, code in (("notes.txt", "F401"), ("messy.py", "F"), ("messy.py", "F401,E711")):
        with pytest.raises(ToolError) as info:
            ruff_fix(ctx, path, code)
        assert info.value.code == "TOOL_306"
    assert ctx.store.changed_paths() == []


def test_fix_that_would_break_syntax_is_refused(
    ctx: CapabilityContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A (hypothetical) bad fix from ruff must never reach the workspace."""
    bad_fix = {
        "code": "F401",
        "filename": "messy.py",
        "location": {"row": 1, "column": 1},
        "end_location": {"row": 1, "column": 10},
        "message": "`os` imported but unused",
        "fix": {
            "applicability": "safe",
            "message": "Remove unused import",
            "edits": [
                {
                    "content": "import (",
                    "location": {"row": 1, "column": 1},
                    "end_location": {"row": 1, "column": 10},
                }
            ],
        },
    }
    monkeypatch.setattr(ruff, "run_ruff", lambda *args, **kwargs: [bad_fix])
    with pytest.raises(ToolError) as info:
        ruff_fix(ctx, "messy.py", "F401", line=1)
    assert info.value.code == "TOOL_305"
    assert ctx.store.changed_paths() == []


def test_fix_keeps_a_utf8_bom(ctx: CapabilityContext) -> None:
    ctx.store.write("bom.py", b"\xef\xbb\xbfimport os\nX = '\xc3\xa9'\n")
    ruff_fix(ctx, "bom.py", "F401")
    assert ctx.store.read("bom.py") == b"\xef\xbb\xbfX = '\xc3\xa9'\n"
