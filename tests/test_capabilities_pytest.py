"""pytest_run against the real pytest: per-test outcomes, collection errors, timeouts."""

from __future__ import annotations

from pathlib import Path

import pytest

from remora.errors import ToolError
from remora.tools.capabilities import CapabilityContext
from remora.tools.capabilities.files import write_file
from remora.tools.capabilities.pytest_runner import parse_junit, pytest_run
from tests.stores import capability_context, write_tree

TESTS = """import pytest

from calc import add


class TestAdd:
    def test_small(self):
        assert add(1, 2) == 3

    @pytest.mark.parametrize("a", [1, 2])
    def test_param(self, a):
        assert add(a, 0) == 1


def test_skipped():
    pytest.skip("not today")


@pytest.fixture
def broken():
    raise RuntimeError("fixture broke")


def test_uses_broken(broken):
    pass
"""


@pytest.fixture
def ctx(tmp_path: Path) -> CapabilityContext:
    root = write_tree(
        tmp_path / "proj",
        {
            "calc.py": "def add(a, b):\n    return a + b\n",
            "tests/test_calc.py": TESTS,
            "tests/test_import.py": "import not_a_module\n\n\ndef test_never():\n    pass\n",
        },
    )
    return capability_context(root, subprocess_timeout=30.0)


def test_outcomes_per_test_and_collection_errors(ctx: CapabilityContext) -> None:
    report = pytest_run(ctx, ["tests"])
    outcomes = {test["nodeid"]: test["outcome"] for test in report["tests"]}
    assert outcomes == {
        "tests/test_calc.py::TestAdd::test_small": "passed",
        "tests/test_calc.py::TestAdd::test_param[1]": "passed",
        "tests/test_calc.py::TestAdd::test_param[2]": "failed",
        "tests/test_calc.py::test_skipped": "skipped",
        "tests/test_calc.py::test_uses_broken": "error",
    }
    assert report["totals"] == {
        "passed": 2,
        "failed": 1,
        "error": 1,
        "skipped": 1,
        "total": 5,
    }
    failed = next(t for t in report["tests"] if t["outcome"] == "failed")
    assert "assert 2 == 1" in failed["message"]
    assert "test_calc.py" in failed["details"]
    errored = next(t for t in report["tests"] if t["outcome"] == "error")
    assert "fixture broke" in errored["message"]
    skipped = next(t for t in report["tests"] if t["outcome"] == "skipped")
    assert skipped["message"] == "not today"
    assert report["collection_errors"] == [
        {
            "path": "tests/test_import.py",
            "message": "ModuleNotFoundError: No module named 'not_a_module'",
        }
    ]
    assert report["exit_code"] == 1 and report["ok"] is False
    assert not list(ctx.store.root.rglob("__pycache__"))
    assert not (ctx.store.root / ".pytest_cache").exists()


def test_node_ids_and_workspace_edits(ctx: CapabilityContext) -> None:
    write_file(ctx, "calc.py", "def add(a, b):\n    return a * b + 2\n")
    write_file(
        ctx,
        "tests/test_new.py",
        "from calc import add\n\n\ndef test_new():\n    assert add(2, 2) == 6\n",
    )
    report = pytest_run(ctx, ["tests/test_calc.py::TestAdd::test_small", "tests/test_new.py"])
    outcomes = {test["nodeid"]: test["outcome"] for test in report["tests"]}
    assert outcomes == {
        "tests/test_calc.py::TestAdd::test_small": "failed",
        "tests/test_new.py::test_new": "passed",
    }
    assert not (ctx.store.root / "tests/test_new.py").exists()


def test_timeout_is_a_clean_tool_error(ctx: CapabilityContext) -> None:
    write_file(ctx, "tests/test_slow.py", "import time\n\n\ndef test_slow():\n    time.sleep(30)\n")
    with pytest.raises(ToolError) as info:
        pytest_run(ctx, "tests/test_slow.py", timeout=1.5)
    assert info.value.code == "TOOL_201"
    assert "1.5 seconds" in info.value.message


def test_missing_path_is_reported_before_running(ctx: CapabilityContext) -> None:
    with pytest.raises(ToolError) as info:
        pytest_run(ctx, ["tests/test_calk.py"])
    assert info.value.code == "TOOL_101" and "test_calc.py" in (info.value.hint or "")


def test_parse_junit_handles_xfail_and_unknown_files() -> None:
    xml = (
        '<testsuites><testsuite name="pytest">'
        '<testcase classname="pkg.tests.test_x.TestA" name="test_a" file="pkg/tests/test_x.py" '
        'line="3" time="0.25"><skipped type="pytest.xfail" message="flaky"/></testcase>'
        '<testcase classname="test_y" name="test_b" time="0.1"/>'
        "</testsuite></testsuites>"
    )
    tests, errors = parse_junit(xml)
    assert errors == []
    assert tests[0]["nodeid"] == "pkg/tests/test_x.py::TestA::test_a"
    assert (tests[0]["outcome"], tests[0]["message"]) == (
        "skipped",
        "expected failure (xfail): flaky",
    )
    assert tests[0]["duration"] == 0.25
    assert tests[1]["nodeid"] == "test_y::test_b" and tests[1]["outcome"] == "passed"
    with pytest.raises(ToolError):
        parse_junit("<not xml")
