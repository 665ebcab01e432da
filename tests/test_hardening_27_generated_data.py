"""Issue 27, breach 1: what Remora writes into tests and fixtures is data, rebuilt on the host.

Generated tests and fixtures run on the user's machine with no sandbox, so a model's argument
list, an expected value taken from a repr, an exception class name and anything the
observation child reports (project code runs there and can forge it) must never reach a
written file as code. Each payload below was written verbatim before.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest

from remora.operations.characterize.characterization import (
    run_characterization_tests,
    write_characterization_tests,
)
from remora.operations.characterize.fixtures import as_data, fixture, write_fixtures
from remora.operations.characterize.inputs import Observation, draft, observe_cases, propose_cases
from remora.tools.capabilities import CapabilityContext
from remora.tools.capabilities.arguments import (
    CaseError,
    check_value,
    exception_name,
    module_scope,
    parse_case,
)
from remora.tools.capabilities.candidates import candidate_inputs
from tests.stores import capability_context, write_tree

PATH = "pkg/mod.py"
TESTS = "tests/test_mod.py"
FIXTURES = "fixtures/pkg/mod/echo.json"

# The breach's module: it imports sys, pathlib and operator's getters, as real modules do.
MODULE = '''import sys
import pathlib
import operator
from operator import attrgetter, itemgetter
from dataclasses import dataclass


@dataclass
class Point:
    x: int
    y: int


class Token:
    """Equal to any Token; its repr is code that builds one (after running something)."""

    def __eq__(self, other):
        return isinstance(other, Token)

    __hash__ = object.__hash__

    def __repr__(self):
        return "pathlib.os.getcwd() and Token()"


def echo(value):
    return value


def token(value):
    return Token()


def fails(value):
    raise ValueError("always")
'''

CHAINS = [
    "sys.modules['os'].system('touch /tmp/remora-pwned')",
    "pathlib.os.system('id')",
    "operator.call(attrgetter('__globals__'), echo)",
    # The chain that needs no import: the module's function, then its globals' __import__.
    "operator.call(operator.call(operator.itemgetter('__builtins__'), operator.call("
    "operator.attrgetter('__globals__'), echo)).get('__import__'), 'os')",
    "operator.call(operator.call(operator.itemgetter('__import__'), operator.call("
    "operator.attrgetter('__builtins__'), operator.call(operator.attrgetter('__globals__'),"
    " echo))), 'os')",
]
SCOPE = module_scope(MODULE)


@pytest.fixture
def ctx(tmp_path: Path) -> CapabilityContext:
    root = write_tree(tmp_path / "proj", {"pkg/__init__.py": "", PATH: MODULE})
    return capability_context(root, {"workspace_id": str(tmp_path)})


def read(ctx: CapabilityContext, path: str) -> str:
    return ctx.store.read(path).decode("utf-8")


def kept(case: str, **seen: Any) -> Observation:
    """An observation as the child could report it: kept, with whatever it claims."""
    return Observation(case=case, source="model", verdict="kept", **seen)


@pytest.mark.parametrize("payload", CHAINS)
def test_code_execution_chains_are_refused_with_a_reason(payload: str) -> None:
    """Each chain of the attack (module attributes, subscripts of modules, the operator
    getters, dunder strings) is refused, however the module imports the names."""
    with pytest.raises(CaseError) as info:
        parse_case(payload, SCOPE)
    assert str(info.value)
    with pytest.raises(CaseError):
        parse_case(payload, module_scope("def echo(value):\n    return value\n"))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("sys", "imported by the module"),
        ("attrgetter", "imported by the module"),
        ("echo(1)", "only classes can be called"),
        ("lambda f: f(1)", "calls a parameter"),
        ("lambda x: x.real", "reads an attribute of a parameter"),
        ("'__globals__'", "dunder"),
        ("'a.__class__.b'", "dunder"),
        ("Point(1, y=2).x", "read from an expression"),
        ("Point.x.y", "'Point.x.y' is not allowed"),
        ("{'a': 1}['a'], sys.path[0]", "can be subscripted"),
        ("operator.attrgetter", "'operator.attrgetter' is not allowed"),
        ("operator.add(1, 2)", "can be passed but not called"),
        ("[0] * 10000 * 10000", "cannot be repeated again"),
        ("bytes(10 ** 9)", "plain numbers"),
        ("Point(__class__=1)", "special keyword"),
    ],
)
def test_what_is_not_data_is_refused(text: str, message: str) -> None:
    """Not data: the reason names what to change."""
    with pytest.raises(CaseError, match=message):
        parse_case(text, SCOPE)


def test_data_cases_are_kept_and_re_emitted() -> None:
    """Literals, arithmetic on them, the module's own classes, the standard constructors, a
    pure operator function and data-only lambdas are still accepted, normalized by the host."""
    case = parse_case(
        "-1, 'a', [1,2], {'k': (1, None)}, Point(1, 2), datetime.date(2024, 1, 2), 2**10,"
        "[0] * 3, [i * 2 for i in range(3)], operator.add, lambda x: x + 1, "
        "key=decimal.Decimal('1.5')",
        SCOPE,
    )
    assert case.text == (
        "-1, 'a', [1, 2], {'k': (1, None)}, Point(1, 2), datetime.date(2024, 1, 2), 2 ** 10, "
        "[0] * 3, [i * 2 for i in range(3)], operator.add, lambda x: x + 1, "
        "key=decimal.Decimal('1.5')"
    )


def test_a_rebound_class_or_import_is_not_trusted() -> None:
    """A name is resolved from every binding in the module: a class later rebound to
    ``os.system`` cannot be called, and ``datetime.date`` is refused where ``datetime`` is not
    the standard module (``date`` imported from it is fine)."""
    scope = module_scope(
        "import os\nfrom datetime import date\nclass Point:\n    pass\nPoint = os.system\n"
        "datetime = os\n"
    )
    with pytest.raises(CaseError):
        parse_case("Point('id')", scope)
    with pytest.raises(CaseError, match="something else in the module"):
        parse_case("datetime.date(2024, 1, 2)", scope)
    assert parse_case("date(2024, 1, 2)", scope).text == "date(2024, 1, 2)"


def test_values_reported_by_the_child_are_checked_like_cases() -> None:
    """An expected value from a repr is re-emitted when it is data and refused otherwise."""
    assert check_value("Point(x=1,  y=2)", SCOPE) == "Point(x=1, y=2)"
    assert check_value("datetime.date(2024, 1, 2)", SCOPE) == "datetime.date(2024, 1, 2)"
    for forged in ("pathlib.os.getcwd() and Token()", "__import__('os').system('id')"):
        with pytest.raises(CaseError):
            check_value(forged, SCOPE)


def test_exception_names_are_plain_names_resolved_on_the_host() -> None:
    """``pytest.raises`` gets a builtin exception or a name of the module, never code."""
    assert exception_name("ValueError", SCOPE) == "ValueError"
    assert exception_name("Point", SCOPE) == "Point"
    for forged in ("os.system('x') or ValueError", "builtins.ValueError", "__import__", "lambda"):
        with pytest.raises(CaseError):
            exception_name(forged, SCOPE)
    with pytest.raises(CaseError, match="neither a builtin exception"):
        exception_name("Nowhere", SCOPE)


def test_model_payloads_never_reach_the_written_tests_or_fixtures(ctx: CapabilityContext) -> None:
    """End to end: proposed chains are rejected with reasons; the files hold only data."""
    proposed = propose_cases(ctx, PATH, "echo", [*CHAINS, "3"])
    assert proposed["accepted"] == ["3"]
    assert len(proposed["rejected"]) == len(CHAINS)
    assert all(item["reason"] for item in proposed["rejected"])
    observe_cases(ctx, PATH, "echo")
    write_characterization_tests(ctx, PATH, "echo")
    write_fixtures(ctx, PATH, "echo")
    for text in (read(ctx, TESTS), read(ctx, FIXTURES)):
        assert "system" not in text and "__" not in text.replace('"""', "")
        assert "attrgetter" not in text and "pathlib" not in text


def test_forged_child_reports_are_not_written(ctx: CapabilityContext) -> None:
    """A literal, an exception class and a JSON result forged by project code in the child
    are re-checked: the expected value is left out (the type is checked instead), the test
    with the forged exception is dropped, and each reason is in the tool's result."""
    job = draft(ctx, PATH, "echo")
    job.observations = [
        kept(
            "1",
            returned={"kind": "value", "type": "int", "literal": "__import__('os').system('x')"},
        ),
        kept(
            "'a'",
            raised={"type": "ValueError", "message": "m", "assert_type": "os.system('x') or E"},
        ),
        kept(
            "[1]",
            returned={"kind": "value", "type": "dict", "json": {"$python": "os.system('x')"}},
        ),
    ]
    written = write_characterization_tests(ctx, PATH, "echo")
    text = read(ctx, TESTS)
    assert "system" not in text and "__import__" not in text
    assert "    assert isinstance(echo(1), int)\n" in text
    assert "echo('a')" not in text and "pytest.raises" not in text
    reasons = {note["case"]: note["reason"] for note in written["left_out"]}
    assert reasons["1"].startswith("the expected value was not written")
    assert reasons["'a'"].startswith("left out: ") and "exception" in reasons["'a'"]
    write_fixtures(ctx, PATH, "echo")
    entries = json.loads(read(ctx, FIXTURES))["fixtures"]
    assert "system('x')" not in json.dumps(entries[:2])
    assert entries[0]["returns_omitted"].startswith("the result is not written")
    # In a fixture the exception's type is a JSON string, never evaluated: the case stays.
    assert entries[1]["raises"] == {"type": "ValueError", "message": "m"}
    # A JSON result holding the marker key is data, written as an expression that builds it.
    rebuilt = ast.literal_eval(entries[2]["returns"]["$python"])
    assert rebuilt == {"$python": "os.system('x')"}


def test_a_repr_that_runs_code_is_not_the_expected_value(ctx: CapabilityContext) -> None:
    """End to end: a project repr that evaluates back to an equal object (so the child
    offered it as the literal) but calls something on the way is not written."""
    observe_cases(ctx, PATH, "token")
    job = draft(ctx, PATH, "token")
    literals = {(o.returned or {}).get("literal") for o in job.observations}
    assert "pathlib.os.getcwd() and Token()" in literals
    written = write_characterization_tests(ctx, PATH, "token")
    text = read(ctx, "tests/test_mod.py")
    assert "getcwd" not in text and "pathlib" not in text
    assert "assert isinstance(token(" in text and ", Token)\n" in text
    assert "not written" in written["left_out"][0]["reason"]


def test_dict_arguments_that_look_like_markers_are_expressions() -> None:
    """A dict argument with a ``$python`` key would be evaluated by whoever loads the
    fixture; it is written as the expression that builds the dict."""
    node = ast.parse("{'$python': \"os.system('x')\"}", mode="eval").body
    assert as_data(node) == {"$python": "{'$python': \"os.system('x')\"}"}
    observation = kept("{'$python': 'x'}", returned={"kind": "value", "type": "int", "json": 1})
    assert fixture(observation, SCOPE)["args"] == [{"$python": "{'$python': 'x'}"}]


def test_forged_receiver_is_not_written() -> None:
    """The receiver of an instance method is source too, re-checked like a case."""
    observation = kept("1", receiver="pathlib.os.system('id') or Point(1, 2)")
    with pytest.raises(CaseError):
        fixture(observation, SCOPE)


def test_call_sites_that_are_not_data_are_not_candidates() -> None:
    """A project file passing a module attribute or a dunder string gives no candidate."""
    project = {"tests/test_x.py": "import os\necho(os.environ)\necho('__init__')\necho(5)\n"}
    found = candidate_inputs(MODULE, "echo", project)
    texts = [c.case.text for c in found]
    assert "5" in texts
    assert not any("environ" in t or "__init__" in t for t in texts)


ORDINARY = """from dataclasses import dataclass


@dataclass
class Point:
    x: int
    y: int


def echo(value):
    return value
"""


def test_ordinary_cases_round_trip_into_passing_tests_and_fixtures(tmp_path: Path) -> None:
    """Ints, strings, lists, dicts, a project class and datetime.date are still written as
    exact expected values, and the written tests pass in the sandbox."""
    root = write_tree(tmp_path / "proj", {"pkg/__init__.py": "", PATH: ORDINARY})
    ctx = capability_context(root, {"workspace_id": str(tmp_path)})
    cases = ["7", "'text'", "[1, 2]", "{'a': [1]}", "Point(1, 2)", "datetime.date(2024, 1, 2)"]
    assert propose_cases(ctx, PATH, "echo", cases)["accepted"] == cases
    observe_cases(ctx, PATH, "echo")
    written = write_characterization_tests(ctx, PATH, "echo")
    assert "left_out" not in written
    text = read(ctx, TESTS)
    assert "import datetime\n" in text and "from pkg.mod import Point, echo\n" in text
    for line in (
        "assert echo(1) == 1",
        'assert echo("a") == "a"',
        "assert echo([1, 2]) == [1, 2]",
        'assert echo({"a": [1]}) == {"a": [1]}',
        "assert echo(Point(1, 2)) == Point(x=1, y=2)",
        "assert echo(datetime.date(2024, 1, 2)) == datetime.date(2024, 1, 2)",
    ):
        assert f"    {line}\n" in text
    report = run_characterization_tests(ctx, PATH, "echo")
    assert len(report["kept"]) == 6 and report["dropped"] == []
    write_fixtures(ctx, PATH, "echo")
    entries = json.loads(read(ctx, FIXTURES))["fixtures"]
    by_args = {json.dumps(e["args"]): e.get("returns") for e in entries}
    assert by_args['[{"$python": "Point(1, 2)"}]'] == {"$python": "Point(x=1, y=2)"}
    date = by_args['[{"$python": "datetime.date(2024, 1, 2)"}]']
    assert date == {"$python": "datetime.date(2024, 1, 2)"}
    assert (by_args["[7]"], by_args['["text"]'], by_args['[{"a": [1]}]']) == (7, "text", {"a": [1]})
