"""``remora eval --as-published``: the docstring comparison, pytest's items, the duplicate
test detector, the measures on a copy harmed by hand, and whole runs on a small package."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from remora.cli.eval import _transposed, _width
from remora.errors import EvalError
from remora.evaluation.package import Project, resolve_package
from remora.evaluation.published import (
    MODULE,
    compare_docstrings,
    docstrings_of,
    example_blocks,
    generated_tests,
    is_mechanical_fix,
    known_calls,
    literal_blocks,
    measure_after,
    measure_before,
    parse_pytest_items,
    prose_sentences,
    pytest_items,
)
from remora.evaluation.run import EvalOptions, run_eval
from remora.model.base import ModelRequest
from remora.testing import Step
from tests.support.cli_process import run_remora
from tests.support.eval_context import eval_context, scripted_session

MERGE = '''\
"""Dictionary helpers.

Use them like this::

    from pkg import merge
    merge(a, b)
"""


def merge(*dicts):
    """Returns a merged dictionary

    Later dictionaries win over earlier ones. Keys are kept in order.

    >>> merge({1: 'one'}, {2: 'two'})
    {1: 'one', 2: 'two'}

    Returns:
        dict: The merged dictionary.
    """
    out = {}
    for d in dicts:
        out.update(d)
    return out


def bare(x):
    return x


class Box:
    """A box.

    .. code-block:: python

        Box().put(1)
    """

    def put(self, item):
        """Put ``item`` in."""
'''


def changed(old: str, new: str, source: str = MERGE) -> str:
    """``source`` with ``old`` (which must be there) replaced by ``new``."""
    assert old in source
    return source.replace(old, new)


# --- the docstring comparison ----------------------------------------------------------------


def test_an_unchanged_source_has_no_harm() -> None:
    harm = compare_docstrings(MERGE, MERGE)
    assert harm.docstrings_before == 4 and harm.changed == harm.added == 0
    assert harm.harms == 0 and harm.details == []


def test_a_docstring_added_is_value_not_harm() -> None:
    after = changed("def bare(x):\n", 'def bare(x):\n    """Return ``x`` as it is."""\n')
    harm = compare_docstrings(MERGE, after)
    assert harm.added == 1 and harm.changed == 0 and harm.harms == 0


def test_a_new_section_inserted_is_no_harm() -> None:
    after = changed(
        "    Returns:\n",
        "    Args:\n        *dicts: The dictionaries to merge.\n\n    Returns:\n",
    )
    harm = compare_docstrings(MERGE, after)
    assert harm.changed == 1 and harm.harms == 0, harm.details


def test_a_type_inserted_into_an_entry_is_no_harm() -> None:
    after = changed(
        "        dict: The merged dictionary.\n", "        dict[Any, Any]: The merged dictionary.\n"
    )
    harm = compare_docstrings(MERGE, after)
    assert harm.changed == 1 and harm.harms == 0, harm.details


def test_an_example_reflowed_is_altered() -> None:
    after = changed(
        "    >>> merge({1: 'one'}, {2: 'two'})\n",
        "    >>> merge({1: 'one'},\n    ...       {2: 'two'})\n",
    )
    harm = compare_docstrings(MERGE, after)
    assert harm.examples_altered == 1 and harm.harms >= 1
    [lost] = [item for item in harm.details if item.kind == "example"]
    assert lost.qualname == "merge"
    assert lost.text == ">>> merge({1: 'one'}, {2: 'two'})\n{1: 'one', 2: 'two'}"


def test_an_example_moved_under_a_heading_is_still_there() -> None:
    after = changed(
        "    >>> merge({1: 'one'}, {2: 'two'})\n    {1: 'one', 2: 'two'}\n",
        "    Examples:\n        >>> merge({1: 'one'}, {2: 'two'})\n        {1: 'one', 2: 'two'}\n",
    )
    harm = compare_docstrings(MERGE, after)
    assert harm.examples_altered == 0 and harm.harms == 0


def test_an_example_output_changed_is_altered() -> None:
    after = changed("    {1: 'one', 2: 'two'}\n", "    {1: 'one', 2: 'two'}  # merged\n")
    assert compare_docstrings(MERGE, after).examples_altered == 1


def test_a_literal_block_reindented_is_altered() -> None:
    after = changed(
        "    from pkg import merge\n    merge(a, b)\n", "  from pkg import merge\n  merge(a, b)\n"
    )
    harm = compare_docstrings(MERGE, after)
    assert harm.literal_blocks_altered == 1
    [lost] = [item for item in harm.details if item.kind == "literal_block"]
    assert lost.qualname == MODULE and "merge(a, b)" in lost.text


def test_a_directive_block_changed_is_altered() -> None:
    after = changed("        Box().put(1)\n", "        Box().put(2)\n")
    harm = compare_docstrings(MERGE, after)
    assert harm.literal_blocks_altered == 1
    assert harm.details[0].qualname == "Box"


def test_a_summary_replaced_is_harm() -> None:
    after = changed("Returns a merged dictionary\n", "Combine several dictionaries into one.\n")
    harm = compare_docstrings(MERGE, after)
    assert harm.summaries_replaced == 1 and harm.mechanical_fixes == 0
    assert harm.sentences_lost == 1 and harm.words_lost > 0
    assert {item.kind for item in harm.details} == {"summary", "sentence", "words"}


def test_a_mechanical_fix_is_counted_apart() -> None:
    after = changed("Returns a merged dictionary\n", "Return a merged dictionary.\n")
    harm = compare_docstrings(MERGE, after)
    assert harm.mechanical_fixes == 1 and harm.summaries_replaced == 0
    assert harm.sentences_lost == harm.words_lost == 0 and harm.harms == 0
    assert [item.kind for item in harm.details] == ["mechanical"]
    assert not harm.details[0].harm


@pytest.mark.parametrize(
    ("before", "after", "mechanical"),
    [
        ("Returns a merged dictionary", "Return a merged dictionary.", True),
        ("Returns a merged dictionary", "Return a merged dictionary", True),
        ("Return a merged dictionary", "Return a merged dictionary.", True),
        ("Applies f to x", "Apply f to x.", True),
        ("Finishes the job", "Finish the job.", True),
        ("Returns a merged dictionary", "Returns a merged dictionary", False),
        ("Returns a merged dictionary", "Compute a merged dictionary.", False),
        ("Returns a merged dictionary", "Return a merged mapping.", False),
        ("Returns a merged dictionary", "Return a dictionary.", False),
    ],
)
def test_what_counts_as_a_mechanical_fix(before: str, after: str, mechanical: bool) -> None:
    assert is_mechanical_fix(before, after) is mechanical


def test_a_sentence_lost_from_the_body_is_named() -> None:
    after = changed(" Keys are kept in order.", "")
    harm = compare_docstrings(MERGE, after)
    assert harm.sentences_lost == 1 and harm.summaries_replaced == 0
    assert harm.words_lost == 5
    sentence = next(item for item in harm.details if item.kind == "sentence")
    assert (sentence.qualname, sentence.text) == ("merge", "Keys are kept in order.")


def test_a_reflowed_paragraph_loses_no_sentence() -> None:
    after = changed(
        "    Later dictionaries win over earlier ones. Keys are kept in order.\n",
        "    Later dictionaries win over\n    earlier ones. Keys are kept\n    in order.\n",
    )
    harm = compare_docstrings(MERGE, after)
    assert harm.sentences_lost == 0 and harm.words_lost == 0


def test_a_removed_docstring_loses_everything() -> None:
    after = changed('        """Put ``item`` in."""\n', "        pass\n")
    harm = compare_docstrings(MERGE, after)
    assert harm.removed == 1 and harm.sentences_lost == 1 and harm.words_lost == 3
    assert harm.details[0].kind == "removed" and harm.details[0].qualname == "Box.put"


def test_docstrings_are_matched_by_qualname() -> None:
    source = textwrap.dedent(
        '''\
        def f():
            """One."""
            def inner():
                """Inner."""

        def f():
            """Two."""

        class C:
            def m(self):
                pass
        '''
    )
    assert docstrings_of(source) == {
        MODULE: None,
        "f": "One.",
        "f.inner": "Inner.",
        "f#2": "Two.",
        "C": None,
        "C.m": None,
    }


def test_blocks_and_sentences_of_one_docstring() -> None:
    docstring = textwrap.dedent(
        """\
        Merge things. Quickly!

        Example::

            merge(a)

        >>> merge({})
        {}
        >>> merge()
        {}

        Args:
            a (dict): The first
                one. More here.

        Parameters
        ----------
        b : dict
            The second.
        """
    )
    assert example_blocks(docstring) == [">>> merge({})\n{}", ">>> merge()\n{}"]
    assert literal_blocks(docstring) == ["    merge(a)"]
    assert prose_sentences(docstring) == [
        "Merge things.",
        "Quickly!",
        "Example::",
        "Args:",
        "The first one.",
        "More here.",
        "Parameters",
        "b : dict",
        "The second.",
    ]


# --- pytest's items and generated tests ------------------------------------------------------

PYTEST_OUTPUT = """\
..F
=========================== short test summary info ============================
PASSED pkg/core.py::pkg.core.merge
PASSED tests/test_core.py::test_merge[a b]
FAILED tests/test_core.py::test_bare - AssertionError: assert 1 == 2
PASSED tests/test_core.py::test_teardown
ERROR tests/test_core.py::test_teardown - RuntimeError
ERROR pkg/broken.py - ImportError: no module named nope
1 failed, 3 passed, 2 errors in 0.12s
"""


def test_pytest_items_are_read_from_the_short_summary() -> None:
    items = parse_pytest_items(PYTEST_OUTPUT)
    assert items.outcomes == {
        "pkg/core.py::pkg.core.merge": "passed",
        "tests/test_core.py::test_merge[a b]": "passed",
        "tests/test_core.py::test_bare": "failed",
        "tests/test_core.py::test_teardown": "error",
    }
    assert items.uncollected == {"pkg/broken.py": "ImportError: no module named nope"}
    after = parse_pytest_items(PYTEST_OUTPUT.replace("PASSED pkg/core.py", "FAILED pkg/core.py"))
    assert items.broken_in(after) == ["pkg/core.py::pkg.core.merge"]


OWN_TEST = """\
import pkg
from pkg import core


def test_merge():
    assert core.merge({1: 'one'}, {2: "two"}) == {1: 'one', 2: 'two'}
"""
GENERATED = """\
import pytest

from pkg.core import bare, merge


def test_merge_again():
    assert merge({1: "one"},  {2: "two"}) == {1: "one", 2: "two"}


def test_merge_new():
    assert merge({3: "three"}) == {3: "three"}


def test_bare_like_the_example():
    assert bare(1) == 1


def test_no_package_call():
    assert len([1]) == 1


class TestMerge:
    def test_merge_in_class(self):
        with pytest.raises(TypeError):
            merge(1, {2: "two"})
"""


def test_a_generated_test_that_repeats_the_package_calls_is_a_duplicate() -> None:
    known = known_calls([OWN_TEST], ["Return x.\n\n>>> bare(1)\n1\n"])
    assert "merge({1: 'one'}, {2: 'two'})" in known and "bare(1)" in known
    found = generated_tests(
        {"tests/test_core.py": OWN_TEST},
        {"tests/test_core.py": OWN_TEST, "tests/test_core_remora.py": GENERATED},
        ["pkg"],
        known,
    )
    assert {test.name: test.duplicate for test in found} == {
        "test_merge_again": True,
        "test_merge_new": False,
        "test_bare_like_the_example": True,
        "test_no_package_call": False,
        "TestMerge::test_merge_in_class": False,
    }
    by_name = {test.name: test for test in found}
    assert by_name["test_merge_again"].calls == ["merge({1: 'one'}, {2: 'two'})"]
    assert by_name["TestMerge::test_merge_in_class"].node_id == (
        "tests/test_core_remora.py::TestMerge::test_merge_in_class"
    )


def test_only_the_test_functions_a_run_added_count() -> None:
    extended = OWN_TEST + "\n\ndef test_added():\n    assert core.merge() == {}\n"
    found = generated_tests(
        {"tests/test_core.py": OWN_TEST},
        {"tests/test_core.py": extended, "pkg/core.py": "def test_not_a_test_file(): pass\n"},
        ["pkg"],
        set(),
    )
    assert [(test.path, test.name, test.calls) for test in found] == [
        ("tests/test_core.py", "test_added", ["merge()"])
    ]


# --- measured on a package: by hand, then whole runs ----------------------------------------

CORE = '''\
"""Small math helpers.

Use them like this::

    from mathpkg.core import double
"""
import os


def double(x):
    """Return twice ``x``.

    >>> double(2)
    4
    """
    if x == None:
        return None
    return x * 2


def bare(x, y):
    return x + y
'''


def write_package(root: Path) -> Path:
    """A project with one module of two functions, a doctest, a literal block and a test."""
    (root / "mathpkg").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "pyproject.toml").write_text('[project]\nname = "mathpkg"\nversion = "0.1"\n')
    (root / "mathpkg" / "__init__.py").write_text('"""Math helpers."""\n')
    (root / "mathpkg" / "core.py").write_text(CORE)
    (root / "tests" / "test_core.py").write_text(
        "from mathpkg.core import double\n\n\ndef test_double():\n    assert double(3) == 6\n"
    )
    return root


def no_model(request: ModelRequest) -> Step:
    raise AssertionError("the host does these jobs without a model")


def test_every_harm_is_measured_on_a_copy_harmed_by_hand(tmp_path: Path) -> None:
    package = write_package(tmp_path / "mathpkg-project")
    ctx, _ = eval_context(tmp_path / "eval", "lint", no_model, source=package)
    modules = ["mathpkg/__init__.py", "mathpkg/core.py"]
    before = measure_before(ctx, modules)
    assert before.doctests.passed == ["mathpkg/core.py::mathpkg.core.double"]
    assert before.tests is not None and before.tests.passed == ["tests/test_core.py::test_double"]

    harmed = ctx.scratch("harmed")
    core = harmed.root / "mathpkg" / "core.py"
    text = core.read_text().replace("return x * 2", "return x * 3")  # test + doctest break
    text = text.replace(
        "Return twice ``x``.", "Return twice ``x``.\n\n    Args:\n        x: A number."
    )
    text = text.replace("    from mathpkg", "  from mathpkg")  # literal block re-indented
    text = text.replace("def bare(x, y):\n", 'def bare(x, y):\n    """Add ``x`` and ``y``."""\n')
    core.write_text(text)
    (harmed.root / "tests" / "test_core_remora.py").write_text(
        "from mathpkg.core import bare, double\n\n\n"
        "def test_double_2():\n    assert double(2) == 6\n\n\n"  # repeats the example
        "def test_bare():\n    assert bare(1, 2) == 4\n"  # fails
    )
    measured = measure_after(ctx, before, harmed, [])
    values = measured.values
    assert values["files_added"] == 1 and values["docstrings_added"] == 1
    assert values["tests_added"] == 2 and values["tests_added_passing"] == 1
    assert values["doctests_before"] == 1 and values["doctests_after"] == 0
    harms = {
        "tests_broken": 1,
        "doctests_broken": 1,
        "literal_blocks_altered": 1,
        "tests_duplicate": 1,
        "tests_added_failing": 1,
        "examples_altered": 0,
        "sentences_lost": 0,
        "words_lost": 0,
        "summaries_replaced": 0,
        "modules_unparsable": 0,
    }
    assert {key: values[key] for key in harms} == harms
    assert values["harm"] == 5 and measured.error is None
    assert measured.details["tests_broken"] == ["tests/test_core.py::test_double"]
    assert measured.details["doctests_broken"] == ["mathpkg/core.py::mathpkg.core.double"]
    assert any(
        harm.startswith("literal block altered at mathpkg/core.py:<module>")
        for harm in measured.harms
    )


def test_as_published_runs_lint_on_the_untouched_package(tmp_path: Path) -> None:
    package = write_package(tmp_path / "mathpkg-project")
    out = tmp_path / "out"
    options = EvalOptions(
        spec=str(package), operations=["lint"], limit=2, out=out, as_published=True
    )
    report = run_eval(options, evaluators={}, session=scripted_session(no_model))

    assert report.command.endswith(
        "eval " + str(package) + " --as-published --ops lint --limit 2 --seed 0"
    )
    [lint] = report.reports
    # __init__.py defines nothing an operation works on: only core.py is chosen
    assert lint.error is None and lint.selection == ["mathpkg/core.py"]
    [row] = lint.scores
    assert (row.tool, row.kind, row.error) == ("remora", "remora", None)
    values = row.values
    assert values["jobs"] == 1 and values["changes"] == 1  # E711 and F401 fixed in core.py
    assert values["doctests_before"] == values["doctests_after"] == 1
    assert values["tests_broken"] == 0 and values["harm"] == 0
    assert lint.remora[0].jobs == 1
    assert lint.details["remora"]["files_changed"] == ["mathpkg/core.py"]
    markdown = (out / "report.md").read_text(encoding="utf-8")
    assert "| harm |" in markdown.replace(" harm | wall s", " harm |")
    assert "doctests broken" in markdown and "--as-published" in markdown
    assert (package / "mathpkg" / "core.py").read_text() == CORE


def test_as_published_knows_every_installed_operation(tmp_path: Path) -> None:
    options = EvalOptions(spec="toolz==1.0.0", operations=["nope"], as_published=True)
    with pytest.raises(EvalError) as caught:
        run_eval(options, evaluators={}, session=scripted_session(no_model))
    assert caught.value.code == "EVAL_004"
    assert "lint, docstring, test, sample_data" in (caught.value.hint or "")


def test_the_command_line_runs_it(tmp_path: Path) -> None:
    helped = run_remora("eval", "--help", cwd=tmp_path)
    assert helped.returncode == 0 and "--as-published" in helped.stdout
    assert "should be 0" in helped.stdout
    package = write_package(tmp_path / "mathpkg-project")
    done = run_remora(
        "eval",
        str(package),
        "--as-published",
        "--ops",
        "lint",
        "--limit",
        "1",
        "--format",
        "json",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert "--as-published --ops lint --limit 1" in report["command"]
    [values] = [score["values"] for score in report["reports"][0]["scores"]]
    assert values["harm"] == 0


def test_a_table_too_wide_for_the_terminal_is_transposed() -> None:
    headers = ["tool", "jobs", "harm", "wall s"]
    rows = [["remora", "2", "0", "1.5"], ["remora (host only)", "2", "1", "0.4"]]
    assert _width(headers, rows) == 1 + (3 + 18) + (3 + 4) + (3 + 4) + (3 + 6)
    assert _transposed(headers, rows) == (
        ["tool", "remora", "remora (host only)"],
        [["jobs", "2", "2"], ["harm", "0", "1"], ["wall s", "1.5", "0.4"]],
    )


def test_a_long_suite_is_read_item_by_item(tmp_path: Path) -> None:
    """Every item's summary line comes back, however many: a report cut at the sandbox's
    usual output limit read as the whole suite gone (180 toolz tests "broken")."""
    root = tmp_path / "proj"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("VALUE = 1\n")
    (root / "tests").mkdir()
    (root / "tests" / "test_many.py").write_text(
        "import pytest\nfrom pkg import VALUE\n\n\n"
        "@pytest.mark.parametrize('number', range(600))\n"
        "def test_a_rather_long_test_name_for_each_number(number):\n"
        "    assert VALUE == 1\n"
    )
    project = Project(root, resolve_package(str(root), tmp_path / "work"))
    items = pytest_items(project, project.test_paths(), 300, "the tests")
    assert items.error is None
    assert len(items.passed) == 600
