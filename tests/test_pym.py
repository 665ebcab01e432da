"""The .pym format: declarations, checker codes, schema derivation, overrides and the cache."""

from __future__ import annotations

import os
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from remora.definitions import BUNDLED_AGENTS_DIR
from remora.pym import REQUIRED, Input, external
from remora.tools.capabilities import TOOLKIT, Capability, CapabilityContext
from remora.tools.pym import (
    SYSTEM_INPUTS,
    check_pym,
    check_script_file,
    load_pym,
    override_problems,
    parse_pym,
    validate_value,
)


def make_registry(*funcs: Callable[..., Any]) -> dict[str, Capability]:
    return {func.__name__: Capability.of(func) for func in funcs}


def read_text(ctx: CapabilityContext, path: str, limit: int = 100) -> str:
    """Read a file."""
    return ""


def tag(ctx: CapabilityContext, name: str, *, loud: bool = False) -> str:
    """Tag something."""
    return name


REGISTRY = make_registry(read_text, tag)


def script(source: str) -> str:
    return textwrap.dedent(source).lstrip("\n")


def codes(source: str) -> list[tuple[str, int]]:
    parsed = parse_pym(script(source), Path("tool.pym"))
    return [(problem.code, problem.line) for problem in check_pym(parsed, REGISTRY)]


GOOD = script(
    '''
    """Read a file and tag it."""
    from typing import Literal, Optional

    from remora.pym import Input, external

    path: str = Input("path", description="File to read.")
    mode: Literal["fast", "slow"] = Input("mode", default="fast")
    limit: Optional[int] = Input("limit", default=None)
    node_text: str = Input("node_text")
    options: dict = Input("options", default={})


    @external
    def read_text(path: str, limit: int = 100) -> str:
        """Read a file."""
        ...


    @external
    def tag(name: str, *, loud: bool = False) -> str:
        """Tag something."""


    content = read_text(path)
    {"outcome": "success", "summary": tag(mode), "result": content}
    '''
)


def test_good_script_parses_and_passes() -> None:
    parsed = parse_pym(GOOD, Path("good.pym"))
    assert check_pym(parsed, REGISTRY) == []
    assert parsed.doc == "Read a file and tag it."
    assert [decl.name for decl in parsed.model_inputs] == ["path", "mode", "limit"]
    assert [decl.name for decl in parsed.system_inputs] == ["node_text", "options"]
    assert [ext.name for ext in parsed.externals] == ["read_text", "tag"]
    assert parsed.externals[0].doc == "Read a file."


def test_body_keeps_line_numbers_and_drops_declarations() -> None:
    parsed = parse_pym(GOOD, Path("good.pym"))
    source_lines = GOOD.splitlines()
    body_lines = parsed.body.splitlines()
    assert len(body_lines) == len(source_lines)
    assert "Input(" not in parsed.body
    assert "@external" not in parsed.body
    assert "remora.pym" not in parsed.body
    assert "from typing import Literal, Optional" in parsed.body
    last = len(source_lines)
    assert body_lines[last - 1] == source_lines[last - 1]


BAD_SCRIPTS: list[tuple[str, str, str, int]] = [
    ("syntax", "x = (\n", "PYM001", 1),
    ("null byte", "x = 1\x00\n", "PYM001", 1),
    ("no annotation", 'from remora.pym import Input\nx = Input("x")\nx\n', "PYM002", 2),
    ("name mismatch", 'from remora.pym import Input\nx: str = Input("y")\nx\n', "PYM003", 2),
    (
        "non-literal name",
        'from remora.pym import Input\nn = "x"\nx: str = Input(n)\nx\n',
        "PYM004",
        3,
    ),
    (
        "unknown keyword",
        'from remora.pym import Input\nx: str = Input("x", doc="d")\nx\n',
        "PYM004",
        2,
    ),
    (
        "non-literal default",
        'from remora.pym import Input\nx: str = Input("x", default=str(1))\nx\n',
        "PYM004",
        2,
    ),
    ("Input in body", 'from remora.pym import Input\ny = 1\nInput("x")\n', "PYM004", 3),
    ("import os", "import os\nos.getcwd()\n", "PYM005", 1),
    ("from subprocess", "from subprocess import run\nrun\n", "PYM005", 1),
    ("import remora.pym", "import remora.pym\n1\n", "PYM005", 1),
    ("unknown declaration", "from remora.pym import Input, Output\n1\n", "PYM005", 1),
    ("relative import", "from . import x\nx\n", "PYM005", 1),
    (
        "unknown capability",
        'from remora.pym import external\n@external\ndef nuke(path: str) -> None:\n    """x"""\n'
        "    ...\nnuke('a')\n",
        "PYM006",
        2,
    ),
    (
        "stub parameter names",
        "from remora.pym import external\n@external\ndef read_text(file: str) -> str: ...\n"
        "read_text('a')\n",
        "PYM007",
        2,
    ),
    (
        "stub makes optional required",
        "from remora.pym import external\n@external\ndef read_text(path: str, limit: int) -> str:"
        " ...\nread_text('a', 1)\n",
        "PYM007",
        2,
    ),
    (
        "stub default differs",
        "from remora.pym import external\n@external\ndef read_text(path: str, limit: int = 5)"
        " -> str: ...\nread_text('a')\n",
        "PYM007",
        2,
    ),
    (
        "stub kind differs",
        "from remora.pym import external\n@external\ndef tag(name: str, loud: bool = False)"
        " -> str: ...\ntag('a')\n",
        "PYM007",
        2,
    ),
    (
        "stub with code",
        "from remora.pym import external\n@external\ndef tag(name: str, *, loud: bool = False)"
        " -> str:\n    return name\ntag('a')\n",
        "PYM008",
        3,
    ),
    ("tuple annotation", 'from remora.pym import Input\nx: tuple = Input("x")\nx\n', "PYM009", 2),
    (
        "union of types",
        "from typing import Union\nfrom remora.pym import Input\n"
        'x: Union[int, str] = Input("x")\nx\n',
        "PYM009",
        3,
    ),
    (
        "int keys",
        'from remora.pym import Input\nx: dict[int, str] = Input("x")\nx\n',
        "PYM009",
        2,
    ),
    ("set", 'from remora.pym import Input\nx: set[str] = Input("x")\nx\n', "PYM009", 2),
    (
        "declaration after body",
        'from remora.pym import Input\ny = 1\nx: str = Input("x")\nx\n',
        "PYM010",
        3,
    ),
    (
        "declaration sharing a line",
        'from remora.pym import Input\nx: str = Input("x"); y = 2\nx\n',
        "PYM010",
        2,
    ),
    ("no result", "x = 1\n", "PYM011", 1),
    ("only declarations", 'from remora.pym import Input\nx: str = Input("x")\n', "PYM011", 2),
    (
        "duplicate input",
        'from remora.pym import Input\nx: str = Input("x")\nx: int = Input("x")\nx\n',
        "PYM012",
        3,
    ),
    ("yield", "def g():\n    yield 1\n[1]\n", "PYM013", 2),
    ("del", "x = [1]\ndel x[0]\nx\n", "PYM013", 2),
    ("inheritance", "class A(dict):\n    pass\nA\n", "PYM013", 1),
    ("star import", "from json import *\n1\n", "PYM013", 1),
    ("eval", "eval('1')\n", "PYM014", 1),
    ("open", "open('/etc/passwd').read()\n", "PYM014", 1),
    ("getattr", "getattr('a', 'upper')\n", "PYM014", 1),
    ("dunder", "().__class__\n", "PYM014", 1),
    ("capability without stub", "read_text('a')\n", "PYM015", 1),
    (
        "system input type",
        'from remora.pym import Input\nnode_text: int = Input("node_text")\nnode_text\n',
        "PYM016",
        2,
    ),
    (
        "async external",
        "from remora.pym import external\n@external\nasync def tag(name: str) -> str: ...\n1\n",
        "PYM017",
        2,
    ),
    (
        "nested external",
        "from remora.pym import external\ndef f():\n    @external\n"
        "    def tag(name: str) -> str: ...\n1\n",
        "PYM017",
        3,
    ),
    (
        "default type",
        'from remora.pym import Input\nx: int = Input("x", default="three")\nx\n',
        "PYM018",
        2,
    ),
    (
        "literal default",
        "from typing import Literal\nfrom remora.pym import Input\n"
        'x: Literal["a", "b"] = Input("x", default="c")\nx\n',
        "PYM018",
        3,
    ),
]


@pytest.mark.parametrize(
    ("source", "code", "line"),
    [(source, code, line) for _, source, code, line in BAD_SCRIPTS],
    ids=[name for name, *_ in BAD_SCRIPTS],
)
def test_checker_reports_stable_code_and_line(source: str, code: str, line: int) -> None:
    found = codes(source)
    assert (code, line) in found, found


def test_diagnostics_render_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.pym"
    path.write_text('from remora.pym import Input\nx: str = Input("y")\nx\n', encoding="utf-8")
    _, problems = check_script_file(path, REGISTRY)
    assert [problem.render() for problem in problems] == [
        f"{path.resolve()}:2: PYM003 Input('y') is assigned to 'x'; the names must match: "
        "'x: ... = Input('x')'"
    ]


def test_unknown_capability_lists_known_ones() -> None:
    parsed = parse_pym(
        "from remora.pym import external\n@external\ndef nuke() -> None: ...\n1\n", "t.pym"
    )
    (problem,) = check_pym(parsed, REGISTRY)
    assert problem.code == "PYM006"
    assert "read_text, tag" in problem.message


def test_stub_mismatch_shows_the_real_signature() -> None:
    parsed = parse_pym(
        "from remora.pym import external\n@external\ndef read_text(file: str) -> str: ...\n1\n",
        "t.pym",
    )
    (problem,) = check_pym(parsed, REGISTRY)
    assert "read_text(path: str, limit: int = 100)" in problem.message


def test_stubs_are_checked_against_the_registry_given() -> None:
    parsed = parse_pym(
        "from remora.pym import external\n@external\n"
        "def read_file(path: str) -> str:\n    '''r'''\n    ...\nread_file('a')\n",
        "t.pym",
    )
    assert check_pym(parsed, TOOLKIT) == []
    assert [p.code for p in check_pym(parsed, REGISTRY)] == ["PYM006"]


@pytest.mark.parametrize(
    ("annotation", "schema"),
    [
        ("str", {"type": "string"}),
        ("int", {"type": "integer"}),
        ("float", {"type": "number"}),
        ("bool", {"type": "boolean"}),
        ("list", {"type": "array"}),
        ("list[str]", {"type": "array", "items": {"type": "string"}}),
        ("List[int]", {"type": "array", "items": {"type": "integer"}}),
        (
            "list[list[bool]]",
            {"type": "array", "items": {"type": "array", "items": {"type": "boolean"}}},
        ),
        ("dict", {"type": "object"}),
        ("dict[str, int]", {"type": "object", "additionalProperties": {"type": "integer"}}),
        (
            "Dict[str, list[str]]",
            {
                "type": "object",
                "additionalProperties": {"type": "array", "items": {"type": "string"}},
            },
        ),
        ("Optional[str]", {"type": ["string", "null"]}),
        ("typing.Optional[float]", {"type": ["number", "null"]}),
        ("int | None", {"type": ["integer", "null"]}),
        ("None | int", {"type": ["integer", "null"]}),
        ("Union[str, None]", {"type": ["string", "null"]}),
        ('Literal["a", "b"]', {"type": "string", "enum": ["a", "b"]}),
        ("Literal[1, 2, 3]", {"type": "integer", "enum": [1, 2, 3]}),
        ("Literal[True]", {"type": "boolean", "enum": [True]}),
        ('Literal["a", 1]', {"enum": ["a", 1]}),
        ('Optional[Literal["x", "y"]]', {"type": ["string", "null"], "enum": ["x", "y", None]}),
        ('"list[str]"', {"type": "array", "items": {"type": "string"}}),
    ],
)
def test_schema_derivation(annotation: str, schema: dict[str, Any]) -> None:
    source = (
        "import typing\nfrom typing import Dict, List, Literal, Optional, Union\n"
        f'from remora.pym import Input\nx: {annotation} = Input("x")\nx\n'
    )
    parsed = parse_pym(source, "t.pym")
    assert check_pym(parsed, REGISTRY) == []
    assert parsed.parameters_schema()["properties"]["x"] == schema


def test_parameters_schema_hides_system_inputs_and_marks_required() -> None:
    parsed = parse_pym(GOOD, "good.pym")
    schema = parsed.parameters_schema()
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    assert list(schema["properties"]) == ["path", "mode", "limit"]
    assert schema["required"] == ["path"]
    assert schema["properties"]["path"] == {"type": "string", "description": "File to read."}
    assert schema["properties"]["mode"]["default"] == "fast"
    assert schema["properties"]["limit"] == {"type": ["integer", "null"], "default": None}
    assert not set(schema["properties"]) & set(SYSTEM_INPUTS)


def test_overrides_merge_into_the_schema() -> None:
    parsed = parse_pym(GOOD, "good.pym")
    overrides: dict[str, dict[str, Any]] = {
        "path": {"description": "Relative path.", "maxLength": 80},
        "mode": {"enum": ["fast"]},
    }
    assert override_problems(parsed, overrides) == []
    schema = parsed.parameters_schema(overrides)
    assert schema["properties"]["path"] == {
        "type": "string",
        "description": "Relative path.",
        "maxLength": 80,
    }
    assert schema["properties"]["mode"]["enum"] == ["fast"]


def test_a_nested_override_keeps_the_declared_item_type() -> None:
    """``items: {maxLength: 120}`` must bound strings, not replace the items' schema (the
    grammar would then let any value through, unbounded)."""
    script = (
        '"""Take cases."""\n\nfrom remora.pym import Input\n\n'
        'cases: list[str] = Input("cases")\n{"outcome": "success", "summary": "ok"}\n'
    )
    parsed = parse_pym(script, "cases.pym")
    schema = parsed.parameters_schema({"cases": {"maxItems": 6, "items": {"maxLength": 120}}})
    assert schema["properties"]["cases"]["items"] == {"type": "string", "maxLength": 120}
    assert schema["properties"]["cases"]["maxItems"] == 6


@pytest.mark.parametrize(
    ("overrides", "fragment"),
    [
        ({"nope": {}}, "'nope' is not an input of the script"),
        ({"node_text": {"description": "x"}}, "'node_text' is a system input"),
        ({"path": {"type": "integer"}}, "cannot change the type"),
        ({"mode": {"enum": ["fast", "turbo"]}}, "must be one of"),
        ({"limit": {"default": "ten"}}, "'limit' default must be an integer or null"),
        ({"path": "just text"}, "must map to a partial JSON schema"),
    ],
)
def test_override_problems(overrides: dict[str, Any], fragment: str) -> None:
    parsed = parse_pym(GOOD, "good.pym")
    problems = override_problems(parsed, overrides)
    assert any(fragment in problem for problem in problems), problems


@pytest.mark.parametrize(
    ("schema", "value", "problem"),
    [
        ({"type": "string"}, "a", None),
        ({"type": "string"}, 1, "x must be a string, got integer"),
        ({"type": "number"}, 1, None),
        ({"type": "integer"}, True, "x must be an integer, got boolean"),
        ({"type": ["integer", "null"]}, None, None),
        (
            {"type": "array", "items": {"type": "string"}},
            ["a", 2],
            "x[1] must be a string, got integer",
        ),
        (
            {"type": "object", "additionalProperties": {"type": "integer"}},
            {"a": "b"},
            "x['a'] must be an integer, got string",
        ),
        ({"type": "string", "enum": ["a", "b"]}, "c", 'x must be one of "a", "b", got "c"'),
        ({"enum": [1]}, True, "x must be one of 1, got true"),
    ],
)
def test_validate_value(schema: dict[str, Any], value: Any, problem: str | None) -> None:
    assert validate_value(schema, value, "x") == problem


def test_cache_is_mtime_aware(tmp_path: Path) -> None:
    path = tmp_path / "tool.pym"
    path.write_text('from remora.pym import Input\na: str = Input("a")\na\n', encoding="utf-8")
    first = load_pym(path)
    assert load_pym(path) is first
    path.write_text('from remora.pym import Input\nbb: int = Input("bb")\nbb\n', encoding="utf-8")
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    second = load_pym(path)
    assert second is not first
    assert [decl.name for decl in second.inputs] == ["bb"]


def test_bundled_harness_scripts_pass_the_checker() -> None:
    scripts = sorted((BUNDLED_AGENTS_DIR / "harness").rglob("*.pym"))
    assert len(scripts) >= 3
    for path in scripts:
        _, problems = check_script_file(path, TOOLKIT)
        assert problems == [], path


def test_declaration_module_is_importable_and_inert() -> None:
    assert Input("x", default=3, description="d") == 3
    assert Input("x") is REQUIRED

    @external
    def read_file(path: str) -> str:  # type: ignore[empty-body]
        """Host capability."""
        ...

    assert read_file.__doc__ == "Host capability."
    with pytest.raises(RuntimeError, match="only inside Remora's tool sandbox"):
        read_file("a")


def test_a_lone_string_is_the_result_not_a_docstring() -> None:
    lone = parse_pym("'just this'\n", "t.pym")
    assert check_pym(lone, REGISTRY) == []
    assert lone.doc == ""
    assert lone.body == "'just this'\n"
    documented = parse_pym('"""Doc."""\n"value"\n', "t.pym")
    assert documented.doc == "Doc."
    assert documented.body == '\n"value"\n'
