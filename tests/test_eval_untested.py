"""The test evaluation's untested rows (the package's own tests removed before Remora runs)
and its count of tests that check only a type."""

from __future__ import annotations

from pathlib import Path

from remora.evaluation.package import Project, resolve_package
from remora.operations.characterize._testrun import type_only_tests
from remora.operations.characterize.evaluation import (
    HOST_ONLY_UNTESTED,
    UNTESTED,
    remove_own_tests,
    variants,
)
from tests.stores import write_tree

MIXED = '''"""Characterization tests for pkg.core."""

from pkg.core import Box, make


def test_make_returns_box():
    assert isinstance(make(1), Box)


def test_make_returns_named():
    assert type(make(2)).__name__ == 'Box'


def test_make_value():
    assert make(1).value == 1


def test_make_type_and_value():
    assert isinstance(make(1), Box)
    assert make(1).value == 1


def test_make_raises():
    with pytest.raises(TypeError):
        make()


class TestBox:
    def test_class_is(self):
        assert type(make(3)) is Box and make(3).__class__ == Box

    def test_not_int(self):
        assert not isinstance(make(3), int)


def helper():
    assert isinstance(make(1), Box)
'''
ALL_TYPES = """
def test_a():
    assert isinstance(f(1), int)
    assert isinstance(f(2), (int, float))


def test_b():
    assert type(f(1)) == int
    assert f(1).__class__.__name__ == "int"
"""
NO_TYPES = """
def test_a():
    assert f(1) == 2


def test_b():
    assert f(2) is None
    assert len(f(3)) == type_count
"""


def test_type_only_tests_are_those_whose_every_assert_checks_a_type() -> None:
    mixed = type_only_tests(MIXED)
    assert mixed.tests == (
        "test_make_returns_box",
        "test_make_returns_named",
        "test_make_value",
        "test_make_type_and_value",
        "test_make_raises",
        "TestBox::test_class_is",
        "TestBox::test_not_int",
    )
    assert mixed.type_only == (
        "test_make_returns_box",
        "test_make_returns_named",
        "TestBox::test_class_is",
        "TestBox::test_not_int",
    )
    assert type_only_tests(ALL_TYPES).type_only == ("test_a", "test_b")
    none = type_only_tests(NO_TYPES)
    assert none.tests == ("test_a", "test_b") and none.type_only == ()


def test_type_only_tests_read_only_the_named_tests() -> None:
    named = type_only_tests(MIXED, ["test_make_value", "test_make_returns_named", "gone"])
    assert named.tests == ("test_make_returns_named", "test_make_value")
    assert named.type_only == ("test_make_returns_named",)
    assert type_only_tests("def test_(:\n").tests == ()


def _project(source: Path, dest: Path) -> Project:
    return resolve_package(str(source), dest / "fetch").copy_to(dest / "project")


def test_removing_own_tests_keeps_the_library_examples_and_data(tmp_path: Path) -> None:
    source = write_tree(
        tmp_path / "src",
        {
            "conftest.py": "",
            "pkg/__init__.py": '"""Example: ``>>> 1``."""\n',
            "pkg/core.py": "def used(x):\n    return x\n",
            "pkg/core_test.py": "def test_used():\n    assert True\n",
            "pkg/tests/__init__.py": "",
            "pkg/tests/helpers.py": "X = 1\n",
            "pkg/tests/unit/test_core.py": "def test_used():\n    assert True\n",
            "pkg/tests/data/input.json": "{}",
            "pkg/testing/__init__.py": "def check(x):\n    return x\n",
            "pkg/testing/tests/test_check.py": "def test_check():\n    assert True\n",
            "test/test_top.py": "",
            "examples/use.py": "from pkg.core import used\nused(1)\n",
            "test_data.json": "{}",
        },
    )
    project = _project(source, tmp_path)
    removed = remove_own_tests(project)
    assert removed == [
        "conftest.py",
        "pkg/core_test.py",
        "pkg/testing/tests/",
        "pkg/tests/",
        "test/",
    ]
    left = sorted(project.relative(path) for path in project.root.rglob("*") if path.is_file())
    assert left == [
        "examples/use.py",
        "pkg/__init__.py",
        "pkg/core.py",
        "pkg/testing/__init__.py",
        "test_data.json",
    ]
    assert remove_own_tests(project) == []


def test_only_the_test_operation_has_untested_rows() -> None:
    names = [variant.name for variant in variants("test")]
    assert names[-2:] == [UNTESTED, HOST_ONLY_UNTESTED]
    assert all(not variant.untested for variant in variants("test")[:-2])
    assert not any(variant.untested for variant in variants("sample_data"))
