"""write_fixtures / fixtures_result: observed calls written as JSON or YAML fixture files.

The cases come from the module's doctests (the host's most trusted candidates) and are run
for real in the sandbox by ``observe_cases``.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from remora.errors import ToolError
from remora.operations.characterize.fixtures import (
    as_data,
    fixture,
    fixture_path,
    fixtures_result,
    write_fixtures,
)
from remora.operations.characterize.inputs import Observation, observe_cases
from remora.tools.capabilities import CapabilityContext
from remora.tools.capabilities.arguments import module_scope
from tests.stores import capability_context, write_tree

MODULE = '''"""Functions whose calls become fixtures."""


class Box:
    def __init__(self, value):
        self.value = value


def apply(func, value):
    """Call func.

    >>> apply(lambda x: x, 3)
    3
    """
    return func(value)


def swap(pair):
    """Swap.

    >>> swap((1, 2))
    (2, 1)
    >>> swap([1, 2])
    (2, 1)
    """
    return (pair[1], pair[0])


def boxed(value):
    """Box it.

    >>> boxed(1)
    """
    return Box(value)


def checked(n):
    """Double n.

    >>> checked(-1)
    >>> checked(2)
    4
    """
    if n < 0:
        raise ValueError("negative (n)")
    return n * 2


def scale(value, factor=2):
    """Scale.

    >>> scale(2, factor=3)
    6
    """
    print("scaling", value)
    return value * factor


def upto(n):
    """Count.

    >>> list(upto(3))
    [0, 1, 2]
    """
    yield from range(n)


def never(x):
    raise TypeError("never works")
'''

PATH = "pkg/mod.py"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "proj", {"pkg/__init__.py": "", PATH: MODULE})


@pytest.fixture
def ctx(root: Path) -> CapabilityContext:
    return capability_context(root)


def _written(ctx: CapabilityContext, qualname: str, fmt: str = "json") -> dict[str, Any]:
    """Observe ``qualname``, write its fixtures and load the file back."""
    observe_cases(ctx, PATH, qualname)
    report = write_fixtures(ctx, PATH, qualname, fmt)
    text = ctx.store.read(report["path"]).decode("utf-8")
    loaded = json.loads(text) if fmt == "json" else yaml.safe_load(text)
    assert isinstance(loaded, dict)
    return loaded


def test_json_file_lists_calls_with_their_results_and_exceptions(
    ctx: CapabilityContext, root: Path
) -> None:
    """The file sits under fixtures/<module>/, names the function, and pins each call's
    arguments and its return value or exception."""
    observe_cases(ctx, PATH, "checked")
    report = write_fixtures(ctx, PATH, "checked", "json")
    assert report["path"] == "fixtures/pkg/mod/checked.json"
    assert report["format"] == "json"
    data = json.loads(ctx.store.read(report["path"]))
    assert not (root / report["path"]).exists()  # written to the workspace, not the project
    assert data["function"] == "pkg.mod.checked"
    assert "$python" in data["note"]
    fixtures = data["fixtures"]
    assert fixtures[0] == {
        "args": [-1],
        "kwargs": {},
        "raises": {"type": "ValueError", "message": "negative (n)"},
    }
    assert fixtures[1] == {"args": [2], "kwargs": {}, "returns": 4}
    for entry in fixtures:
        assert ("returns" in entry) != ("raises" in entry)
        if "returns" in entry:
            assert entry["returns"] == entry["args"][0] * 2
    assert report["fixtures"] == len(fixtures)
    assert report["raising"] == 1 and report["results_omitted"] == 0
    assert len({json.dumps(entry["args"]) for entry in fixtures}) == len(fixtures)


@pytest.mark.parametrize("fmt", ["yaml", "yml", " .YML "])
def test_yaml_file_holds_the_same_data_as_json(ctx: CapabilityContext, fmt: str) -> None:
    """YAML (``yml`` and any case or dot accepted) loads with safe_load to the JSON data."""
    as_json = _written(ctx, "checked", "json")
    report = write_fixtures(ctx, PATH, "checked", fmt)
    assert report["path"] == "fixtures/pkg/mod/checked.yaml"
    assert report["format"] == "yaml"
    text = ctx.store.read(report["path"]).decode("utf-8")
    assert not text.lstrip().startswith("{")
    assert yaml.safe_load(text) == as_json


def test_callables_are_written_as_python_expressions(ctx: CapabilityContext) -> None:
    """A lambda or a builtin argument is ``{"$python": source}``; data stays data."""
    fixtures = _written(ctx, "apply")["fixtures"]
    assert fixtures[0] == {"args": [{"$python": "lambda x: x"}, 3], "kwargs": {}, "returns": 3}
    callables = [entry["args"][0] for entry in fixtures]
    assert all(set(value) == {"$python"} for value in callables)
    assert all(not isinstance(entry["args"][1], dict) for entry in fixtures)


def test_tuples_are_written_as_python_expressions(ctx: CapabilityContext) -> None:
    """A tuple argument or result would come back a list from JSON, so it is ``$python``."""
    fixtures = _written(ctx, "swap")["fixtures"]
    assert fixtures[0] == {
        "args": [{"$python": "(1, 2)"}],
        "kwargs": {},
        "returns": {"$python": "(2, 1)"},
    }
    assert fixtures[1] == {"args": [[1, 2]], "kwargs": {}, "returns": {"$python": "(2, 1)"}}


def test_argument_errors_are_left_out(ctx: CapabilityContext) -> None:
    """A call that raised TypeError (the arguments did not fit) is not a fixture."""
    observed = observe_cases(ctx, PATH, "swap")
    misuse = [p["call"] for p in observed["problems"] if p["verdict"] == "misuse"]
    assert misuse, observed
    fixtures = json.loads(ctx.store.read(write_fixtures(ctx, PATH, "swap")["path"]))["fixtures"]
    written = {f"swap({', '.join(map(repr, entry['args']))})" for entry in fixtures}
    assert not written & set(misuse)
    assert all(entry.get("raises", {}).get("type") != "TypeError" for entry in fixtures)


def test_results_without_an_expression_are_omitted_with_a_reason(
    ctx: CapabilityContext,
) -> None:
    """An object with no literal form gets ``returns_omitted`` instead of ``returns``."""
    observe_cases(ctx, PATH, "boxed")
    report = write_fixtures(ctx, PATH, "boxed")
    fixtures = json.loads(ctx.store.read(report["path"]))["fixtures"]
    assert fixtures[0]["args"] == [1]
    assert "returns" not in fixtures[0]
    assert "pkg.mod.Box" in fixtures[0]["returns_omitted"]
    assert report["results_omitted"] == len(fixtures) >= 1


def test_keyword_arguments_and_printed_output(ctx: CapabilityContext) -> None:
    """Keywords are a name-to-value mapping; what the call printed is kept as ``stdout``."""
    first = _written(ctx, "scale")["fixtures"][0]
    assert first == {"args": [2], "kwargs": {"factor": 3}, "returns": 6, "stdout": "scaling 2\n"}


def test_iterators_are_listed_and_marked(ctx: CapabilityContext) -> None:
    """A generator's items are the result, with ``returns_kind`` saying they were iterated."""
    entries = _written(ctx, "upto")["fixtures"]
    listed = [entry for entry in entries if entry["args"] == [3]]
    assert listed == [
        {"args": [3], "kwargs": {}, "returns": [0, 1, 2], "returns_kind": "iterator (items listed)"}
    ]


def test_unknown_format_is_tool_104(ctx: CapabilityContext) -> None:
    """Only json and yaml are written."""
    observe_cases(ctx, PATH, "checked")
    with pytest.raises(ToolError) as info:
        write_fixtures(ctx, PATH, "checked", "xml")
    assert info.value.code == "TOOL_104" and "'xml'" in info.value.message


def test_writing_before_observing_is_tool_705(ctx: CapabilityContext) -> None:
    """Nothing has been run yet, so there is nothing to write."""
    with pytest.raises(ToolError) as info:
        write_fixtures(ctx, PATH, "checked")
    assert info.value.code == "TOOL_705" and "checked" in info.value.message
    assert not ctx.store.exists(fixture_path(PATH, "checked", "json"))


def test_only_argument_errors_is_tool_705(ctx: CapabilityContext) -> None:
    """When every call was misuse there is no fixture, and the verdicts are named."""
    observe_cases(ctx, PATH, "never")
    with pytest.raises(ToolError) as info:
        write_fixtures(ctx, PATH, "never")
    assert info.value.code == "TOOL_705" and "misuse" in info.value.message


def test_drafts_are_per_workspace(root: Path) -> None:
    """Another workspace of the same project has observed nothing."""
    first = capability_context(root)
    observe_cases(first, PATH, "checked")
    write_fixtures(first, PATH, "checked")
    with pytest.raises(ToolError) as info:
        write_fixtures(capability_context(root), PATH, "checked")
    assert info.value.code == "TOOL_705"


def test_fixtures_result_observes_and_writes_when_nothing_was_written(
    ctx: CapabilityContext,
) -> None:
    """For submit, the missing steps are taken; a later call reports the same file."""
    result = fixtures_result(ctx, PATH, "checked", "yaml")
    assert result["ok"] is True
    assert result["path"] == "fixtures/pkg/mod/checked.yaml"
    loaded = yaml.safe_load(ctx.store.read(result["path"]))
    assert loaded["fixtures"][1] == {"args": [2], "kwargs": {}, "returns": 4}
    assert fixtures_result(ctx, PATH, "checked", "json") == result


def test_fixtures_result_rewrites_a_deleted_file(ctx: CapabilityContext) -> None:
    """A report whose file is gone is not offered; the file is written again."""
    result = fixtures_result(ctx, PATH, "checked")
    ctx.store.delete(result["path"])
    again = fixtures_result(ctx, PATH, "checked")
    assert again["ok"] is True and ctx.store.exists(again["path"])


def test_fixtures_result_reports_why_nothing_works(ctx: CapabilityContext) -> None:
    """No working call, an unknown function or format: ``ok`` False and a reason, no error."""
    failed = fixtures_result(ctx, PATH, "never")
    assert failed["ok"] is False and "without an argument error" in failed["reason"]
    assert not ctx.store.exists(fixture_path(PATH, "never", "json"))
    missing = fixtures_result(ctx, PATH, "nowhere")
    assert missing["ok"] is False and "nowhere" in missing["reason"]
    wrong = fixtures_result(ctx, PATH, "checked", "toml")
    assert wrong == {
        "ok": False,
        "reason": "'format' must be json or yaml, got 'toml'",
        "code": "TOOL_104",
    }


def test_fixture_path() -> None:
    """``fixtures/<module path without .py>/<qualname>.<kind>``."""
    assert fixture_path("pkg/mod.py", "f", "json") == "fixtures/pkg/mod/f.json"
    assert fixture_path("top.py", "C.m", "yaml") == "fixtures/top/C.m.yaml"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("{'a': [1, None, True, 2.5, 'x']}", {"a": [1, None, True, 2.5, "x"]}),
        ("-3", -3),
        ("(1, 2)", {"$python": "(1, 2)"}),
        ("{1, 2}", {"$python": "{1, 2}"}),
        ("{1: 'a'}", {"$python": "{1: 'a'}"}),
        ("[(1,)]", {"$python": "[(1,)]"}),
        ("b'x'", {"$python": "b'x'"}),
        ("1e400", {"$python": "1e309"}),  # inf: not valid JSON
        ("len", {"$python": "len"}),
        ("lambda  x :x", {"$python": "lambda x: x"}),
        ("Box(1)", {"$python": "Box(1)"}),
    ],
)
def test_as_data(source: str, expected: Any) -> None:
    """JSON's own values stay data; anything JSON would change or cannot hold is ``$python``."""
    assert as_data(ast.parse(source, mode="eval").body) == expected


def test_fixture_of_a_method_call_names_the_receiver() -> None:
    """An instance method's fixture says how the instance was built."""
    observation = Observation(
        case="2",
        receiver="Box(1)",
        source="model",
        verdict="kept",
        returned={"kind": "value", "type": "int", "literal": "3", "json": 3},
    )
    assert fixture(observation, module_scope(MODULE)) == {
        "receiver": {"$python": "Box(1)"},
        "args": [2],
        "kwargs": {},
        "returns": 3,
    }
    truncated = observation.model_copy(
        update={
            "receiver": None,
            "returned": {
                "kind": "iterator",
                "type": "list",
                "literal": "[(0, 1)]",
                "items_truncated": True,
            },
        }
    )
    assert fixture(truncated, module_scope(MODULE)) == {
        "args": [2],
        "kwargs": {},
        "returns": {"$python": "[(0, 1)]"},
        "returns_kind": "iterator (first items listed)",
    }
