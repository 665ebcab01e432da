"""lint_issues, lint_fix and lint_verify on real files in a real overlay workspace."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from remora.errors import ToolError
from remora.operations.lint.capabilities import (
    lint_fix,
    lint_fix_all,
    lint_issues,
    lint_result,
    lint_verify,
)
from remora.tools.capabilities import CapabilityContext
from remora.tools.capabilities.files import read_file
from remora.tools.capabilities.project import module_names, module_tests
from tests.stores import capability_context, write_tree

MODULE = """import os
import sys


def first(items, default=[]):
    for index in range(3):
        pass
    try:
        return items[0]
    except:
        return default


def check(value):
    if value == None:
        return sys.argv
    l = 1
    return l
"""


@pytest.fixture
def ctx(tmp_path: Path) -> CapabilityContext:
    root = write_tree(tmp_path / "proj", {"pkg/__init__.py": "", "pkg/mod.py": MODULE})
    return capability_context(root)


def _kinds(report: dict[str, Any]) -> dict[tuple[str, int], str]:
    return {(issue["code"], issue["line"]): issue["fix"] for issue in report["issues"]}


def test_issues_are_classified_by_how_they_can_be_fixed(ctx: CapabilityContext) -> None:
    report = lint_issues(ctx, "pkg/mod.py")
    assert _kinds(report) == {
        ("F401", 1): "ruff_safe",
        ("B006", 5): "rewrite",
        ("B007", 6): "rewrite",
        ("E722", 10): "rewrite",
        ("E711", 15): "rewrite",
        ("E741", 17): "manual",
    }
    assert report["fixable"] == 5
    assert report["choices"] == {
        "code": ["B006", "B007", "E711", "E722", "F401"],
        "line": [1, 5, 6, 10, 15],
    }


def test_the_pinned_rule_set_replaces_the_projects_selection(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path / "proj",
        {
            "pyproject.toml": '[tool.ruff.lint]\nselect = ["E501", "D"]\n',
            "mod.py": "import os\n" + "X = '" + "x" * 100 + "'\n",
        },
    )
    report = lint_issues(capability_context(root), "mod.py")
    assert [issue["code"] for issue in report["issues"]] == ["F401"]
    chosen = capability_context(root, {"options": {"select": ["E501"]}})
    assert [issue["code"] for issue in lint_issues(chosen, "mod.py")["issues"]] == ["E501"]


def test_unsafe_fixes_follow_the_option(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "proj", {"mod.py": "def f():\n    x = 1\n    return 2\n"})
    assert _kinds(lint_issues(capability_context(root), "mod.py")) == {("F841", 2): "ruff_unsafe"}
    off = capability_context(root, {"options": {"unsafe_fixes": False}})
    report = lint_issues(off, "mod.py")
    assert _kinds(report) == {("F841", 2): "manual"}
    assert "unsafe_fixes" in report["issues"][0]["note"]


def test_fix_applies_one_issue_and_reports_what_is_left(ctx: CapabilityContext) -> None:
    done = lint_fix(ctx, "pkg/mod.py", "E722", 10)
    assert done["fixed"]["fix"] == "rewrite"
    assert "except Exception:" in read_file(ctx, "pkg/mod.py")
    assert "-    except:" in done["diff"]
    assert ("E722", 10) not in _kinds(done)
    assert done["fixable"] == 4
    ruff_done = lint_fix(ctx, "pkg/mod.py", "F401", 1)
    assert ruff_done["fixed"]["fix"] == "ruff_safe"
    text = read_file(ctx, "pkg/mod.py")
    assert "import os" not in text and "import sys" in text
    assert ctx.store.changed_paths() == ["pkg/mod.py"]


def test_every_fixable_issue_can_be_fixed_in_turn(ctx: CapabilityContext) -> None:
    report = lint_issues(ctx, "pkg/mod.py")
    while report["fixable"]:
        issue = next(i for i in report["issues"] if i["fix"] != "manual")
        report = lint_fix(ctx, "pkg/mod.py", issue["code"], issue["line"])
    assert [issue["code"] for issue in report["issues"]] == ["E741"]
    text = read_file(ctx, "pkg/mod.py")
    assert "noqa" not in text
    assert "def first(items, default=None):" in text
    assert "    if default is None:\n        default = []\n" in text
    assert "for _index in range(3):" in text
    assert "if value is None:" in text


def test_fix_all_fixes_bottom_up_what_fixing_in_turn_fixes(ctx: CapabilityContext) -> None:
    done = lint_fix_all(ctx, "pkg/mod.py")
    lines = [fixed["line"] for fixed in done["fixed"]]
    assert lines == sorted(lines, reverse=True)
    assert {fixed["code"] for fixed in done["fixed"]} == {"F401", "B006", "B007", "E722", "E711"}
    assert done["refused"] == []
    assert [issue["code"] for issue in done["issues"]] == ["E741"]
    text = read_file(ctx, "pkg/mod.py")
    assert "def first(items, default=None):" in text and "if value is None:" in text
    assert "noqa" not in text


def test_a_fix_that_cannot_be_verified_leaves_the_job_partial(tmp_path: Path) -> None:
    source = "import os\n\n\ndef f(value):\n    return not value == None\n"
    ctx = capability_context(write_tree(tmp_path / "proj", {"mod.py": source}))
    done = lint_fix_all(ctx, "mod.py")
    assert [fixed["code"] for fixed in done["fixed"]] == ["F401"]
    assert [(item["code"], item["line"]) for item in done["refused"]] == [("E711", 5)]
    assert "E714" in done["refused"][0]["reason"]
    outcome = lint_result(ctx, "mod.py")
    assert outcome["status"] == "partial"
    assert outcome["summary"] == "Fixed F401 x1; 1 fixable left"
    assert outcome["details"]["fixable_left"] == 1


def test_nothing_fixed_with_fixable_issues_left_is_failed(tmp_path: Path) -> None:
    source = "def f(value):\n    return not value == None\n"
    ctx = capability_context(write_tree(tmp_path / "proj", {"mod.py": source}))
    assert lint_fix_all(ctx, "mod.py")["fixed"] == []
    assert ctx.store.changed_paths() == []
    outcome = lint_result(ctx, "mod.py")
    assert outcome["status"] == "failed"
    assert outcome["summary"] == "1 fixable issue(s) were left unfixed"


def test_a_wrong_line_or_a_manual_issue_is_refused_with_a_hint(ctx: CapabilityContext) -> None:
    with pytest.raises(ToolError) as wrong:
        lint_fix(ctx, "pkg/mod.py", "F999", 2)
    assert wrong.value.code == "TOOL_302"
    with pytest.raises(ToolError) as manual:
        lint_fix(ctx, "pkg/mod.py", "E741", 17)
    assert manual.value.code == "TOOL_303"
    with pytest.raises(ToolError) as bad:
        lint_fix(ctx, "pkg/mod.py", "F4O1; rm", 1)
    assert bad.value.code == "TOOL_306"
    assert ctx.store.changed_paths() == []


def test_a_code_reported_on_one_line_corrects_a_wrong_line(ctx: CapabilityContext) -> None:
    done = lint_fix(ctx, "pkg/mod.py", "F401", 6)
    assert done["fixed"]["line"] == 1 and done["fixed"]["asked_line"] == 6
    assert "import os" not in read_file(ctx, "pkg/mod.py")


def test_a_code_on_several_lines_needs_the_right_one(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "proj", {"mod.py": "import os\nimport sys\n"})
    ctx = capability_context(root)
    with pytest.raises(ToolError) as wrong:
        lint_fix(ctx, "mod.py", "F401", 5)
    assert wrong.value.code == "TOOL_302"
    assert "line(s) 1, 2" in (wrong.value.hint or "")


def test_a_refused_rewrite_is_manual_and_never_falls_back_to_ruff(tmp_path: Path) -> None:
    cache = "def remember(key, seen={}):\n    seen[key] = True\n    return seen\n"
    root = write_tree(tmp_path / "proj", {"mod.py": cache})
    ctx = capability_context(root)
    report = lint_issues(ctx, "mod.py")
    assert _kinds(report) == {("B006", 1): "manual"}
    assert "mutated" in report["issues"][0]["note"]
    with pytest.raises(ToolError) as refused:
        lint_fix(ctx, "mod.py", "B006", 1)
    assert refused.value.code == "TOOL_303"


def test_a_fix_that_adds_a_diagnostic_is_not_written(tmp_path: Path) -> None:
    # `not value == None` rewritten to `not value is None` trades E711 for E714.
    source = "def f(value):\n    return not value == None\n"
    root = write_tree(tmp_path / "proj", {"mod.py": source})
    ctx = capability_context(root)
    assert _kinds(lint_issues(ctx, "mod.py")) == {("E711", 2): "rewrite"}
    with pytest.raises(ToolError) as added:
        lint_fix(ctx, "mod.py", "E711", 2)
    assert added.value.code == "TOOL_307"
    assert "E714" in added.value.message
    assert ctx.store.changed_paths() == []


def test_module_names_and_the_tests_that_import_a_module(tmp_path: Path) -> None:
    assert module_names("src/pkg/mod.py") == ["pkg.mod", "src.pkg.mod"]
    assert module_names("pkg/__init__.py") == ["pkg"]
    assert module_names("not-a-module/x.py") == []
    root = write_tree(
        tmp_path / "proj",
        {
            "pkg/__init__.py": "",
            "pkg/mod.py": "X = 1\n",
            "pkg/other.py": "Y = 1\n",
            "tests/test_mod.py": "def test_x():\n    pass\n",
            "tests/test_dotted.py": "import pkg.mod\n",
            "tests/test_from.py": "from pkg import other, mod\n",
            "tests/test_unrelated.py": "from pkg.other import Y\n",
            "tests/helper.py": "import pkg.mod\n",
        },
    )
    found = module_tests(capability_context(root), "pkg/mod.py")
    assert sorted(found) == ["tests/test_dotted.py", "tests/test_from.py", "tests/test_mod.py"]


PRICING = "def total(prices, extra=[]):\n    return sum(prices) + len(extra)\n"
PRICING_TESTS = """from pkg.pricing import total


def test_total():
    assert total([1, 2]) == 3


def test_default_is_shared():
    assert total.__defaults__ == ([],)


def test_always_fails():
    assert False
"""


def test_verify_undoes_a_fix_that_breaks_a_test(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path / "proj",
        {
            "pkg/__init__.py": "",
            "pkg/pricing.py": PRICING,
            "tests/test_pricing.py": PRICING_TESTS,
        },
    )
    ctx = capability_context(root)
    lint_fix(ctx, "pkg/pricing.py", "B006", 1)
    assert ctx.store.changed_paths() == ["pkg/pricing.py"]
    verdict = lint_verify(ctx, "pkg/pricing.py")
    assert verdict["tests"] == ["tests/test_pricing.py"]
    assert verdict["reverted"] is True and verdict["changed"] is False
    assert verdict["broken"] == ["tests/test_pricing.py::test_default_is_shared"]
    assert verdict["failing_anyway"] == ["tests/test_pricing.py::test_always_fails"]
    assert verdict["fixed"] == {} and verdict["left"] == {"count": 1, "fixable": 1}
    assert ctx.store.changed_paths() == []
    assert (root / "pkg/pricing.py").read_text() == PRICING


def test_verify_keeps_a_fix_when_failures_are_not_its_fault(tmp_path: Path) -> None:
    tests = PRICING_TESTS.replace("([],)", "(None,)").replace(
        "def test_always_fails():\n    assert False", "def test_always_fails():\n    assert 0"
    )
    root = write_tree(
        tmp_path / "proj",
        {"pkg/__init__.py": "", "pkg/pricing.py": PRICING, "tests/test_pricing.py": tests},
    )
    ctx = capability_context(root)
    lint_fix(ctx, "pkg/pricing.py", "B006", 1)
    verdict = lint_verify(ctx, "pkg/pricing.py")
    assert verdict["reverted"] is False and verdict["changed"] is True
    assert verdict["broken"] == []
    assert verdict["fixed"] == {"B006": 1} and verdict["left"] == {"count": 0, "fixable": 0}
    assert ctx.store.changed_paths() == ["pkg/pricing.py"]


def test_an_import_only_a_doctest_uses_is_left_for_the_person(tmp_path: Path) -> None:
    """ruff does not read docstring examples: its F401 fix would break the doctest."""
    source = (
        "import os\nimport sys\n\n\n"
        "def join(name):\n"
        '    """Join a name to the current directory.\n\n'
        "    >>> join('a') == os.curdir + os.sep + 'a'\n"
        "    True\n"
        '    """\n'
        "    return '.' + '/' + name\n"
    )
    root = write_tree(tmp_path / "proj", {"mod.py": source})
    ctx = capability_context(root)
    report = lint_issues(ctx, "mod.py")
    assert _kinds(report) == {("F401", 1): "manual", ("F401", 2): "ruff_safe"}
    [kept] = [issue for issue in report["issues"] if issue["line"] == 1]
    assert "docstring example uses the import" in kept["note"]
    lint_fix_all(ctx, "mod.py")
    assert read_file(ctx, "mod.py") == source.replace("import sys\n", "")
