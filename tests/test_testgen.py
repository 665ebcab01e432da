"""Observed behaviours rendered as a pytest file, and where that file goes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from remora.operations.characterize import _testgen as testgen
from remora.operations.characterize._testgen import MARKER, Behaviour, render_tests
from remora.tools.capabilities.arguments import public_names

MODULE = '''"""A module whose behaviour the generated tests pin."""

import itertools


class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y


class ParseError(ValueError):
    pass


def stats(values):
    return {"count": len(values), "total": sum(values)}


def evens(limit):
    for number in range(limit):
        if number % 2 == 0:
            yield number


def checked(n):
    if n < 0:
        raise ValueError("negative (x) value: [n] must be >= 0? +1 *2 $")
    return n


def parse(text):
    raise ParseError(f"cannot parse {text!r}")


def greet(name):
    print(f"hello {name}")


def make_point(x, y):
    return Point(x, y)


def naturals():
    return itertools.count()


def squares():
    n = 0
    while True:
        yield (n, n * n)
        n += 1


def labels():
    for n in itertools.count():
        yield f"a, b {n}"


def combine(func, a, b):
    return func(a, b)


def late_failure(n):
    yield n
    raise KeyError("late")


def save(name):
    with open(name, "w") as handle:
        handle.write("saved")
    return name


def is_even(n):
    return n % 2 == 0
'''

NAMES = public_names(MODULE)


def _render(qualname: str, *behaviours: Behaviour) -> str:
    return render_tests("pkg.mod", qualname, behaviours, NAMES | {qualname}).text


def _value(
    call: str,
    literal: str | None,
    type_name: str,
    *,
    kind: str = "value",
    truncated: bool = False,
    stdout: str = "",
    wrote_files: bool = False,
) -> Behaviour:
    """A behaviour that returned (or yielded) a value, the case using no module names."""
    return Behaviour(
        call=call,
        names=frozenset(),
        kind=kind,
        literal=literal,
        type_name=type_name,
        truncated=truncated,
        stdout=stdout,
        wrote_files=wrote_files,
    )


RUNNABLE: dict[str, list[Behaviour]] = {
    "stats": [
        _value("stats([1, 2, 3])", "{'count': 3, 'total': 6}", "dict"),
        _value("stats([])", "{'count': 0, 'total': 0}", "dict"),
    ],
    "evens": [
        _value("evens(5)", "[0, 2, 4]", "list", kind="iterator"),
        _value("evens(0)", "[]", "list", kind="iterator"),
    ],
    "checked": [
        Behaviour(
            call="checked(-1)",
            names=frozenset(),
            raised="ValueError",
            message="negative (x) value: [n] must be >= 0? +1 *2 $",
        ),
        _value("checked(0)", "0", "int"),
    ],
    "parse": [
        Behaviour(
            call="parse('x')",
            names=frozenset(),
            raised="ParseError",
            message="cannot parse 'x'",
        ),
    ],
    "greet": [_value("greet('bob')", "None", "NoneType", stdout="hello bob\n")],
    "make_point": [_value("make_point(1, 2)", None, "pkg.mod.Point")],
    "naturals": [
        _value("naturals()", "[0, 1, 2, 3, 4]", "list", kind="iterator", truncated=True),
    ],
    "squares": [
        _value("squares()", "[(0, 0), (1, 1), (2, 4)]", "list", kind="iterator", truncated=True),
    ],
    "labels": [
        _value("labels()", "['a, b 0', 'a, b 1']", "list", kind="iterator", truncated=True),
    ],
    "combine": [
        Behaviour(
            call="combine(operator.add, 2, 3)",
            names=frozenset({"operator"}),
            literal="5",
            type_name="int",
        ),
        Behaviour(
            call="combine(lambda a, b: is_even(a + b), 1, 1)",
            names=frozenset({"is_even"}),
            literal="True",
            type_name="bool",
        ),
    ],
    "late_failure": [
        Behaviour(
            call="late_failure(1)",
            names=frozenset(),
            raised="KeyError",
            message="'late'",
            raised_while_iterating=True,
        ),
    ],
    "save": [_value("save('out.txt')", "'out.txt'", "str", wrote_files=True)],
}


def _project(tmp_path: Path) -> Path:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "mod.py").write_text(MODULE, encoding="utf-8")
    (tmp_path / "tests").mkdir()
    return tmp_path


def _pytest(root: Path, *files: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root), "PYTHONDONTWRITEBYTECODE": "1"}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *map(str, files)]
    return subprocess.run(
        command, cwd=root, env=env, capture_output=True, text=True, timeout=120, check=False
    )


def test_rendered_tests_run_and_pass(tmp_path: Path) -> None:
    """Each rendered file imports what it needs and its assertions hold for the real module."""
    root = _project(tmp_path)
    files = []
    expected = 0
    for qualname, behaviours in RUNNABLE.items():
        rendered = render_tests("pkg.mod", qualname, behaviours, NAMES | {qualname})
        assert len(rendered.names) == len(behaviours)
        compile(rendered.text, qualname, "exec")
        path = root / "tests" / f"test_mod_{qualname}.py"
        path.write_text(rendered.text, encoding="utf-8")
        files.append(path)
        expected += len(behaviours)
    result = _pytest(root, *files)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{expected} passed" in result.stdout
    assert not (root / "out.txt").exists()  # the file-writing test ran in tmp_path


@pytest.mark.parametrize(
    "wrong",
    [
        _value("stats([1, 2, 3])", "{'count': 3, 'total': 7}", "dict"),
        _value("stats([1])", "None", "NoneType"),
        _value("stats([1])", None, "pkg.mod.Point"),
        Behaviour(call="stats([1])", names=frozenset(), raised="ValueError", message="x"),
    ],
)
def test_a_wrong_behaviour_makes_the_rendered_test_fail(tmp_path: Path, wrong: Behaviour) -> None:
    """The assertions are real: a behaviour the code does not have fails under pytest."""
    root = _project(tmp_path)
    path = root / "tests" / "test_mod_stats.py"
    path.write_text(_render("stats", wrong), encoding="utf-8")
    result = _pytest(root, path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "1 failed" in result.stdout


def test_exception_match_is_literal_and_anchored(tmp_path: Path) -> None:
    """``match=`` escapes the message, so only the exact message passes, not a prefix."""
    root = _project(tmp_path)
    path = root / "tests" / "test_mod_checked.py"
    prefix = Behaviour(
        call="checked(-1)", names=frozenset(), raised="ValueError", message="negative (x) value"
    )
    path.write_text(_render("checked", prefix), encoding="utf-8")
    result = _pytest(root, path)
    assert result.returncode == 1 and "1 failed" in result.stdout


def test_the_header_names_the_module_and_carries_the_marker() -> None:
    """The module docstring says which module is characterized and that Remora wrote it."""
    text = _render("stats", _value("stats([1])", "{'count': 1, 'total': 1}", "dict"))
    assert text.startswith('"""Characterization tests for pkg.mod.\n')
    assert MARKER in text


def test_test_names_describe_the_behaviour_and_are_unique() -> None:
    """Names say what happened, short values included; results that read alike are told
    apart by the call's short arguments, and repeats get ``_2``, ``_3``."""
    behaviours = [
        _value("f(1)", "1", "int"),
        _value("f(2)", "2", "int"),
        _value("f(3)", "3", "int"),
        _value("f(None)", "None", "NoneType"),
        _value("f(True)", "True", "bool"),
        _value("f(False)", "False", "bool"),
        _value("f([])", "[]", "list"),
        _value("f('')", "''", "str"),
        _value("f(0)", "0", "int"),
        _value("f(0.0)", "-0.0", "float"),
        _value("f(-1)", "-1", "int"),
        _value("f(-1.5)", "-1.5", "float"),
        _value("f('x')", None, "pkg.mod.Point"),
        _value("f(4)", "[]", "list", kind="iterator"),
        _value("f(5)", "[1]", "list", kind="iterator"),
        _value("f(6)", "6", "int", stdout="6\n"),
        Behaviour(call="f(7)", names=frozenset(), raised="ValueError", message="bad"),
        Behaviour(call="f(8)", names=frozenset(), raised="ParseError", message="bad"),
    ]
    rendered = render_tests("pkg.mod", "Point.move", behaviours, NAMES)
    assert rendered.names == (
        "test_point_move_returns_1",
        "test_point_move_returns_2",
        "test_point_move_returns_3",
        "test_point_move_returns_none",
        "test_point_move_returns_true",
        "test_point_move_returns_false",
        "test_point_move_returns_empty_list",
        "test_point_move_returns_empty_str",
        "test_point_move_returns_zero_for_0",
        "test_point_move_returns_zero_for_0_0",
        "test_point_move_returns_minus_1",
        "test_point_move_returns_minus_1_5",
        "test_point_move_returns_point",
        "test_point_move_yields_nothing",
        "test_point_move_yields_items",
        "test_point_move_returns_6_and_prints",
        "test_point_move_raises_value_error",
        "test_point_move_raises_parse_error",
    )
    for name in rendered.names:
        assert f"\ndef {name}(" in rendered.text


def test_alike_results_are_named_by_the_arguments_that_differ() -> None:
    behaviours = [
        _value("due(day, 'net30')", "date(2024, 3, 30)", "datetime.date"),
        _value("due(day, 'net60')", "date(2024, 4, 29)", "datetime.date"),
        _value("due([1], [2])", "date(2024, 4, 30)", "datetime.date"),
        _value("due([1], [3])", "date(2024, 5, 1)", "datetime.date"),
    ]
    names = render_tests("pkg.mod", "due", behaviours, NAMES | {"due", "day", "date"}).names
    assert names == (
        "test_due_returns_date_for_net30",
        "test_due_returns_date_for_net60",
        "test_due_returns_date",
        "test_due_returns_date_2",
    )


def test_imports_only_the_module_names_used() -> None:
    """The ``from`` import lists the function and the case's module names, not builtins or
    unused names; helper modules get a plain import."""
    behaviours = [
        Behaviour(
            call="stats([len('ab'), LIMIT])",
            names=frozenset({"len", "LIMIT"}),
            literal="{'count': 2, 'total': 5}",
            type_name="dict",
        ),
        Behaviour(
            call="stats(list(map(operator.neg, [1])))",
            names=frozenset({"list", "map", "operator"}),
            literal="{'count': 1, 'total': -1}",
            type_name="dict",
        ),
    ]
    text = render_tests("pkg.mod", "stats", behaviours, NAMES | {"LIMIT", "stats"}).text
    assert "import operator\n" in text
    assert "import itertools" not in text and "import pytest" not in text
    assert "from pkg.mod import LIMIT, stats\n" in text


def test_a_helper_the_module_defines_is_imported_from_the_module() -> None:
    """A module name that shadows a helper module comes from the module, not the stdlib."""
    behaviour = Behaviour(
        call="f(operator)", names=frozenset({"operator"}), literal="1", type_name="int"
    )
    text = render_tests("pkg.mod", "f", [behaviour], frozenset({"f", "operator"})).text
    assert "import operator\n" not in text
    assert "from pkg.mod import f, operator\n" in text


def test_raising_tests_import_pytest_and_exception_classes() -> None:
    """``pytest.raises`` needs pytest; a module-defined exception is imported by name."""
    behaviour = Behaviour(
        call="parse('x')", names=frozenset(), raised="ParseError", message="cannot parse 'x'"
    )
    text = _render("parse", behaviour)
    assert "import pytest\n" in text
    assert "from pkg.mod import ParseError, parse\n" in text
    assert "    with pytest.raises(ParseError, match=\"^cannot\\\\ parse\\\\ 'x'$\"):\n" in text


def test_raised_while_iterating_consumes_the_iterator() -> None:
    """An exception raised by iteration needs ``list(...)`` inside ``pytest.raises``."""
    lazy = Behaviour(
        call="late_failure(1)",
        names=frozenset(),
        raised="KeyError",
        message="'late'",
        raised_while_iterating=True,
    )
    eager = Behaviour(call="late_failure(1)", names=frozenset(), raised="KeyError", message="x")
    assert "        list(late_failure(1))\n" in _render("late_failure", lazy)
    assert "        late_failure(1)\n" in _render("late_failure", eager)


def test_unmatchable_messages_are_not_matched() -> None:
    """Multi-line, long and address-bearing messages are left out of ``match=``."""
    for message in ("two\nlines", "x" * 81, "<object at 0x7f00>", "", None):
        behaviour = Behaviour(call="f()", names=frozenset(), raised="ValueError", message=message)
        text = render_tests("m", "f", [behaviour], frozenset({"f"})).text
        assert "    with pytest.raises(ValueError):\n" in text, message


def test_wrote_files_runs_in_tmp_path() -> None:
    """A test of a function that writes files changes into ``tmp_path`` first."""
    text = _render("save", _value("save('a')", "'a'", "str", wrote_files=True))
    assert "def test_save_returns_a(tmp_path, monkeypatch):\n" in text
    assert "    monkeypatch.chdir(tmp_path)\n    assert save('a') == 'a'\n" in text
    plain = _render("save", _value("save('a')", "'a'", "str"))
    assert "def test_save_returns_a():\n" in plain and "monkeypatch" not in plain


def test_printing_checks_captured_output() -> None:
    """What the call printed is compared through ``capsys``."""
    text = _render("greet", _value("greet('b')", "None", "NoneType", stdout="hi\n"))
    assert "def test_greet_returns_none_and_prints(capsys):\n" in text
    assert "    assert greet('b') is None\n" in text
    assert "    assert capsys.readouterr().out == 'hi\\n'\n" in text


def test_truncated_iterators_take_as_many_items_as_the_literal_lists() -> None:
    """``islice`` takes the literal's item count; commas inside items do not count."""
    truncated = _value("squares()", "[(0, 0), (1, 1)]", "list", kind="iterator", truncated=True)
    text = _render("squares", truncated)
    assert "import itertools\n" in text
    assert "    assert list(itertools.islice(squares(), 2)) == [(0, 0), (1, 1)]\n" in text
    whole = _render("evens", _value("evens(3)", "[0, 2]", "list", kind="iterator"))
    assert "    assert list(evens(3)) == [0, 2]\n" in whole
    assert "itertools" not in whole


def test_objects_without_a_literal_are_checked_by_type() -> None:
    """``isinstance`` with a class the test can name, else the type's name."""
    own = _render("make_point", _value("make_point(1, 2)", None, "pkg.mod.Point"))
    assert "    assert isinstance(make_point(1, 2), Point)\n" in own
    assert "from pkg.mod import Point, make_point\n" in own
    builtin = _render("f", _value("f()", None, "object"))
    assert "    assert isinstance(f(), object)\n" in builtin
    foreign = _render("f", _value("f()", None, "other.Thing"))
    assert "    assert type(f()).__name__ == 'Thing'\n" in foreign
    assert "from pkg.mod import f\n" in foreign


@pytest.mark.parametrize(
    ("files", "module", "expected"),
    [
        (
            ["pkg/tests/test_mod.py", "tests/test_a.py", "tests/test_b.py"],
            "pkg/mod.py",
            "pkg/tests/test_mod.py",
        ),
        (
            ["tests/unit/test_a.py", "tests/unit/test_b.py", "other/test_c.py"],
            "pkg/mod.py",
            "tests/unit/test_mod.py",
        ),
        ([], "pkg/mod.py", "tests/test_mod.py"),
        (
            ["tests/a_test.py", "tests/b_test.py", "tests/test_c.py"],
            "pkg/mod.py",
            "tests/mod_test.py",
        ),
        (["pkg/mod_test.py", "pkg/x_test.py"], "pkg/mod.py", "pkg/mod_test.py"),
        ([], "pkg/sub/__init__.py", "tests/test_sub.py"),
        ([], "__init__.py", "tests/test_package.py"),
        (["test_x.py"], "mod.py", "test_mod.py"),
    ],
)
def test_test_file_path(files: list[str], module: str, expected: str) -> None:
    """One test module per source module: beside the module's tests, else where most tests
    are, else ``tests/``; in the project's naming style."""
    assert testgen.test_file_path(files, module) == expected


def test_a_value_of_a_builtin_type_without_a_builtin_name_is_checked_by_type_name() -> None:
    """``function`` is reported as a builtins type but is no builtin name: no NameError."""
    behaviour = testgen.Behaviour(call="make()", names=frozenset(), type_name="function")
    text = testgen.render_tests("pkg.mod", "make", [behaviour], frozenset({"make"})).text
    assert "assert type(make()).__name__ == 'function'" in text
    listed = testgen.Behaviour(call="make()", names=frozenset(), type_name="dict")
    assert (
        "isinstance(make(), dict)"
        in testgen.render_tests("pkg.mod", "make", [listed], frozenset({"make"})).text
    )
