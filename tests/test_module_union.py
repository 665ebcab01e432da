"""The union of Python modules two sides only added to (tests for two functions of one module)."""

from __future__ import annotations

import pytest

from remora.module_union import module_docstring, union_modules

HEADER = '"""Tests for pkg.mod."""\n\n'
GRADE = HEADER + (
    "import pytest\n\nfrom pkg.mod import grade\n\n\n"
    "def test_grade():\n    assert grade(1) == 'small'\n\n\n"
    "def test_grade_raises():\n    with pytest.raises(TypeError):\n        grade(None)\n"
)
TICK = HEADER + (
    "import datetime\n\nfrom pkg.mod import tick\n\n\n"
    "@pytest.mark.slow\ndef test_tick():\n    assert tick(datetime.date(2024, 1, 1)) == 1\n"
)


def test_two_new_modules_join_imports_and_append_definitions() -> None:
    merged = union_modules("", GRADE, TICK)
    assert merged == HEADER + (
        "import pytest\nimport datetime\n\nfrom pkg.mod import grade, tick\n\n\n"
        "def test_grade():\n    assert grade(1) == 'small'\n\n\n"
        "def test_grade_raises():\n    with pytest.raises(TypeError):\n        grade(None)\n\n\n"
        "@pytest.mark.slow\ndef test_tick():\n    assert tick(datetime.date(2024, 1, 1)) == 1\n"
    )
    compile(merged, "merged.py", "exec")


def test_a_side_that_extended_the_base_adds_its_names_and_tests_only() -> None:
    ours = GRADE.replace("import grade", "import grade, stats") + (
        "\n\ndef test_stats():\n    assert stats([]) == {}\n"
    )
    theirs = GRADE + "\n\ndef test_other():\n    assert True\n"
    merged = union_modules(GRADE, theirs, ours)
    assert merged is not None
    assert "from pkg.mod import grade, stats\n" in merged
    assert merged.count("def test_grade():") == 1
    assert merged.index("def test_other") < merged.index("def test_stats")


@pytest.mark.parametrize(
    ("base", "theirs", "ours"),
    [
        (GRADE, GRADE, GRADE.replace("== 'small'", "== 'big'")),  # a changed test
        (GRADE, GRADE, GRADE.split("\n\n\ndef test_grade_raises")[0] + "\n"),  # a removed one
        ("", GRADE, GRADE.replace("== 'small'", "== 'big'")),  # one name, two definitions
        ("", GRADE, TICK + "\nVALUE = 1\n"),  # not an import or a definition
        ("", GRADE, "def broken(:\n"),
        (GRADE, GRADE + "# a note\n", GRADE + "# another note\n"),  # nowhere to put it
    ],
)
def test_anything_but_additions_is_not_a_union(base: str, theirs: str, ours: str) -> None:
    assert union_modules(base, theirs, ours) is None


def test_the_same_module_on_both_sides_is_itself() -> None:
    assert union_modules("", GRADE, GRADE) == GRADE


def test_module_docstring() -> None:
    assert module_docstring(GRADE) == "Tests for pkg.mod."
    assert module_docstring("x = 1\n") is None
    assert module_docstring("def broken(:\n") is None


def test_a_joined_import_longer_than_a_line_is_written_one_name_a_line() -> None:
    names = [f"function_number_{i}" for i in range(6)]
    theirs = f"from pkg.mod import {', '.join(names[:3])}\n"
    ours = f"from pkg.mod import {', '.join(names[3:])}\n"
    merged = union_modules("", theirs, ours)
    assert merged == "from pkg.mod import (\n" + "".join(f"    {n},\n" for n in names) + ")\n"
